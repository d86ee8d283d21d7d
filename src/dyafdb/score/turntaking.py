"""Turn-taking of one side measured against its partner (paper, Appendix C), audio only.

Everything runs on the VAD segments as integer frame sets (80 ms frames); thresholds in seconds
(config section ``turntaking``) become frame counts once, with the same rule as :mod:`dyafdb.score.vad`:
"shorter than X" is fewer than ``ceil(X/0.08)`` frames, "at least X" is at least that many. With the
defaults: 1 s = 13 frames (12 frames = 0.96 s is shorter than 1 s), 0.5 s = 7 frames.

Below, X is the measured side and P its partner; ``x``/``p`` their speech masks; ``n`` the number
of frames in the recording.

**Partner silences.** The gaps ``[e, r)`` between two consecutive P segments, plus the trailing gap
from P's last segment to the end of the recording. Silence before P's first segment is not inside
P's speech and is never counted.

**TOR_pause** (``tor_pause``). A *pause* is an inner gap shorter than ``pause_s`` (1 s). X *cut in*
when an X segment starts inside the pause (``e <= onset < r``) and lasts at least ``min_speech_s``
(1 s) in all (it necessarily runs on over P's resumption). A pause that falls inside speech X had
already started (X speaks in the frame before the pause and in its first frame: a barge-in in
progress) is not a pause X could cut into, and is left out of the denominator too: otherwise one
event would be both a barge-in success and a TOR_pause miss. TOR_pause = pauses cut into / pauses
(the pauses X was silent at). A trailing gap shorter than ``pause_s`` is cut off by the end of
the recording (pause or turn end is unknown) and is left out.

**TOR_end** (``tor_end``). A *turn end* is a gap of at least ``pause_s`` (inner, or trailing to the
end of the recording). X *took the turn* when X speaks at least ``min_speech_s`` within the gap,
i.e. before P resumed: ``|x ∩ [e, r)| >= 13`` frames, whenever that speech began (an X utterance that
starts just before P stops and carries on counts: that is an early, overlapping take-over).
TOR_end = turn ends taken / turn ends.

**Backchannel** (``backchannel``, a count). An X segment ``[s, e)`` shorter than
``backchannel_max_s`` (1 s) that starts while P speaks and does not take the floor: P is still
speaking for ``hold_s`` (0.5 s) after it ends, i.e. P speaks in every frame of ``[e, e + 7)``.
"Starts while P speaks" means P speaks at ``s`` *and* at ``s - 1``: a start on the same frame as P's
own start is simultaneous, not over P. A short utterance whose hold frames run past the end of the
recording cannot be classified and is neither a backchannel nor a barge-in. A short utterance after
which P stops is treated as a barge-in attempt (Appendix C: "counts as a barge-in instead").

**Barge-in success** (``barge_in``). Every X segment that starts while P speaks (same test as above)
and is not a backchannel is a barge-in attempt. Follow the overlap from ``s`` to the first frame
``t`` where not both speak:

* P silent, X speaking at ``t``: P stopped. P *yielded* if X goes on for ``yield_s`` (0.5 s), i.e. X
  speaks in every frame of ``[t, t + 7)``.
* X silent, P speaking at ``t``: X stopped; X yielded if P speaks in every frame of ``[t, t + 7)``.
* Both stop on the same frame, the one who goes on stops within ``yield_s``, or the recording ends
  first: nobody yielded, and the attempt is left out.

Whether the one who stopped comes back later does not matter: that is a new attempt of its own.
barge_in = attempts where P yielded / attempts where someone yielded (X is the interrupter, so X is
scored). ``barge_in_n`` is that denominator.

**Turns** (``turns``). How many times X took the floor: X's segments, backchannels (and short
utterances left unclassified at the end of the recording) left out, where consecutive ones belong
to one turn unless P spoke (any frame) in the gap between them.

Also reported: ``speech_s`` (X speech), ``exclusive_s`` (X speech while P is silent),
``overlap_s`` (both speak), and the denominators ``tor_pause_n``, ``tor_end_n``, ``barge_in_n`` so
that rates can be pooled over conversations. A rate with a zero denominator is None (no case).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from dyafdb.clock import FRAME_SECONDS
from dyafdb.config import float_section
from dyafdb.declarations import declared, decorator, derived
from dyafdb.errors import InputError
from dyafdb.schema_check import schema_default
from dyafdb.score.vad import Interval, frames_ceil, to_mask


# ``@metric("name", label=..., unit=..., denominator=..., aggregate=..., table=...)`` on its compute
# function: the one declaration of a turn-taking measure (see Metric); read from the source by
# dyafdb.declarations, so the CLI names the metrics without loading numpy.
metric = decorator("metric")
# How the analysis pools a metric's per-side values into a table cell (dyafdb.analysis.tables.turn_taking_matrix).
AGGREGATES = {"mean": "the mean over the sides with a value in each task, the tasks averaged with equal weight"}
UNITS = {"share": "0-1, on a fixed 0-1 colour scale", "count": "a count per side", "s": "seconds"}


@dataclass(frozen=True)
class Metric:
    """A turn-taking measure as every later stage names it: measures.tsv's rows, the analysis's runs
    column and per-metric table (Table 3), figure panels, report titles, the viewer's rows and the
    CLI's help all derive from its declaration (``@metric`` on ``compute``).

    unit: one of UNITS.
    compute: one side's value from its :class:`SideTurnTaking`; with a ``denominator`` it returns
      (hits, cases) and the value is hits / cases (None with no case), the cases written as the
      measure ``denominator`` so that rates can be pooled.
    aggregate: how a table cell pools the per-side values (AGGREGATES; the cell's bootstrap interval
      is of the same statistic).
    table: whether it gets a runs column and its own analysis table (False: measures.tsv and viewer only).
    """

    name: str
    label: str
    unit: str
    compute: Callable[["SideTurnTaking"], Any]
    denominator: str | None = None
    aggregate: str = "mean"
    table: bool = True

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"@metric({self.name!r}): aggregate={self.aggregate!r}; choose one of {', '.join(AGGREGATES)}")
        if self.unit not in UNITS:
            raise ValueError(f"@metric({self.name!r}): unit={self.unit!r}; choose one of {', '.join(UNITS)}")

    def values(self, side: "SideTurnTaking") -> dict[str, float | int | None]:
        if self.denominator is None:
            return {self.name: self.compute(side)}
        hits, cases = self.compute(side)
        return {self.name: _rate(hits, cases), self.denominator: cases}

    @property
    def measures(self) -> tuple[str, ...]:
        """The measures.tsv names it writes: itself, then its denominator."""
        return (self.name, self.denominator) if self.denominator else (self.name,)


@derived
def metrics() -> tuple[Metric, ...]:
    """Every declared metric (this module's, in source order, then an installed package's), resolved."""
    out = []
    for name, d in declared("metric").items():
        try:
            out.append(Metric(name=name, compute=d.resolve(), **d.fields))
        except (TypeError, ValueError) as exc:  # a field misspelt or out of range: say where
            raise InputError(f"{d.where}: {exc}") from None
    return tuple(out)


def __getattr__(name: str) -> Any:
    # METRICS is the registry as it stands (a metric added by a plugin shows up without a reload)
    if name == "METRICS":
        return metrics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class TurnTakingParams:
    pause_s: float = schema_default("config-turntaking", "pause_s")
    min_speech_s: float = schema_default("config-turntaking", "min_speech_s")
    backchannel_max_s: float = schema_default("config-turntaking", "backchannel_max_s")
    hold_s: float = schema_default("config-turntaking", "hold_s")
    yield_s: float = schema_default("config-turntaking", "yield_s")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "TurnTakingParams":
        return float_section(cls, config, "turntaking")

    @property
    def frames(self) -> dict[str, int]:
        """Each threshold as the smallest whole number of frames lasting at least that long."""
        return {k: frames_ceil(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass
class SideTurnTaking:
    """One side's measures against its partner, and the events behind them (frames)."""

    pauses: list[Interval] = field(default_factory=list)
    pauses_cut: list[Interval] = field(default_factory=list)
    turn_ends: list[Interval] = field(default_factory=list)
    turn_ends_taken: list[Interval] = field(default_factory=list)
    backchannels: list[Interval] = field(default_factory=list)
    barge_ins: list[dict[str, Any]] = field(default_factory=list)  # {"onset", "at", "outcome"}
    turns: int = 0
    speech_frames: int = 0
    exclusive_frames: int = 0
    overlap_frames: int = 0

    @property
    def yielded(self) -> list[dict[str, Any]]:
        return [b for b in self.barge_ins if b["outcome"] in ("partner_yielded", "side_yielded")]

    def values(self) -> dict[str, float | int | None]:
        """Every declared metric's value (and denominator), in declaration order: measures.tsv's rows."""
        out: dict[str, float | int | None] = {}
        for m in metrics():
            out.update(m.values(self))
        return out

    def events(self) -> dict[str, Any]:
        as_lists = lambda xs: [list(x) for x in xs]  # noqa: E731
        return {"pauses": as_lists(self.pauses), "pauses_cut": as_lists(self.pauses_cut),
                "turn_ends": as_lists(self.turn_ends), "turn_ends_taken": as_lists(self.turn_ends_taken),
                "backchannels": as_lists(self.backchannels), "barge_ins": self.barge_ins}


def _rate(hits: int, cases: int) -> float | None:
    return hits / cases if cases else None


# The declared metrics, in measures.tsv order (module doc has the definitions).
@metric("tor_pause", label="TOR_pause", unit="share", denominator="tor_pause_n")
def tor_pause(side: SideTurnTaking) -> tuple[int, int]:
    return len(side.pauses_cut), len(side.pauses)


@metric("tor_end", label="TOR_end", unit="share", denominator="tor_end_n")
def tor_end(side: SideTurnTaking) -> tuple[int, int]:
    return len(side.turn_ends_taken), len(side.turn_ends)


@metric("backchannel", label="Backchannel", unit="count")
def backchannel(side: SideTurnTaking) -> int:
    return len(side.backchannels)


@metric("barge_in", label="Barge-in success", unit="share", denominator="barge_in_n")
def barge_in(side: SideTurnTaking) -> tuple[int, int]:
    resolved = side.yielded
    return sum(1 for b in resolved if b["outcome"] == "partner_yielded"), len(resolved)


@metric("turns", label="turns", unit="count", table=False)
def turns(side: SideTurnTaking) -> int:
    return side.turns


@metric("speech_s", label="speech_s", unit="s", table=False)
def speech_s(side: SideTurnTaking) -> float:
    return round(side.speech_frames * FRAME_SECONDS, 2)


@metric("exclusive_s", label="exclusive_s", unit="s", table=False)
def exclusive_s(side: SideTurnTaking) -> float:
    return round(side.exclusive_frames * FRAME_SECONDS, 2)


@metric("overlap_s", label="overlap_s", unit="s", table=False)
def overlap_s(side: SideTurnTaking) -> float:
    return round(side.overlap_frames * FRAME_SECONDS, 2)


def _partner_silences(p_segs: Sequence[Interval], n: int) -> tuple[list[Interval], Interval | None]:
    inner = [(p_segs[i][1], p_segs[i + 1][0]) for i in range(len(p_segs) - 1)]
    trailing = (p_segs[-1][1], n) if p_segs and p_segs[-1][1] < n else None
    return inner, trailing


def _over_partner(p: np.ndarray, s: int) -> bool:
    """X's onset at ``s`` is over P's speech: P speaks at s and already at s - 1."""
    return s > 0 and bool(p[s]) and bool(p[s - 1])


def _speaks_throughout(mask: np.ndarray, start: int, length: int) -> bool | None:
    """Whether ``mask`` is set on all of ``[start, start+length)``; None if that runs past the end."""
    if start + length > len(mask):
        return None if mask[start:].all() else False
    return bool(mask[start:start + length].all())


def measure_side(x_segs: Sequence[Interval], p_segs: Sequence[Interval], n: int,
                 params: TurnTakingParams = TurnTakingParams()) -> SideTurnTaking:
    """All turn-taking measures of side X against partner P (module doc has the definitions)."""
    f = params.frames
    x, p = to_mask(x_segs, n), to_mask(p_segs, n)
    out = SideTurnTaking()
    out.speech_frames = int(x.sum())
    out.exclusive_frames = int((x & ~p).sum())
    out.overlap_frames = int((x & p).sum())

    x_starts = np.array([s for s, _ in x_segs], dtype=np.int64)
    x_lengths = np.array([e - s for s, e in x_segs], dtype=np.int64)
    inner, trailing = _partner_silences(p_segs, n)
    for e, r in inner:
        if r - e < f["pause_s"]:
            if e > 0 and x[e - 1] and x[e]:
                continue  # inside X's running speech: neither a case nor a miss (module doc)
            out.pauses.append((e, r))
            lo, hi = np.searchsorted(x_starts, e, "left"), np.searchsorted(x_starts, r, "left")
            if np.any(x_lengths[lo:hi] >= f["min_speech_s"]):
                out.pauses_cut.append((e, r))
        else:
            _turn_end(out, x, e, r, f)
    if trailing is not None and trailing[1] - trailing[0] >= f["pause_s"]:
        _turn_end(out, x, *trailing, f)

    both = x & p
    floor_segments: list[Interval] = []
    for s, e in x_segs:
        if not _over_partner(p, s):
            floor_segments.append((s, e))
            continue
        if e - s < f["backchannel_max_s"]:
            held = _speaks_throughout(p, e, f["hold_s"])
            if held is None:
                continue  # cannot tell backchannel from barge-in before the recording ends
            if held:
                out.backchannels.append((s, e))
                continue
        floor_segments.append((s, e))
        out.barge_ins.append(_barge_in(x, p, both, s, f["yield_s"]))

    previous_end: int | None = None
    for s, e in floor_segments:
        if previous_end is None or p[previous_end:s].any():
            out.turns += 1
        previous_end = e
    return out


def _turn_end(out: SideTurnTaking, x: np.ndarray, e: int, r: int, f: dict[str, int]) -> None:
    out.turn_ends.append((e, r))
    if int(x[e:r].sum()) >= f["min_speech_s"]:
        out.turn_ends_taken.append((e, r))


def _barge_in(x: np.ndarray, p: np.ndarray, both: np.ndarray, s: int, yield_frames: int) -> dict[str, Any]:
    rest = np.flatnonzero(~both[s:])
    if len(rest) == 0:
        return {"onset": s, "at": None, "outcome": "unresolved"}
    t = s + int(rest[0])
    outcome = "unresolved"
    if x[t] and not p[t]:
        if _speaks_throughout(x, t, yield_frames):
            outcome = "partner_yielded"
    elif p[t] and not x[t]:
        if _speaks_throughout(p, t, yield_frames):
            outcome = "side_yielded"
    return {"onset": s, "at": t, "outcome": outcome}


def measure_conversation(segments: Mapping[str, Sequence[Interval]], n: int,
                         params: TurnTakingParams = TurnTakingParams()) -> dict[str, SideTurnTaking]:
    """Both sides, each against the other."""
    return {"a": measure_side(segments["a"], segments["b"], n, params),
            "b": measure_side(segments["b"], segments["a"], n, params)}
