"""What a page shows, as plain data: the player (timeline, transcript, audio) and the index row.

Two views of one conversation: ``full`` (models, sides, measures, judges) and ``blind`` (only
what a rater may see: Speaker A and B, the situation and the role prompts, audio, segments and the
transcript). The blind view is built from a whitelist, never by deleting fields from the full one.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dyafdb.clock import FRAME_SECONDS
from dyafdb.suite.scenarios import OPENER_LINE
from dyafdb.score.vad import from_mask, to_mask
from dyafdb.viewer.media import Media
from dyafdb.viewer.sources import Sources

SIDE_CHANNEL = {"a": "left", "b": "right"}


def _seconds(intervals: Sequence[Sequence[int]]) -> list[list[float]]:
    return [[round(s * FRAME_SECONDS, 2), round(e * FRAME_SECONDS, 2)] for s, e in intervals]


def overlap_intervals(segments: Mapping[str, Sequence[tuple[int, int]]], ticks: int) -> list[tuple[int, int]]:
    """Frames where both sides speak, as half-open frame intervals."""
    both = to_mask(segments["a"], ticks) & to_mask(segments["b"], ticks)
    return from_mask(both)


def model_label(config: Mapping[str, Any], model: str) -> str:
    spec = (config.get("models") or {}).get(model) or {}
    label = spec.get("label")
    return f"{label} ({model})" if label and label != model else model


def player_data(src: Sources, media: Media, audio_href: str, config: Mapping[str, Any], blind: bool) -> dict[str, Any]:
    """The timeline and transcript of one conversation; speakers in the order A, B."""
    speakers = src.speakers  # side -> letter
    side_of = {letter: side for side, letter in speakers.items()}
    ticks = int(src.meta.get("ticks") or round(media.duration_s / FRAME_SECONDS))
    rows = []
    for letter in ("A", "B"):
        side = side_of[letter]
        # the file's channel for mute/solo: blind pages need it too, and it names no model
        row: dict[str, Any] = {"speaker": letter, "peaks": media.peaks[side], "audio_channel": 0 if side == "a" else 1}
        if not blind:
            role = src.row.role_of(side)
            model = src.row.model_of(side)
            row.update(side=side, role=role, model=model, model_label=model_label(config, model),
                       channel=SIDE_CHANNEL[side], opener=src.row.opener == side)
        row["segments"] = _seconds(src.segments[side]) if src.segments is not None else None
        if not blind and src.measures:
            events = (src.measures.get("events") or {}).get(side) or {}
            row["backchannels"] = _seconds(events.get("backchannels") or [])
            row["barge_ins"] = [{"t": round(b["onset"] * FRAME_SECONDS, 2), "outcome": b["outcome"]}
                                for b in events.get("barge_ins") or []]
        rows.append(row)
    lines = []
    for line in (src.transcript or {}).get("lines", []):
        lines.append({"speaker": line["speaker"], "start": float(line["start_s"]), "end": float(line["end_s"]),
                      "text": line.get("text") or ""})
    return {
        "audio": {"src": audio_href, "mime": media.mime},
        "duration_s": round(max(media.duration_s, ticks * FRAME_SECONDS), 3),
        "lead_in_s": round(int(src.meta.get("lead_in_ticks") or 0) * FRAME_SECONDS, 2),
        "bin_s": media.bin_s,
        "rows": rows,
        "overlap": _seconds(overlap_intervals(src.segments, ticks)) if src.segments is not None else None,
        "lines": lines,
        "scored": src.transcript is not None,
    }


def prompts(src: Sources, blind: bool) -> dict[str, Any]:
    """The shared situation and each speaker's private prompt (what its model was given)."""
    out = []
    for side, letter in sorted(src.speakers.items(), key=lambda kv: kv[1]):
        entry = {"speaker": letter, "role": src.scenario.role(side), "name": src.scenario.sides[side].get("name", ""),
                 "prompt": src.scenario.sides[side]["prompt"].strip(),
                 "opener_line": OPENER_LINE if src.row.opener == side else ""}
        if not blind:
            entry.update(side=side, model=src.row.model_of(side))
        out.append(entry)
    return {"title": src.scenario.title, "situation": src.scenario.situation.strip(), "sides": out}
