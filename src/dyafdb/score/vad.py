"""Energy VAD on the bridge's 80 ms frame grid (paper, Appendix A "Speech boundaries").

Per channel, in this order:

1. **Frame RMS.** ``sqrt(mean(x**2))`` of each frame's 1,920 float samples (float64 wherever a
   frame is near a threshold; see :func:`frame_rms`).
   A trailing partial frame (never written by the bridge) is ignored.
2. **Hysteresis.** A segment starts at the first frame whose RMS is *strictly above* ``start_rms``
   (0.010) and ends at the first later frame whose RMS is *strictly below* ``end_rms`` (0.004); that
   frame is the segment's exclusive end. Frames in between the two thresholds keep the current state.
   A segment still open at the end of the audio ends there.
3. **Drop.** Segments shorter than ``min_segment_s`` (0.16 s = 2 frames) are removed.
4. **Merge.** Two neighbouring segments separated by a gap of at most ``max_gap_s`` (0.32 s = 4
   frames) become one.

Dropping before merging is the paper's order and it matters: a one-frame click next to speech is
gone before it could bridge a gap, and two 1-frame blips 2 frames apart do not merge into a kept
3-frame segment. Merging never shortens a segment, so nothing merged needs dropping afterwards.

Durations in seconds become whole frames once, here and in :mod:`dyafdb.score.turntaking`, with the rule
"shorter than X" = fewer than ``ceil(X / 0.08)`` frames and "at most X" = at most ``floor(X / 0.08)``
frames, so a threshold that lies on the grid (0.16 s, 0.32 s) is exact, not at the mercy of float
rounding. Segments are half-open integer frame intervals ``[start, end)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS, frames_ceil, frames_floor  # noqa: F401 (part of this module's API)
from dyafdb.config import float_section
from dyafdb.schema_check import schema_default
from dyafdb.fileio import read_json
from dyafdb.errors import InputError

FORMAT = "dyafdb-segments/1"
Interval = tuple[int, int]


@dataclass(frozen=True)
class VadParams:
    start_rms: float = schema_default("config", "vad", "start_rms")
    end_rms: float = schema_default("config", "vad", "end_rms")
    min_segment_s: float = schema_default("config", "vad", "min_segment_s")
    max_gap_s: float = schema_default("config", "vad", "max_gap_s")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "VadParams":
        params = float_section(cls, config, "vad")
        if params.end_rms > params.start_rms:
            raise InputError(
                f"config vad: end_rms = {params.end_rms} is above start_rms = {params.start_rms}; "
                "the end threshold must not exceed the start threshold (hysteresis)"
            )
        return params

    @property
    def min_segment_frames(self) -> int:
        return frames_ceil(self.min_segment_s)

    @property
    def max_gap_frames(self) -> int:
        return frames_floor(self.max_gap_s)

    def to_json(self) -> dict[str, float]:
        return asdict(self)


def frame_rms(channel: np.ndarray, exact_near: Sequence[float] = ()) -> np.ndarray:
    """RMS of every whole 1,920-sample frame of one channel.

    The sum of squares runs in float32 (4x faster than a float64 copy); every frame whose result
    lies within 0.1 % of a value in ``exact_near`` (the thresholds) is then recomputed in float64,
    far wider than float32's worst-case error over 1,920 terms (about 0.01 %), so each threshold
    decision is exactly the float64 one.
    """
    n = len(channel) // FRAME_SAMPLES
    frames = np.asarray(channel[: n * FRAME_SAMPLES], dtype=np.float32).reshape(n, FRAME_SAMPLES)
    rms = np.sqrt(np.einsum("ij,ij->i", frames, frames).astype(np.float64) / FRAME_SAMPLES)
    if len(exact_near):
        near = np.zeros(n, dtype=bool)
        for threshold in exact_near:
            near |= np.abs(rms - threshold) <= 1e-3 * threshold
        for i in np.flatnonzero(near):
            row = frames[i].astype(np.float64)
            rms[i] = np.sqrt(np.dot(row, row) / FRAME_SAMPLES)
    return rms


def hysteresis(rms: Sequence[float] | np.ndarray, start_rms: float, end_rms: float) -> list[Interval]:
    """Segments from frame RMS: open strictly above ``start_rms``, close at the first frame strictly below ``end_rms``."""
    values = np.asarray(rms, dtype=np.float64)
    above = values > start_rms
    below = values < end_rms
    out: list[Interval] = []
    n = len(values)
    t = 0
    # Jump between candidate frames with argmax instead of visiting every frame in Python.
    while t < n:
        rel = int(np.argmax(above[t:]))
        if not above[t + rel]:
            break
        start = t + rel
        rel = int(np.argmax(below[start + 1:])) if start + 1 < n else 0
        end = start + 1 + rel if start + 1 < n and below[start + 1 + rel] else n
        out.append((start, end))
        t = end
    return out


def drop_short(segments: Sequence[Interval], min_frames: int) -> list[Interval]:
    """Remove segments with fewer than ``min_frames`` frames."""
    return [(s, e) for s, e in segments if e - s >= min_frames]


def merge_gaps(segments: Sequence[Interval], max_gap_frames: int) -> list[Interval]:
    """Join neighbours whose gap (silent frames between them) is at most ``max_gap_frames``."""
    out: list[Interval] = []
    for s, e in segments:
        if out and s - out[-1][1] <= max_gap_frames:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def segments_from_rms(rms: Sequence[float] | np.ndarray, params: VadParams) -> list[Interval]:
    segs = hysteresis(rms, params.start_rms, params.end_rms)
    segs = drop_short(segs, params.min_segment_frames)
    return merge_gaps(segs, params.max_gap_frames)


def detect(channel: np.ndarray, params: VadParams = VadParams()) -> list[Interval]:
    """Speech segments of one channel of float samples at 24 kHz."""
    return segments_from_rms(frame_rms(channel, (params.start_rms, params.end_rms)), params)


def detect_stereo(audio: np.ndarray, params: VadParams = VadParams()) -> dict[str, list[Interval]]:
    """Segments of both channels of a recording's ``(2, samples)`` audio: channel 0 is side a."""
    return {side: detect(audio[i], params) for i, side in enumerate(("a", "b"))}


def to_mask(segments: Sequence[Interval], n_frames: int) -> np.ndarray:
    """Boolean speech mask over frames; the set operations of the measures run on these."""
    mask = np.zeros(n_frames, dtype=bool)
    for s, e in segments:
        mask[s:e] = True
    return mask


def from_mask(mask: np.ndarray) -> list[Interval]:
    """Runs of True as half-open intervals (inverse of :func:`to_mask`)."""
    padded = np.concatenate(([False], np.asarray(mask, dtype=bool), [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2])]


def segments_doc(conversation_id: str, segments: Mapping[str, Sequence[Interval]], ticks: int,
                 params: VadParams) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "conversation_id": conversation_id,
        "frame_samples": FRAME_SAMPLES,
        "frame_seconds": FRAME_SECONDS,
        "ticks": ticks,
        "vad": params.to_json(),
        "channels": {side: [[int(s), int(e)] for s, e in segments[side]] for side in ("a", "b")},
    }


def read_segments(path: Path) -> tuple[dict[str, list[Interval]], int]:
    """Segments per side and the number of frames, from ``results/segments/<shard>/<id>.json``."""
    doc = read_json(path, "segments file", "run `dyafdb score` for this conversation")
    if doc.get("format") != FORMAT:
        raise InputError(f"{path}: field format = {doc.get('format')!r}, expected {FORMAT!r}; rescore with this version")
    return {side: [(int(s), int(e)) for s, e in doc["channels"][side]] for side in ("a", "b")}, int(doc["ticks"])
