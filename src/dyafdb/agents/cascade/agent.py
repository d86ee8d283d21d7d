"""The embedded CPU agent: a cascaded full-duplex talker built from models that ship on PyPI.

Every 80 ms tick it hears one frame of the partner and emits one frame of its own:

  listen   energy VAD on what it hears; the partner's speech is buffered from its onset
  decide   end of the partner's turn = ``end_of_turn_silence_s`` of silence; or a short pause in a
           long partner turn (backchannel), or a long partner turn (barge-in), or long mutual
           silence (speak up); see :mod:`dyafdb.agents.cascade.policy`
  think    Whisper tiny.en transcribes the buffered speech; SmolLM2 replies from the session prompt
           and the conversation so far; Piper speaks the reply (24 kHz)
  speak    the reply plays out frame by frame after a *logical* latency of ``latency_s +
           latency_per_word_s * (words heard + words replied)``; each word is emitted as a text
           token on the tick its audio starts; talked over for ``yield_after_s``, it yields or holds

The models run synchronously inside ``step`` when a decision needs them, but their output is only
released on the tick the latency model says, so a recording depends on the seed and the inputs,
not on the machine's speed. The random choices of the policy draw from a generator seeded with
``session.seed``; the LLM gets a seed derived from it per request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.agents.cascade.listen import NEVER, Listener
from dyafdb.agents.cascade.models import VOICE_NAME, Speech, get_models, package_versions
from dyafdb.agents.cascade.policy import Policy, parse_policy
from dyafdb.agents.cascade.text import (FALLBACKS, IDLE_CUE, OPENING_CUE, build_messages, clean_reply, reply_settled,
                                        system_prompt, word_count)
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.agents.registry import adapter

SPOKEN_KINDS = ("opening", "reply", "barge_in", "idle")  # utterances that enter the conversation history
# Partner silence that ends an episode of being talked over: longer than the pauses at commas, so
# an interruption that breathes still counts as one.
OVERLAP_GAP_TICKS = 5
# "The partner is speaking" when a reply falls due: voiced within the last 0.24 s, so a due tick that
# lands in a gap between two words still counts as talking.
SPEAKING_TICKS = 3


@dataclass
class Utterance:
    speech: Speech
    kind: str  # one of SPOKEN_KINDS, or "backchannel"
    text: str
    start_tick: int
    pos: int = 0  # samples already played
    words_emitted: int = 0

    @property
    def said(self) -> str:
        return " ".join(w.text for w in self.speech.words[: self.words_emitted])


@adapter("cascade")
class CascadeAgent:
    """ASR -> LLM -> TTS on the lockstep clock, with a full-duplex turn-taking policy."""

    def __init__(self, params: dict[str, Any], model_name: str = "cascade"):
        self.model_name = model_name
        self.policy: Policy = parse_policy(params, model_name)
        self.models = get_models(self.policy.threads)
        self.llm_slot = self.models.claim_slot()
        p = self.policy
        self._ticks = {name: Policy.ticks(getattr(p, name)) for name in (
            "min_turn_s", "end_of_turn_silence_s", "yield_after_s", "overlap_backchannel_s",
            "backchannel_after_s", "backchannel_gap_s", "backchannel_pause_s", "idle_s")}
        self._barge_ticks = None if p.barge_in_after_s is None else Policy.ticks(p.barge_in_after_s)
        self.session: Session | None = None
        self.stats: dict[str, Any] = {}
        self._backchannel_speech = [self._speak(b, p.backchannel_length_scale) for b in p.backchannels]  # once, reused

    # -- protocol --------------------------------------------------------------------------
    def open(self, session: Session) -> AgentInfo:
        p = self.policy
        self.session = session
        self.rng = np.random.default_rng(session.seed)
        self.requests = 0
        self.tick = 0
        self.system = system_prompt(session.prompt, session.speaker_name)
        self.history: list[tuple[str, str]] = []
        self.listener = Listener(p.vad_start_rms, p.vad_end_rms)
        self.playing: Utterance | None = None
        self.due: Utterance | None = None
        self.pending_over_us = False  # the partner's buffered speech began while we were speaking
        self.barge_considered = False
        self.overlap = 0
        self.overlap_decided = False
        self.last_spoke_end = 0
        self.last_backchannel = -NEVER
        self.stats = {"replies": 0, "openings": 0, "barge_ins": 0, "idle": 0, "backchannels": 0, "yields": 0,
                      "holds": 0, "dropped": 0, "ignored_backchannels": 0, "empty_asr": 0, "model_wall_s": 0.0,
                      "transcripts": []}
        if session.is_opener:
            text = self._generate(OPENING_CUE)
            self.stats["openings"] += 1
            self.due = self._utterance(text, "opening", heard_words=0)
        return AgentInfo(
            adapter="cascade", adapter_version=__version__, model=self.model_name,
            voice=f"{VOICE_NAME} (piper, noise 0, length_scale {p.length_scale})",
            sampling={"temperature": p.temperature, "top_p": p.top_p, "top_k": p.top_k,
                      "repeat_penalty": p.repeat_penalty, "max_tokens": p.max_tokens, "seed": session.seed},
            extra={"policy": p.to_json(), "packages": package_versions(), "asr": "whisper tiny.en int8 greedy",
                   "llm": "SmolLM2-135M-Instruct Q4_1", "timing": "logical (latency model), not wall time"},
        )

    def step(self, heard: np.ndarray) -> Frame:
        t = self.tick
        voiced = self.listener.hear(heard, t)
        if self.listener.pending_onset_tick == t and voiced:
            self.pending_over_us = self.playing is not None and self.playing.kind != "backchannel"
        if self.playing is not None:
            self._while_speaking(voiced)
        if self.playing is None:
            self._while_quiet(t)
        frame = self._play()
        self.tick += 1
        return frame

    def close(self) -> None:
        self.playing = self.due = None
        self.history = []

    def shutdown(self) -> None:
        """The pool is done with this agent: its LLM slot goes back to the shared models."""
        self.models.release_slot(self.llm_slot)
        self.llm_slot = None

    # -- speaking --------------------------------------------------------------------------
    def _while_speaking(self, voiced: bool) -> None:
        assert self.playing is not None
        if self.playing.kind == "backchannel":
            return
        if voiced:
            self.overlap += 1
        elif self.listener.silence_run >= OVERLAP_GAP_TICKS:
            self.overlap, self.overlap_decided = 0, False
        if self.overlap >= self._ticks["yield_after_s"] and not self.overlap_decided:
            self.overlap_decided = True
            if self.rng.random() < self.policy.yield_probability:
                self.stats["yields"] += 1
                self._finish_utterance(cut=True)
            else:
                self.stats["holds"] += 1

    def _finish_utterance(self, cut: bool) -> None:
        utt = self.playing
        assert utt is not None
        if utt.kind in SPOKEN_KINDS:
            said = utt.said if cut else utt.text
            if said:
                self.history.append(("self", said + ("..." if cut else "")))
        self.playing = None
        self.last_spoke_end = self.tick
        self.overlap, self.overlap_decided = 0, False

    def _play(self) -> Frame:
        utt = self.playing
        if utt is None:
            return Frame(np.zeros(FRAME_SAMPLES, dtype=np.float32))
        audio = utt.speech.audio
        lo, hi = utt.pos, utt.pos + FRAME_SAMPLES
        out = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        chunk = audio[lo:hi]
        out[: chunk.size] = chunk
        words = []
        while utt.words_emitted < len(utt.speech.words) and utt.speech.words[utt.words_emitted].start < hi:
            words.append(utt.speech.words[utt.words_emitted].text)
            utt.words_emitted += 1
        utt.pos = hi
        if hi >= audio.size:
            utt.words_emitted = len(utt.speech.words)
            self._finish_utterance(cut=False)
        return Frame(out, words)

    # -- listening and deciding ------------------------------------------------------------
    def _while_quiet(self, t: int) -> None:
        lis, k = self.listener, self._ticks
        if self.due is not None:
            self._start_if_due(t)
            return
        if lis.has_pending:
            ended = lis.silence_run >= k["end_of_turn_silence_s"]
            if ended and self.pending_over_us and lis.pending_voiced < k["overlap_backchannel_s"]:
                self.stats["ignored_backchannels"] += 1  # a short "mm-hm" over our speech is not a turn
                self._drop_pending()
            elif ended and lis.pending_voiced < k["min_turn_s"]:
                self._drop_pending()
            elif ended:
                self._respond(t, "reply")
            elif (self._barge_ticks is not None and not self.barge_considered and lis.voiced
                  and lis.pending_voiced >= self._barge_ticks):
                self.barge_considered = True  # decided once per stretch of partner speech
                if self.rng.random() < self.policy.barge_in_probability:
                    self._respond(t, "barge_in")
            elif (lis.silence_run == k["backchannel_pause_s"] and lis.pending_voiced >= k["backchannel_after_s"]
                  and t - self.last_backchannel >= k["backchannel_gap_s"]):
                if self.rng.random() < self.policy.backchannel_probability:
                    speech = self._backchannel_speech[int(self.rng.integers(len(self._backchannel_speech)))]
                    self.playing = Utterance(speech, "backchannel", " ".join(w.text for w in speech.words), t)
                    self.last_backchannel = t
                    self.stats["backchannels"] += 1
            return
        partner_last = t - lis.silence_run if lis.ever_heard else 0
        if t - max(partner_last, self.last_spoke_end) >= k["idle_s"]:
            self._respond(t, "idle")

    def _drop_pending(self) -> None:
        self.listener.drop()
        self.pending_over_us = self.barge_considered = False

    def _start_if_due(self, t: int) -> None:
        due = self.due
        assert due is not None
        if t < due.start_tick:
            return
        self.due = None
        if self.listener.silence_run < SPEAKING_TICKS and not self.policy.start_over_partner and due.kind != "barge_in":
            self.stats["dropped"] += 1  # the partner took the floor back while we were thinking
            return
        due.start_tick = t
        self.playing = due

    def _respond(self, t: int, kind: str) -> None:
        heard = ""
        if kind in ("reply", "barge_in"):
            audio = self.listener.take()
            self.pending_over_us = self.barge_considered = False
            heard = self._timed(self.models.transcribe, audio)
            self.stats["transcripts"].append([t, heard])
            if not heard:
                self.stats["empty_asr"] += 1
                return
            self.history.append(("partner", heard))
        text = self._generate(IDLE_CUE if kind == "idle" else None)
        self.stats[{"reply": "replies", "barge_in": "barge_ins", "idle": "idle"}[kind]] += 1
        self.due = self._utterance(text, kind, heard_words=word_count(heard))
        self._start_if_due(t)

    # -- models ----------------------------------------------------------------------------
    def _utterance(self, text: str, kind: str, heard_words: int) -> Utterance:
        p = self.policy
        latency = Policy.ticks(p.latency_s + p.latency_per_word_s * (heard_words + word_count(text)))
        return Utterance(self._speak(text), kind, text, self.tick + latency)

    def _speak(self, text: str, length_scale: float | None = None) -> Speech:
        p = self.policy
        rate = p.length_scale if length_scale is None else length_scale
        return self._timed(self.models.speak, text, rate, p.volume, p.sentence_gap_s)

    def _generate(self, cue: str | None) -> str:
        p = self.policy
        assert self.session is not None
        messages = build_messages(self.system, self.history, p.history_messages, cue)
        self.requests += 1
        seed = (self.session.seed * 1_000_003 + self.requests) & 0x7FFFFFFF
        raw = self._timed(self.models.chat, messages, seed, p.max_tokens, p.temperature, p.top_p, p.top_k,
                          p.repeat_penalty, self.llm_slot, self.requests > 1, self._settled)
        text = clean_reply(raw, p.max_sentences, p.max_words)
        return text or FALLBACKS[int(self.rng.integers(len(FALLBACKS)))]

    def _settled(self, raw: str) -> bool:
        return reply_settled(raw, self.policy.max_sentences, self.policy.max_words)

    def _timed(self, fn: Any, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            if self.stats:
                self.stats["model_wall_s"] += time.perf_counter() - start
