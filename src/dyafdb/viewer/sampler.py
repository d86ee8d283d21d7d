"""Which conversations human raters annotate, the way the paper's study picked them (Table 8).

"140 seats from 100 conversations of T1 (40x2 T1-1 + 60 T1-2), uniformly sampled within each
pairing, in proportion to the full set." Per archetype, ``n`` conversations are split over the
pairings in proportion to how many conversations each pairing has (largest remainder: each pairing
gets the floor of its exact share, the leftover go to the largest fractional parts, ties to the
pairing first in name order), then drawn uniformly without replacement within each pairing. The
seats are the ones the judge scores in that archetype (both sides in T1-1, the holder in T1-2,
side a for questions about the pair).

Draws are seeded per (seed, archetype, pairing), so adding an archetype to the sample does not
change the conversations drawn for another. The items are then shuffled (seeded too) so that a
rater does not meet one pairing's conversations in a row.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from dyafdb.judge.rubric import questions_for
from dyafdb.errors import InputError
from dyafdb.schema_check import schema_default


@dataclass(frozen=True)
class Candidate:
    conversation_id: str
    archetype: str
    pairing: str


@dataclass(frozen=True)
class Pick:
    code: str  # the item's name on the annotation pages ("007"): says nothing about models
    conversation_id: str
    archetype: str
    pairing: str
    seats: tuple[str, ...]


def _rng(seed: int, *parts: str) -> np.random.Generator:
    digest = hashlib.sha256("#".join([str(seed), *parts]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def apportion(n: int, sizes: Mapping[str, int]) -> dict[str, int]:
    """Split ``n`` over groups in proportion to ``sizes`` (largest remainder; never above a size)."""
    total = sum(sizes.values())
    n = min(n, total)
    if total == 0 or n == 0:
        return {k: 0 for k in sizes}
    exact = {k: n * v / total for k, v in sizes.items()}
    quota = {k: int(exact[k]) for k in sizes}
    left = n - sum(quota.values())
    for k in sorted(sizes, key=lambda k: (-(exact[k] - quota[k]), k))[:left]:
        quota[k] += 1
    return quota


def scored_seats(archetype: str, questions: Sequence[str] | None = None) -> tuple[str, ...]:
    """Sides the judge answers for in this archetype (side a stands for the pair)."""
    seats: set[str] = set()
    for q in questions_for(archetype):
        if questions is None or q.id in questions:
            seats.update(s or "a" for s in q.seats(archetype))
    return tuple(sorted(seats))


def sample(candidates: Sequence[Candidate], per_archetype: Mapping[str, int],
           seed: int = schema_default("config-viewer", "annotation", "seed"),
           questions: Sequence[str] | None = None) -> list[Pick]:
    """The annotation sample, in the (shuffled) order raters see it."""
    picks: list[Pick] = []
    for archetype, n in sorted(per_archetype.items()):
        seats = scored_seats(archetype, questions)
        if not n or not seats:
            continue
        by_pairing: dict[str, list[str]] = {}
        for c in candidates:
            if c.archetype == archetype:
                by_pairing.setdefault(c.pairing, []).append(c.conversation_id)
        quota = apportion(n, {p: len(ids) for p, ids in by_pairing.items()})
        for pairing in sorted(by_pairing):
            ids = sorted(by_pairing[pairing])
            chosen = _rng(seed, archetype, pairing).choice(len(ids), size=quota[pairing], replace=False)
            picks.extend(Pick("", ids[i], archetype, pairing, seats) for i in sorted(chosen))
    order = _rng(seed, "order").permutation(len(picks))
    width = max(3, len(str(len(picks))))
    return [Pick(f"{k + 1:0{width}d}", p.conversation_id, p.archetype, p.pairing, p.seats)
            for k, p in enumerate(picks[i] for i in order)]


def parse_sample_args(values: Sequence[str]) -> dict[str, int]:
    """``["T1-1=40", "T1-2=60"]`` -> ``{"T1-1": 40, "T1-2": 60}`` (the CLI's --sample)."""
    out: dict[str, int] = {}
    for value in values:
        archetype, sep, count = value.partition("=")
        if not sep or not count.strip().isdigit():
            raise InputError(f"--sample {value!r}: write ARCHETYPE=N, e.g. --sample T1-1=40")
        out[archetype.strip()] = int(count)
    return out
