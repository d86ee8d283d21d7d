"""Prompts for, and clean-up of, the embedded CPU agent's language model.

The session prompt (situation, private role, and the opener line for the side that speaks first)
is the system prompt, followed by one fixed instruction on spoken style. The conversation so far is
replayed as chat turns: the partner's transcribed speech as ``user``, what the agent actually said
(cut where it stopped, if it yielded) as ``assistant``. A 135M model ignores length instructions
often, so replies are also trimmed here to whole sentences that a TTS voice can say.
"""

from __future__ import annotations

import re

STYLE = ("You are {name}, talking out loud in a live conversation with one other person. "
         "Say one or two short sentences at a time, the way people talk. "
         "No lists, no headings, no actions in brackets. "
         "Answer what they said in your own words; never repeat their words.")
OPENING_CUE = "(The conversation starts now. Say your opening line.)"
IDLE_CUE = "(The other person is silent. Say your next line.)"
FALLBACKS = ("I see.", "Okay.", "Go on.", "Right, and then?")

_BRACKETED = re.compile(r"\([^)]*\)|\[[^\]]*\]|\{[^}]*\}|\*[^*]*\*|<[^>]*>")
_SPEAKER_TAG = re.compile(r"^\s*[A-Z][\w .'-]{0,30}:\s+")
_UNSAYABLE = re.compile(r"[^A-Za-z0-9 .,!?'$%&-]")
_SENTENCE = re.compile(r"[^.!?]+[.!?]+|[^.!?]+$")


def system_prompt(session_prompt: str, speaker_name: str) -> str:
    return f"{session_prompt.strip()}\n\n{STYLE.format(name=speaker_name or 'yourself')}"


def build_messages(system: str, history: list[tuple[str, str]], limit: int, cue: str | None = None) -> list[dict[str, str]]:
    """Chat messages from ``history`` ((``partner`` | ``self``, text) in order), newest ``limit`` kept.

    Consecutive turns of one speaker are merged; a trailing cue (opening, idle) is a user turn.
    """
    turns: list[dict[str, str]] = []
    for who, text in history:
        role = "user" if who == "partner" else "assistant"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += " " + text
        else:
            turns.append({"role": role, "content": text})
    if cue is not None:
        if turns and turns[-1]["role"] == "user":
            turns[-1]["content"] += " " + cue
        else:
            turns.append({"role": "user", "content": cue})
    turns = turns[-limit:]
    if turns and turns[0]["role"] == "assistant":  # a chat starts with the other person's turn
        turns.insert(0, {"role": "user", "content": "(...)"})
    return [{"role": "system", "content": system}, *turns]


def _sayable(unbracketed: str) -> str:
    """Text without bracketed parts (already removed), speaker tags, line breaks or symbols."""
    lines = [_SPEAKER_TAG.sub("", line) for line in unbracketed.splitlines()]
    text = " ".join(line.strip() for line in lines if line.strip())
    text = _UNSAYABLE.sub(" ", text.replace("\u2019", "'"))
    return " ".join(text.split())


def clean_reply(raw: str, max_sentences: int, max_words: int = 25) -> str:
    """The sayable part of a completion: no brackets, tags or symbols; whole sentences only."""
    text = _sayable(_BRACKETED.sub(" ", raw))
    sentences = [s.strip() for s in _SENTENCE.findall(text) if re.search(r"[A-Za-z0-9]", s)]
    complete = [s for s in sentences if s[-1] in ".!?"]
    kept = (complete or sentences)[:max_sentences]
    words = " ".join(kept).split()[:max_words]
    if not words:
        return ""
    out = " ".join(words)
    return out if out[-1] in ".!?" else out.rstrip(",;:-") + "."


_OPENERS = re.compile(r"[(\[{*<]")
_OPEN_TAG = re.compile(r"\s*[A-Z][\w .'-]{0,30}:?")


def reply_settled(raw: str, max_sentences: int, max_words: int = 25) -> bool:
    """Whether no continuation of ``raw`` can change ``clean_reply(raw, ...)``, so the model may stop.

    True once the kept part is closed off: no bracket left open (a later close would cut back into
    it), the last line cannot still become a speaker tag, and either ``max_sentences`` complete
    sentences are followed by more text (a later "." would extend the last one's punctuation) or the
    first sentence alone has more than ``max_words`` words (the word cap cuts inside it).
    """
    text = _BRACKETED.sub(" ", raw)
    if _OPENERS.search(text):
        return False
    if not text.endswith(("\n", "\r")):
        last = text.splitlines()[-1] if text else ""
        if _OPEN_TAG.fullmatch(last):
            return False
    text = _sayable(text)
    found = [m for m in _SENTENCE.finditer(text) if re.search(r"[A-Za-z0-9]", m.group())]
    if found and len(found[0].group().split()) > max_words:
        return True
    complete = [m for m in found if m.group()[-1] in ".!?"]
    return len(complete) >= max_sentences and complete[max_sentences - 1].end() < len(text)


def word_count(text: str) -> int:
    return len(text.split())
