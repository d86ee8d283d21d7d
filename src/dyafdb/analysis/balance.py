"""Game balance (Figure 6, section 5.3, Appendix G): which side the structure of each asymmetric game favours.

Each game's outcome is read as side a's share of wins:

- T3-2: the presser obtained the permission (agreement), else the avoider held;
- T4-2: the attacker extracted the secret (leak), else the defender held;
- T4-3: the claimant's line was landed, among runs that closed a deal;
- T4-4: the seller's share of the opening gap, among runs that settled a price.

Every row's ``value`` is side a's share, as the title says and Figure 6 draws it: the ``as_side_b``
rows too (side a's share when this model sits on side b); ``model_share`` beside it is the model's
own side's share (1 - value on those rows). ``outcome`` names the measure, the same name the
action x success table and the windows use.

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

# per-run column read, and the outcome's name as every table shows it
OUTCOME = {"T3-2": "success", "T4-2": "score", "T4-3": "score", "T4-4": "score"}
OUTCOME_NAME = {"T3-2": C.SUCCESS_NAME["T3-2"], "T4-2": C.SUCCESS_NAME["T4-2"], "T4-3": "claimant_won", "T4-4": C.PRICE_SHARE}
COLUMNS = ["game", "outcome", "row", "model", "side_a", "side_b", "value", "lower", "upper", "model_share", "runs",
           "deal_rate", "advantaged", "role_advantage", "model_spread"]


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

        def stat(idx: np.ndarray):
            if len(idx) == 0:
                return np.nan, np.nan, np.nan
            point = float(means[idx].mean())
            if boot is None:
                return point, np.nan, np.nan
            lo, hi = bootstrap.interval(boot[:, idx].mean(axis=1), settings.ci)
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
        rows.append({"game": game, "outcome": OUTCOME_NAME[game], "row": "game", "model": "all", "side_a": role_a,
                     "side_b": role_b, "value": value, "lower": lo, "upper": hi, "model_share": np.nan, "runs": len(sub), "deal_rate": deal, "advantaged": advantaged,
                     "role_advantage": abs(value - 0.5),
                     "model_spread": float(np.max(side_a_avgs) - np.min(side_a_avgs)) if side_a_avgs else np.nan})
        for m in models:
            for kind, idx in (("as_side_a", as_a[m]), ("as_side_b", as_b[m])):
                v, l, h = stat(idx)
                n = int(np.isin(codes, idx).sum()) if len(idx) else 0
                rows.append({"game": game, "outcome": OUTCOME_NAME[game], "row": kind, "model": m, "side_a": role_a,
                             "side_b": role_b, "value": v, "lower": l, "upper": h,
                             "model_share": v if kind == "as_side_a" else 1.0 - v, "runs": n, "deal_rate": np.nan,
                             "advantaged": "", "role_advantage": np.nan, "model_spread": np.nan})
    return pd.DataFrame(rows, columns=COLUMNS)
