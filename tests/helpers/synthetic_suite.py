"""Synthetic scenario suites of the right shape, for tests and benchmarks (never for results)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml

from dyafdb.suite.scenarios import ARCHETYPE_ROLES


def scenario_doc(archetype: str, n: int = 1) -> dict[str, Any]:
    """A valid scenario of ``archetype`` whose content is filler: only the format matters."""
    role_a, role_b = ARCHETYPE_ROLES[archetype]
    key: dict[str, Any] = {}
    if archetype == "T2":
        key = {"candidates": ["Willow", "Cedar", "Birch", "Maple", "Aspen"], "answer": "Willow",
               "eliminations": {"a": [{"candidate": "Cedar", "reason": "leak"}, {"candidate": "Birch", "reason": "paint"}],
                                "b": [{"candidate": "Maple", "reason": "booked"}, {"candidate": "Aspen", "reason": "booked too"}]}}
    elif archetype == "T3-1":
        key = {"points": {"a": ["p1", "p2", "p3"], "b": ["q1", "q2", "q3"]}}
    elif archetype == "T3-2":
        key = {"action": "sign the release form"}
    elif archetype in ("T4-1", "T4-3"):
        key = {"options": {"a": "Option One", "b": "Option Two"}}
    elif archetype == "T4-2":
        key = {"secret": "cottage 14", "pretext": "posing as the locked-out guest"}
    elif archetype == "T4-4":
        key = {"currency": "dollars", "seller_opening": 900, "buyer_opening": 600}
    return {
        "id": f"{archetype.lower()}-fixture-{n:02d}", "archetype": archetype, "title": f"Fixture {archetype} {n}",
        "situation": "A quiet room on a weekday afternoon, two people meet.",
        "sides": {"a": {"role": role_a, "name": "Avery", "prompt": "You are Avery, and you want the meeting to go well."},
                  "b": {"role": role_b, "name": "Blake", "prompt": "You are Blake, and you want to leave on time today."}},
        "answer_key": key,
    }


def write_suite(root: Path, per_archetype: int = 1, archetypes: Iterable[str] = tuple(ARCHETYPE_ROLES)) -> Path:
    """Write ``per_archetype`` filler scenarios per archetype under ``root/scenarios``."""
    scen = Path(root) / "scenarios"
    for archetype in archetypes:
        folder = scen / archetype
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(1, per_archetype + 1):
            doc = scenario_doc(archetype, n)
            (folder / f"{doc['id']}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return scen
