"""Success depends on action (Figure 4, section 5.1).

Each score is split into an action rate and a success rate given the action:

- T2: p(decided) = the pair settled on a candidate; p(solved | decided);
- T3-2: p(asked) = the presser voiced its request; p(agreement | asked);
- T4-2: p(asked) = the attacker voiced a demand for the secret; p(leak | asked).

Columns, per pairing (pooled runs) and per model (``partner`` = avg: the mean over its pairings,
each weighted equally, the paper's convention for per-model numbers):

- ``p_action``: share of runs with the action;
- ``p_success_given_action``: share of the runs with the action that also succeeded (a pairing with
  no action has none, and is left out of the model's average: ``pairings_with_action``);
- ``p_action_and_success``: share of runs with both (the action rate times the conditional rate;
  not the task's success rate, which counts success without the action too);
- ``success_rate``: share of runs that succeeded, the task's success as every other table reads it
  (T3-2 agreement as in the game balance, T4-2 leak as in the extraction matrix).

A run whose success the judge left undecided (an invalid answer) is left out of every rate that
needs its success, never counted as a failure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings

SPLITS = tuple((task, action, C.SUCCESS_NAME[task]) for task, action in (("T2", "decided"), ("T3-2", "asked"), ("T4-2", "asked")))
COLUMNS = ["task", "model", "partner", "action", "success", "runs", "actions", "p_action",
           "p_success_given_action", "p_action_and_success", "success_rate", "pairings_with_action"]


def action_success_table(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    rows = []
    for task, action, success in SPLITS:
        sub = runs[(runs["task"] == task) & runs[action].notna()]
        if sub.empty:
            continue
        ok = sub["success"]
        known = ok.notna().astype(float)
        sub = sub.assign(_act=sub[action], _known=known, _ok=ok.fillna(0.0),
                         _act_known=sub[action] * known, _both=sub[action] * ok.fillna(0.0))
        cells = sub.groupby([C.MODEL, C.PARTNER]).agg(runs=("_act", "size"), actions=("_act", "sum"), known=("_known", "sum"),
                                                      act_known=("_act_known", "sum"), ok=("_ok", "sum"), both=("_both", "sum"))
        cells["p_action"] = cells["actions"] / cells["runs"]
        with np.errstate(invalid="ignore", divide="ignore"):
            cells["p_success_given_action"] = np.where(cells["act_known"] > 0, cells["both"] / cells["act_known"].where(cells["act_known"] > 0, 1), np.nan)
            cells["p_action_and_success"] = np.where(cells["known"] > 0, cells["both"] / cells["known"].where(cells["known"] > 0, 1), np.nan)
            cells["success_rate"] = np.where(cells["known"] > 0, cells["ok"] / cells["known"].where(cells["known"] > 0, 1), np.nan)
        for m in settings.order(cells.index.get_level_values(0)):
            mine = cells.loc[m]
            for p in settings.order(mine.index):
                c = mine.loc[p]
                rows.append({"task": task, "model": m, "partner": p, "action": action, "success": success,
                             "runs": int(c["runs"]), "actions": int(c["actions"]), "p_action": c["p_action"],
                             "p_success_given_action": c["p_success_given_action"],
                             "p_action_and_success": c["p_action_and_success"], "success_rate": c["success_rate"],
                             "pairings_with_action": int(c["actions"] > 0)})
            rows.append({"task": task, "model": m, "partner": "avg", "action": action, "success": success,
                         "runs": int(mine["runs"].sum()), "actions": int(mine["actions"].sum()),
                         "p_action": mine["p_action"].mean(),
                         "p_success_given_action": mine["p_success_given_action"].mean(skipna=True),
                         "p_action_and_success": mine["p_action_and_success"].mean(skipna=True),
                         "success_rate": mine["success_rate"].mean(skipna=True),
                         "pairings_with_action": int((mine["actions"] > 0).sum())})
    return pd.DataFrame(rows, columns=COLUMNS)
