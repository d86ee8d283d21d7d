"""Game balance (Figure 6, section 5.3, Appendix G): which side the structure of each asymmetric game favours.

Each game's outcome is read as side a's share of wins:

- T3-2: the presser obtained the permission (agreement), else the avoider held;
- T4-2: the attacker extracted the secret (leak), else the defender held;
- T4-3: the claimant's line was landed, among runs that closed a deal;
- T4-4: the seller's share of the opening gap, among runs that settled a price.

The game's balance is the mean over every pairing cell (each ordered pairing weighted equally,
self-play included). Rule for ``advantaged``: side a's role when the whole interval lies above
0.50, side b's when it lies below, otherwise "neither". ``model_spread`` (max - min of the models'
averages as side a) beside ``role_advantage`` (|balance - 0.50|) says whether the choice of model
moves the outcome more than the choice of side does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dyafdb.analysis import bootstrap
from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings

OUTCOME = {"T3-2": "success", "T4-2": "score", "T4-3": "score", "T4-4": "score"}
COLUMNS = ["game", "row", "model", "side_a", "side_b", "value", "lower", "upper", "runs", "deal_rate",
           "advantaged", "role_advantage", "model_spread"]


def balance_table(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    rng = np.random.default_rng(settings.seed)
    rows = []
    for game in C.BALANCE_TASKS:
        col = OUTCOME[game]
        g = runs[(runs["task"] == game) & (runs[C.SIDE] == "a")]
        sub = g[g[col].notna()]
        if sub.empty:
            continue
        role_a, role_b = C.SIDE_ROLES[game]
        codes, keys = bootstrap.cell_codes(sub[C.MODEL].to_numpy(), sub[C.PARTNER].to_numpy())
        values = sub[col].to_numpy(float)
        means = bootstrap.cell_means(values, codes, len(keys))
        models = settings.order({k[0] for k in keys} | {k[1] for k in keys})
        as_a = {m: np.array([i for i, k in enumerate(keys) if k[0] == m], dtype=int) for m in models}
        as_b = {m: np.array([i for i, k in enumerate(keys) if k[1] == m], dtype=int) for m in models}
        reps = []
        if settings.bootstrap > 1:
            reps = [chunk for chunk in bootstrap.resampled_cell_means(values, codes, len(keys), settings.bootstrap, rng)]
        boot = np.concatenate(reps) if reps else None

        def stat(idx: np.ndarray, complement: bool = False):
            if len(idx) == 0:
                return np.nan, np.nan, np.nan
            f = (lambda x: 1.0 - x) if complement else (lambda x: x)
            point = float(f(means[idx].mean()))
            if boot is None:
                return point, np.nan, np.nan
            lo, hi = bootstrap.interval(f(boot[:, idx].mean(axis=1)), settings.ci)
            return point, float(lo), float(hi)

        value, lo, hi = stat(np.arange(len(keys)))
        if lo > 0.5:
            advantaged = role_a
        elif hi < 0.5:
            advantaged = role_b
        elif np.isnan(lo):
            advantaged = role_a if value > 0.5 else role_b if value < 0.5 else "neither"
        else:
            advantaged = "neither"
        side_a_avgs = [means[idx].mean() for idx in as_a.values() if len(idx)]
        deal = g["decided"].mean() if game in C.AMONG_DECIDED and g["decided"].notna().any() else np.nan
        rows.append({"game": game, "row": "game", "model": "all", "side_a": role_a, "side_b": role_b, "value": value,
                     "lower": lo, "upper": hi, "runs": len(sub), "deal_rate": deal, "advantaged": advantaged,
                     "role_advantage": abs(value - 0.5),
                     "model_spread": float(np.max(side_a_avgs) - np.min(side_a_avgs)) if side_a_avgs else np.nan})
        for m in models:
            for kind, idx, complement in (("as_side_a", as_a[m], False), ("as_side_b", as_b[m], True)):
                v, l, h = stat(idx, complement)
                n = int(np.isin(codes, idx).sum()) if len(idx) else 0
                rows.append({"game": game, "row": kind, "model": m, "side_a": role_a, "side_b": role_b,
                             "value": v, "lower": l, "upper": h, "runs": n, "deal_rate": np.nan,
                             "advantaged": "", "role_advantage": np.nan, "model_spread": np.nan})
    return pd.DataFrame(rows, columns=COLUMNS)
