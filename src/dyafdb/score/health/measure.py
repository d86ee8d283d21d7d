"""Every audio-health value of both sides of one recording (the package docstring has the definitions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from dyafdb.clock import FRAME_SECONDS
from dyafdb.polyphase import resample
from dyafdb.record.recording import Recording
from dyafdb.schema_check import schema_default
from dyafdb.score.health import MEASURES
from dyafdb.score.health.agreement import agreement, speech_only
from dyafdb.score.health.dnsmos import dnsmos
from dyafdb.score.health.echo import echo
from dyafdb.score.health.response import longest_silence_s, no_response
from dyafdb.score.vad import Interval, to_mask

SIDES = ("a", "b")


def _default(key: str) -> Any:
    return schema_default("config-health", key)


@dataclass(frozen=True)
class HealthParams:
    dnsmos_min_speech_s: float = _default("dnsmos_min_speech_s")
    asr: bool = _default("asr")
    asr_threads: int = _default("asr_threads")
    mismatch_share: float = _default("mismatch_share")
    echo_lag_ticks: int = _default("echo_lag_ticks")
    echo_min_rms: float = _default("echo_min_rms")
    echo_threshold: float = _default("echo_threshold")
    min_word_chars: int = schema_default("config-garble", "min_word_chars")  # the garble watcher's: the same share

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "HealthParams":
        section = dict(config.get("health") or {})
        garble = dict(config.get("garble") or {})
        values = {k: v for k, v in section.items() if k in cls.__dataclass_fields__}
        if "min_word_chars" in garble:
            values["min_word_chars"] = int(garble["min_word_chars"])
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _quality(channel: np.ndarray, segments: Sequence[Interval], params: HealthParams) -> dict[str, Any]:
    speech = speech_only(channel, segments)
    seconds = sum(e - s for s, e in segments) * FRAME_SECONDS
    if seconds < params.dnsmos_min_speech_s or len(speech) == 0:
        return {"values": {"dnsmos_sig": None, "dnsmos_bak": None, "dnsmos_ovrl": None}, "detail": {"windows": 0}}
    scores = dnsmos(resample(speech, 2, 3))  # 24 kHz -> the model's 16 kHz
    return {"values": {f"dnsmos_{k}": round(scores[k], 4) for k in ("sig", "bak", "ovrl")},
            "detail": {"windows": scores["windows"], "speech_s": round(seconds, 2)}}


def measure_health(rec: Recording, segments: Mapping[str, Sequence[Interval]],
                   turn_ends: Mapping[str, Sequence[Interval]], params: HealthParams,
                   config: Mapping[str, Any], transcriber: Any = None) -> dict[str, Any]:
    """``{"values": {side: {measure: value}}, "detail": {side: {...}}}`` for both sides.

    ``turn_ends`` are the partner turn ends TOR_end found for each side (its measures' events)."""
    ticks = rec.ticks
    agreed = None
    if params.asr:
        agreed = agreement(rec, segments, config, params.min_word_chars, params.mismatch_share,
                           params.asr_threads, transcriber)
    values: dict[str, dict[str, Any]] = {}
    detail: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        partner = "b" if side == "a" else "a"
        quality = _quality(rec.channel(side), segments[side], params)
        echoed = echo(rec.channel(side), rec.channel(partner), params.echo_lag_ticks, params.echo_min_rms)
        mask = to_mask(segments[side], ticks)
        answered = no_response(turn_ends[side], mask)
        text = agreed[side] if agreed else {"values": dict.fromkeys(("text_share", "text_wer", "text_mismatch",
                                                                     "text_words")), "detail": None}
        echo_value = None if echoed["echo"] is None else round(echoed["echo"], 4)
        raw = {
            **quality["values"], **text["values"],
            "echo": echo_value, "echo_n": echoed["echo_n"],
            "echo_flag": None if echo_value is None else int(echo_value >= params.echo_threshold),
            "no_response": answered["no_response"], "longest_silence_s": longest_silence_s(mask),
        }
        values[side] = {k: raw[k] for k in MEASURES}
        detail[side] = {"dnsmos": quality["detail"], "transcript": text["detail"],
                        "unanswered_turn_ends": [list(x) for x in answered["unanswered"]]}
    return {"params": params.to_json(), "values": values, "detail": detail}
