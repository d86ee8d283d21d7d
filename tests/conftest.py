"""Shared fixtures: a small scenario suite and configs, generated in code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from dyafdb.scenarios import ARCHETYPE_ROLES

TESTS_DIR = Path(__file__).parent
REPO = TESTS_DIR.parent
sys.path.insert(0, str(TESTS_DIR))
os.environ.setdefault("NO_TORCH_COMPILE", "1")


def scenario_doc(archetype: str, n: int = 1) -> dict:
    """A valid scenario of ``archetype`` (content is filler: only the format matters here)."""
    role_a, role_b = ARCHETYPE_ROLES[archetype]
    sid = f"{archetype.lower()}-fixture-{n:02d}"
    key: dict = {}
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
        "id": sid, "archetype": archetype, "title": f"Fixture {archetype} {n}",
        "situation": "A quiet room on a weekday afternoon, two people meet.",
        "sides": {"a": {"role": role_a, "name": "Avery", "prompt": "You are Avery, and you want the meeting to go well."},
                  "b": {"role": role_b, "name": "Blake", "prompt": "You are Blake, and you want to leave on time today."}},
        "answer_key": key,
    }


def write_suite(root: Path, per_archetype: int = 1, archetypes=tuple(ARCHETYPE_ROLES)) -> Path:
    scen = root / "scenarios"
    for archetype in archetypes:
        folder = scen / archetype
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(1, per_archetype + 1):
            doc = scenario_doc(archetype, n)
            (folder / f"{doc['id']}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return scen


@pytest.fixture
def suite_root(tmp_path: Path) -> Path:
    write_suite(tmp_path)
    return tmp_path


def scripted_config(models: dict | None = None, window_s: float = 4.0, in_process: bool = True, **suite) -> dict:
    models = models or {
        "talker": {"adapter": "scripted", "params": {"script": [{"start_s": 0.0, "end_s": 1.0, "text": "hello there"}]}},
        "quiet": {"adapter": "scripted", "params": {"script": [{"start_s": 2.0, "end_s": 2.8, "text": "hi"}]}},
    }
    return {
        "scenarios_dir": "scenarios",
        "models": models,
        "suites": {"t": {"models": list(models), "archetypes": ["T1-1"], "repetitions": 1, "window_s": window_s, **suite}},
        "bridge": {"in_process": in_process, "progress": False},
    }
