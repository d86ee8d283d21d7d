"""Hand-built measures tables for the analysis tests: every number in them is chosen in the test."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.io import normalise_measures
from dyafdb.analysis.settings import Settings

ROLES = C.SIDE_ROLES


def conv(cid: str, archetype: str, model_a: str, model_b: str, a: dict[str, Any] | None = None,
         b: dict[str, Any] | None = None, opener: str = "a", window: float = 60.0, judge: str = "main",
         rep: int = 1, scenario: str | None = None) -> list[dict[str, str]]:
    """Rows of one conversation. A value may be ``(value, label)``; judged measures get ``judge``."""
    rows = []
    for side, values in (("a", a or {}), ("b", b or {})):
        for measure, v in values.items():
            value, label = v if isinstance(v, tuple) else (v, "")
            rows.append({
                C.CONVERSATION: cid, C.SUITE: "main", C.ARCHETYPE: archetype, C.SCENARIO: scenario or f"{archetype.lower()}-s",
                C.WINDOW: str(window), C.MODEL: model_a if side == "a" else model_b,
                C.PARTNER: model_b if side == "a" else model_a, C.SIDE: side,
                C.ROLE: ROLES[archetype][0 if side == "a" else 1], C.OPENER: str(opener == side).lower(),
                C.REPETITION: str(rep), C.ATTEMPT: "1", C.MEASURE: measure,
                C.JUDGE: judge if measure in C.JUDGED_MEASURES else "", C.VALUE: "" if value is None else str(value),
                C.LABEL: label, C.QUALITY: "",
            })
    return rows


def frame(*convs: list[dict[str, str]]) -> pd.DataFrame:
    return normalise_measures(pd.DataFrame([r for c in convs for r in c]).astype(str))


def settings(models=("x", "y", "z"), **kw) -> Settings:
    base = dict(models=list(models), reference_models=list(models), anchor_model=models[0], bootstrap=0, main_window_s=60.0)
    base.update(kw)
    return Settings(**base)
