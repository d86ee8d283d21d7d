"""Turn-taking policy of the embedded CPU agent: named variants and their parameters.

A model's ``params`` pick a ``variant`` (a preset below) and may override any single parameter.
Times are seconds on the conversation clock; they are turned into 80 ms ticks once, here, so the
agent's decisions depend on the logical clock only, never on wall time.

The presets differ where the paper's turn-taking measures look (Appendix C):
  eager   answers after a short silence, and quickly enough to start inside the partner's 0.8 s pause
          between two sentences (so it cuts into mid-turn pauses: TOR_pause),
          starts speaking even if the partner has resumed, holds the floor when talked over, barges
          into long partner turns, and rarely backchannels;
  polite  waits for 1 s of silence, the paper's turn end (so it takes turn ends, not pauses), drops
          its reply if the partner resumes first, yields when talked over, never barges in, and
          backchannels often.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from dyafdb.clock import FRAME_SECONDS
from dyafdb.errors import InputError


@dataclass(frozen=True)
class Policy:
    variant: str
    # listening
    vad_start_rms: float
    vad_end_rms: float
    min_turn_s: float  # partner speech shorter than this is noise, not something to answer
    end_of_turn_silence_s: float  # silence after partner speech that counts as "your turn"
    # thinking: logical processing latency = latency_s + latency_per_word_s * (words heard + words said)
    latency_s: float
    latency_per_word_s: float
    # speaking
    length_scale: float  # Piper speaking rate (<1 faster)
    volume: float
    sentence_gap_s: float
    start_over_partner: bool  # when a reply is due and the partner is speaking: start anyway, or drop it and listen
    # being talked over
    yield_after_s: float  # overlap the agent tolerates before deciding to yield or hold
    yield_probability: float
    overlap_backchannel_s: float  # partner speech that starts over ours and is shorter than this is a backchannel
    # backchannels during the partner's long turns
    backchannel_probability: float  # per opportunity (a short pause in a long partner turn)
    backchannel_after_s: float  # partner speech needed before the first backchannel
    backchannel_gap_s: float  # least time between two backchannels
    backchannel_pause_s: float  # length of partner pause that opens an opportunity
    backchannels: tuple[str, ...]
    backchannel_length_scale: float  # backchannels are said quickly, so they stay shorter than yield_after_s
    # barging into a long partner turn (None: never)
    barge_in_after_s: float | None
    barge_in_probability: float
    # mutual silence: speak up after this long
    idle_s: float
    # language model
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    repeat_penalty: float
    max_sentences: int
    max_words: int
    history_messages: int
    threads: int

    @staticmethod
    def ticks(seconds: float) -> int:
        return max(int(math.ceil(round(seconds / FRAME_SECONDS, 9))), 0)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["backchannels"] = list(self.backchannels)
        return out


_COMMON: dict[str, Any] = {
    "vad_start_rms": 0.010, "vad_end_rms": 0.004, "min_turn_s": 0.24,
    "volume": 0.8, "sentence_gap_s": 0.8,
    "yield_after_s": 0.64, "overlap_backchannel_s": 1.0,
    "backchannel_after_s": 1.6, "backchannel_gap_s": 2.4, "backchannel_pause_s": 0.16,
    # Spelled as Piper voices them: it reads "Mhm." as the letters M-H-M and "Uh-huh." as "uh" (the
    # audio-health speech-text WER found it; tests/agents/test_cascade_agent.py checks each one).
    "backchannels": ("Uh huh.", "Right.", "Yeah."), "backchannel_length_scale": 0.8,
    "barge_in_probability": 1.0,
    "max_tokens": 40, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "repeat_penalty": 1.2,
    "max_sentences": 2, "max_words": 25, "history_messages": 16, "threads": 1,
}

PRESETS: dict[str, dict[str, Any]] = {
    "eager": {**_COMMON, "end_of_turn_silence_s": 0.32, "latency_s": 0.12, "latency_per_word_s": 0.005,
              "length_scale": 0.95, "start_over_partner": True, "yield_probability": 0.0,
              "backchannel_probability": 0.1, "barge_in_after_s": 4.0, "idle_s": 2.8},
    "polite": {**_COMMON, "end_of_turn_silence_s": 1.0, "latency_s": 0.4, "latency_per_word_s": 0.01,
               "length_scale": 1.05, "start_over_partner": False, "yield_probability": 1.0,
               "backchannel_probability": 0.6, "barge_in_after_s": None, "idle_s": 4.0},
}
DEFAULT_VARIANT = "polite"

_NON_NEGATIVE = {"min_turn_s", "end_of_turn_silence_s", "latency_s", "latency_per_word_s", "sentence_gap_s",
                 "yield_after_s", "overlap_backchannel_s", "backchannel_after_s", "backchannel_gap_s",
                 "backchannel_pause_s", "idle_s", "temperature"}
_PROBABILITIES = {"yield_probability", "backchannel_probability", "barge_in_probability", "top_p"}
_POSITIVE_INT = {"max_tokens", "top_k", "max_sentences", "max_words", "history_messages", "threads"}


def parse_policy(params: dict[str, Any], model_name: str) -> Policy:
    """The policy a model's params describe; a bad key or value names the model, the key and the fix."""
    where = f"models.{model_name}.params"
    variant = params.get("variant", DEFAULT_VARIANT)
    if variant not in PRESETS:
        raise InputError(f"{where}.variant = {variant!r}; known variants: {', '.join(sorted(PRESETS))}")
    known = {f.name for f in fields(Policy)} - {"variant"}
    unknown = sorted(set(params) - known - {"variant"})
    if unknown:
        raise InputError(f"{where}: unknown cascade parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    values = {**PRESETS[variant], **params, "variant": variant}
    for key in _NON_NEGATIVE | {"vad_start_rms", "vad_end_rms", "length_scale", "backchannel_length_scale", "volume",
                                "repeat_penalty"}:
        if not isinstance(values[key], (int, float)) or isinstance(values[key], bool) or values[key] < 0:
            raise InputError(f"{where}.{key} = {values[key]!r}; expected a non-negative number")
    for key in _PROBABILITIES:
        if not 0.0 <= float(values[key]) <= 1.0:
            raise InputError(f"{where}.{key} = {values[key]!r}; expected a probability between 0 and 1")
    for key in _POSITIVE_INT:
        if not isinstance(values[key], int) or isinstance(values[key], bool) or values[key] < 1:
            raise InputError(f"{where}.{key} = {values[key]!r}; expected a positive integer")
    if values["barge_in_after_s"] is not None and (not isinstance(values["barge_in_after_s"], (int, float)) or values["barge_in_after_s"] <= 0):
        raise InputError(f"{where}.barge_in_after_s = {values['barge_in_after_s']!r}; expected seconds > 0, or null for never")
    if not isinstance(values["start_over_partner"], bool):
        raise InputError(f"{where}.start_over_partner = {values['start_over_partner']!r}; expected true or false")
    if values["vad_end_rms"] > values["vad_start_rms"]:
        raise InputError(f"{where}: vad_end_rms ({values['vad_end_rms']}) must not exceed vad_start_rms ({values['vad_start_rms']})")
    bcs = values["backchannels"]
    if isinstance(bcs, str) or not bcs or not all(isinstance(b, str) and b.strip() for b in bcs):
        raise InputError(f"{where}.backchannels = {bcs!r}; expected a non-empty list of short phrases, e.g. [Uh huh., Right.]")
    values["backchannels"] = tuple(bcs)
    return Policy(**{k: values[k] for k in (f.name for f in fields(Policy))})
