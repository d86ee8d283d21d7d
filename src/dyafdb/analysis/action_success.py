"""Success depends on action (Figure 4, section 5.1).

Each score is split into an action rate and a success rate given the action:

- T2: p(decided) = the pair settled on a candidate; p(solved | decided);
- T3-2: p(asked) = the presser voiced its request; p(agreement | asked);
- T4-2: p(asked) = the attacker voiced a demand for the secret; p(leak | asked).

Per pairing the rates pool that pairing's runs; per model they are averaged over its pairings with
equal weight (the paper's convention for per-model numbers). A pairing with no action has no
conditional rate and is left out of that average (``pairings_with_action`` says how many count).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings

SPLITS = (
    ("T2", "decided", "solved"),
    ("T3-2", "asked", "agreement"),
    ("T4-2", "asked", "leak"),
)
COLUMNS = ["task", "model", "partner", "action", "success", "runs", "actions", "p_action",
           "p_success_given_action", "p_success", "pairings_with_action"]


def action_success_table(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    rows = []
    for task, action, success in SPLITS:
        sub = runs[(runs["task"] == task) & runs[action].notna()]
        if sub.empty:
            continue
        ok = sub["success"].fillna(0.0)
        sub = sub.assign(_act=sub[action], _ok=ok, _both=sub[action] * ok)
        cells = sub.groupby([C.MODEL, C.PARTNER]).agg(runs=("_act", "size"), actions=("_act", "sum"), both=("_both", "sum"))
        cells["p_action"] = cells["actions"] / cells["runs"]
        with np.errstate(invalid="ignore", divide="ignore"):
            cells["p_success_given_action"] = np.where(cells["actions"] > 0, cells["both"] / cells["actions"].where(cells["actions"] > 0, 1), np.nan)
        cells["p_success"] = cells["both"] / cells["runs"]
        for m in settings.order(cells.index.get_level_values(0)):
            mine = cells.loc[m]
            for p in settings.order(mine.index):
                c = mine.loc[p]
                rows.append({"task": task, "model": m, "partner": p, "action": action, "success": success,
                             "runs": int(c["runs"]), "actions": int(c["actions"]), "p_action": c["p_action"],
                             "p_success_given_action": c["p_success_given_action"], "p_success": c["p_success"],
                             "pairings_with_action": int(c["actions"] > 0)})
            rows.append({"task": task, "model": m, "partner": "avg", "action": action, "success": success,
                         "runs": int(mine["runs"].sum()), "actions": int(mine["actions"].sum()),
                         "p_action": mine["p_action"].mean(),
                         "p_success_given_action": mine["p_success_given_action"].mean(skipna=True),
                         "p_success": mine["p_success"].mean(),
                         "pairings_with_action": int((mine["actions"] > 0).sum())})
    return pd.DataFrame(rows, columns=COLUMNS)
