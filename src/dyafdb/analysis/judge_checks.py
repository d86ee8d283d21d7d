"""The judge's calibration, per judge and question: how its labels spread and how many failed a check.

One row per (judge, archetype, measure the judge chose, i.e. ``columns.JUDGE_LABEL_MEASURES``),
counting answers (conversation-level answers once per conversation, seat answers once per seat):

- ``answers``: answers given (invalid replies included), ``invalid``: off-label replies;
- ``spread``: the labels and how often each was given, most frequent first; a time or a price
  counts as "a time" / "a number" (the exact values are in measures.tsv);
- ``failed_checks`` and ``contradictions``: answers that failed a check of
  :mod:`dyafdb.judge.checks` (voided: counted as none) and answers flagged as contradicting
  another answer of the same judge; ``reasons`` names them with their counts;
- ``counted``, ``as_none``, ``left_out``: what the answer policy (:mod:`dyafdb.analysis.answers`, the
  one every table, the viewer and summary.md apply) made of these answers;
- ``note``: why a constant column reads as it does, e.g. "the judge answered 'none' 8 of 8".
"""

from __future__ import annotations

import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.answers import AS_NONE, COUNT, FAILED_CHECK, LEAVE_OUT, AnswerPolicy, _accepted, classify

COLUMNS = ["judge", "archetype", "measure", "answers", "invalid", "spread", "failed_checks", "contradictions",
           "reasons", "counted", "as_none", "left_out", "note"]
TIME_MEASURES = (C.ROLE_ENTRY, C.ROLE_EXIT)
# measures answered once per conversation (written on both sides' rows)
_CONVERSATION_LEVEL = (C.FINAL_CHOICE, C.ASKED, C.AGREEMENT, C.LANDED_OPTION, C.LANDED_LINE, C.AGREED_PRICE)


def _bucket(measure: str, label: str) -> str:
    low = label.strip().lower()
    if low in ("", "invalid", "none"):
        return low or "(empty)"
    if measure in TIME_MEASURES:
        return "a time"
    if measure == C.AGREED_PRICE:
        return "a number"
    return C.ADHERENCE_LABELS.get(low, label) if measure == C.ROLE_ADHERENCE else label


def judge_checks_table(measures: pd.DataFrame, policy: AnswerPolicy | None = None) -> pd.DataFrame:
    policy = policy or AnswerPolicy.default()
    measures = _accepted(measures)
    m = measures[(measures[C.JUDGE] != "") & measures[C.MEASURE].isin(C.JUDGE_LABEL_MEASURES)]
    m = m.drop_duplicates([C.JUDGE, C.CONVERSATION, C.SIDE, C.MEASURE], keep="last")
    conv_level = m[C.MEASURE].isin(_CONVERSATION_LEVEL)
    m = pd.concat([m[~conv_level], m[conv_level].sort_values(C.SIDE).drop_duplicates([C.JUDGE, C.CONVERSATION, C.MEASURE])])
    rows = []
    for (judge, archetype, measure), g in m.groupby([C.JUDGE, C.ARCHETYPE, C.MEASURE], sort=True):
        labels = g[C.LABEL].where(g[C.LABEL] != "", g[C.VALUE])
        buckets = [_bucket(measure, str(x)) for x in labels]
        counts = pd.Series(buckets).value_counts()
        counts = counts.sort_values(ascending=False, kind="stable")
        reasons = g[C.CHECK][g[C.CHECK] != ""]
        kinds = [classify(str(lab).lower() != "invalid", chk)[0] for lab, chk in zip(g[C.LABEL], g[C.CHECK])]
        fates = [policy.fate(k) for k in kinds]
        voided = sum(k == FAILED_CHECK for k in kinds)
        note = ""
        if len(counts) == 1 and len(g) > 1:
            note = f"the judge answered '{counts.index[0]}' {len(g)} of {len(g)}"
        rows.append({
            "judge": judge, "archetype": archetype, "measure": measure, "answers": len(g),
            "invalid": int(sum(b == "invalid" for b in buckets)),
            "spread": ", ".join(f"{k} {v}" for k, v in counts.items()),
            "failed_checks": voided, "contradictions": int(len(reasons) - voided),
            "reasons": ", ".join(f"{k} {v}" for k, v in reasons.value_counts().items()),
            "counted": fates.count(COUNT), "as_none": fates.count(AS_NONE), "left_out": fates.count(LEAVE_OUT),
            "note": note,
        })
    return pd.DataFrame(rows, columns=COLUMNS)
