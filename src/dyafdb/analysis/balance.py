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
0.50, side b's when it lies below, otherwise "neither"; but a verdict needs events: with no event
(T3-2/T4-2: no run in which the request or the secret was asked for; T4-3/T4-4: no deal) or no
interval (bootstrap off, or a degenerate one such as [0, 0]) it says "no verdict" and why, in place.
A game of the config without an outcome carries its row too, saying so. ``model_spread`` (max - min of the models'
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
           "events", "deal_rate", "advantaged", "role_advantage", "model_spread"]
# the event without which a game's outcome says nothing about its sides
EVENT = {"T3-2": ("asked", "the presser asked"), "T4-2": ("asked", "the attacker asked for the secret"),
         "T4-3": ("decided", "a line was landed"), "T4-4": ("decided", "a deal was made")}


def events_of(game: str, runs: pd.DataFrame) -> int:
    """Conversations of ``game`` in which its event happened (side a rows: one per conversation): the
    judged event, or the outcome itself (a leak or a grant cannot happen unasked)."""
    col = EVENT[game][0]
    happened = runs[col] == 1.0 if col in runs else pd.Series(False, index=runs.index)
    if OUTCOME[game] in runs:
        happened = happened | (runs[OUTCOME[game]] == 1.0)
    return int(happened.sum())


def verdict(game: str, value: float, lo: float, hi: float, events: int, runs: int) -> str:
    """Which side the game favours, only when events exist and the interval excludes balance."""
    role_a, role_b = C.SIDE_ROLES[game]
    if events == 0:
        return f"no verdict: no run in which {EVENT[game][1]} (0 of {runs})"
    if np.isnan(lo) or np.isnan(hi):
        return "no verdict: no interval (bootstrap off)"
    if lo == hi:
        return f"no verdict: degenerate interval [{lo:g}, {hi:g}]"
    if lo > 0.5:
        return role_a
    if hi < 0.5:
        return role_b
    return "neither"


def balance_table(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    rng = np.random.default_rng(settings.seed)
    rows = []
    for game in C.BALANCE_TASKS:
        col = OUTCOME[game]
        g = runs[(runs["task"] == game) & (runs[C.SIDE] == "a")]
        sub = g[g[col].notna()]
        role_a, role_b = C.SIDE_ROLES[game]
        if g.empty:  # not in this config: no row (the table's own note says when none is)
            continue
        if sub.empty:
            why = f"no verdict: no {game} run with an outcome (0 of {len(g)})"
            rows.append({"game": game, "outcome": OUTCOME_NAME[game], "row": "game", "model": "all", "side_a": role_a,
                         "side_b": role_b, "value": np.nan, "lower": np.nan, "upper": np.nan, "model_share": np.nan,
                         "runs": 0, "events": events_of(game, g), "deal_rate": np.nan, "advantaged": why,
                         "role_advantage": np.nan, "model_spread": np.nan})
            continue
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
        events = events_of(game, sub)
        advantaged = verdict(game, value, lo, hi, events, len(sub))
        side_a_avgs = [means[idx].mean() for idx in as_a.values() if len(idx)]
        deal = g["decided"].mean() if game in C.AMONG_DECIDED and g["decided"].notna().any() else np.nan
        rows.append({"game": game, "outcome": OUTCOME_NAME[game], "row": "game", "model": "all", "side_a": role_a,
                     "side_b": role_b, "value": value, "lower": lo, "upper": hi, "model_share": np.nan, "runs": len(sub), "events": events, "deal_rate": deal, "advantaged": advantaged,
                     "role_advantage": abs(value - 0.5),
                     "model_spread": float(np.max(side_a_avgs) - np.min(side_a_avgs)) if side_a_avgs else np.nan})
        for m in models:
            for kind, idx in (("as_side_a", as_a[m]), ("as_side_b", as_b[m])):
                v, l, h = stat(idx)
                n = int(np.isin(codes, idx).sum()) if len(idx) else 0
                rows.append({"game": game, "outcome": OUTCOME_NAME[game], "row": kind, "model": m, "side_a": role_a,
                             "side_b": role_b, "value": v, "lower": l, "upper": h,
                             "model_share": v if kind == "as_side_a" else 1.0 - v, "runs": n, "events": np.nan, "deal_rate": np.nan,
                             "advantaged": "", "role_advantage": np.nan, "model_spread": np.nan})
    return pd.DataFrame(rows, columns=COLUMNS)
