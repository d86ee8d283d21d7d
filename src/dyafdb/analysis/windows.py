"""Conversation time window (Figure 5, section 5.2): the measures at 30, 60 and 120 s with intervals.

Each measure is a per-model rate, the mean over the model's pairings (equal weight per partner),
at every window that has runs. The interval is a percentile bootstrap (runs resampled within each
pairing cell). T1 pools its two archetypes' holder sides.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dyafdb.analysis import bootstrap
from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings

# (key, label, archetypes, indicator column)
MEASURES = (
    ("t1_entry", "T1 entry rate", ("T1-1", "T1-2"), "entered"),
    ("t1_adherence", "T1 role adherence", ("T1-1", "T1-2"), "score"),
    ("t2_delivery", "T2 delivery rate", ("T2",), "delivered"),
    ("t2_decided", "T2 decided", ("T2",), "decided"),
    ("t2_solved", "T2 solved", ("T2",), "score"),
    ("t3_2_asked", "T3-2 asked", ("T3-2",), "asked"),
    ("t3_2_agreement", "T3-2 agreement", ("T3-2",), "success"),
    ("t4_1_decided", "T4-1 decided", ("T4-1",), "decided"),
    ("t4_1_won", "T4-1 won", ("T4-1",), "score"),
    ("t4_2_asked", "T4-2 asked", ("T4-2",), "asked"),
    ("t4_2_extracted", "T4-2 extraction", ("T4-2",), "score"),
)
COLUMNS = ["measure", "label", "window_s", "model", "mean", "lower", "upper", "runs", "pairings"]


def windows_table(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    rng = np.random.default_rng(settings.seed)
    present = sorted(set(runs[C.WINDOW].astype(float)))
    wanted = present if settings.windows_s is None else [w for w in settings.windows_s if np.isclose(present, w).any()]
    rows = []
    for key, label, tasks, col in MEASURES:
        for window in wanted:
            sub = runs[runs["task"].isin(tasks) & np.isclose(runs[C.WINDOW].astype(float), window) & runs[col].notna()]
            if sub.empty:
                continue
            codes, keys = bootstrap.cell_codes(sub[C.MODEL].to_numpy(), sub[C.PARTNER].to_numpy())
            values = sub[col].to_numpy(float)
            means = bootstrap.cell_means(values, codes, len(keys))
            models = settings.order({k[0] for k in keys})
            groups = {m: np.array([i for i, k in enumerate(keys) if k[0] == m]) for m in models}
            groups["all"] = np.arange(len(keys))
            reps = {m: [] for m in groups}
            if settings.bootstrap > 1:
                for chunk in bootstrap.resampled_cell_means(values, codes, len(keys), settings.bootstrap, rng):
                    for m, idx in groups.items():
                        reps[m].append(chunk[:, idx].mean(axis=1))
            counts = np.bincount(codes, minlength=len(keys))
            for m, idx in groups.items():
                lo = hi = np.nan
                if reps[m]:
                    lo, hi = bootstrap.interval(np.concatenate(reps[m]), settings.ci)
                rows.append({"measure": key, "label": label, "window_s": window, "model": m,
                             "mean": float(np.mean(means[idx])), "lower": float(lo), "upper": float(hi),
                             "runs": int(counts[idx].sum()), "pairings": len(idx)})
    return pd.DataFrame(rows, columns=COLUMNS)
