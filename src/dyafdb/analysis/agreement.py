"""Judge agreement (Table 8): main vs second judge, and both against human labels.

Labels are compared per (archetype, measure) over the seats both sources labelled:

- exact match: the share of seats with the same label (case and spacing ignored). Times (role
  entry/exit) match when both say "none" or both give times within ``TIME_TOLERANCE_S``; prices
  match when both are "none" or the same number.
- Spearman's rho on the ordered role-adherence labels no < partly < yes.
- Conversation-level answers (final choice, landed option, agreed price, asked, agreement) count
  once per conversation.
- Cells: the judged task-score matrices (T1-1, T1-2, T2, T4-1, and T4-3/T4-4 when present) are
  recomputed with each judge; ``mean_abs_diff`` is the mean cell difference and ``same_order``
  whether the models' averages rank the models the same way.

Human labels come from a CSV with columns ``rater, conversation_id, side (or seat), measure,
label``; side is the scenario side ``a``/``b``. Several raters per seat are reduced by majority
vote. A tie on the ordered adherence scale takes the median vote (the lower of the two middle
ones); a tie elsewhere has no majority, and the seat is left out (counted in ``ties``). The raters'
own agreement is the exact match of every pair of raters over the seats both labelled.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.io import read_delimited
from dyafdb.analysis.runs import CONVERSATION_LEVEL, build_runs, at_window
from dyafdb.analysis.settings import Settings
from dyafdb.analysis.tables import score_matrix
from dyafdb.errors import InputError

TIME_TOLERANCE_S = 2.0
TIME_MEASURES = (C.ROLE_ENTRY, C.ROLE_EXIT)
NUMBER_MEASURES = (C.AGREED_PRICE,)
JUDGED_TASKS = ("T1-1", "T1-2", "T2", "T4-1", "T4-3", "T4-4")
COLUMNS = ["comparison", "archetype", "measure", "n", "exact_match", "spearman_rho", "mean_abs_diff", "same_order",
           "ties", "note"]
HUMAN_COLUMNS = ("rater", "conversation_id", "measure", "label")


def normalise(label: str) -> str:
    text = str(label).strip().lower()
    return "none" if text in C.NONE_LABELS else text


def labels_match(measure: str, x: pd.Series, y: pd.Series) -> np.ndarray:
    x, y = x.map(normalise), y.map(normalise)
    if measure in TIME_MEASURES or measure in NUMBER_MEASURES:
        xn, yn = pd.to_numeric(x, errors="coerce"), pd.to_numeric(y, errors="coerce")
        tol = TIME_TOLERANCE_S if measure in TIME_MEASURES else 1e-9
        both_none = (x == "none") & (y == "none")
        close = (xn - yn).abs() <= tol
        return (both_none | close.fillna(False)).to_numpy()
    return (x == y).to_numpy()


def rho(measure: str, x: pd.Series, y: pd.Series) -> float:
    if measure != C.ROLE_ADHERENCE:
        return np.nan
    xs, ys = x.map(normalise).map(C.ADHERENCE_SCALE), y.map(normalise).map(C.ADHERENCE_SCALE)
    ok = xs.notna() & ys.notna()
    if ok.sum() < 2 or xs[ok].nunique() < 2 or ys[ok].nunique() < 2:
        return np.nan
    from scipy.stats import spearmanr  # scipy.stats takes a second to import; only this needs it

    return float(spearmanr(xs[ok], ys[ok]).statistic)


def judge_labels(measures: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One label per (conversation, side, measure) from ``judge``; conversation-level ones once."""
    m = measures[(measures[C.JUDGE] == judge) & measures[C.MEASURE].isin(C.JUDGE_LABEL_MEASURES)]
    m = m.drop_duplicates([C.CONVERSATION, C.SIDE, C.MEASURE], keep="last")
    conv_level = m[C.MEASURE].isin(CONVERSATION_LEVEL)
    m = pd.concat([m[~conv_level], m[conv_level].sort_values(C.SIDE).drop_duplicates([C.CONVERSATION, C.MEASURE])])
    # the judge's own words where the table keeps them (a candidate, "none"), else the value
    label = m[C.LABEL].where(m[C.LABEL] != "", m[C.VALUE])
    label = label.where(m[C.MEASURE] != C.ROLE_ADHERENCE, label.str.lower().map(C.ADHERENCE_LABELS).fillna(label))
    out = m[[C.CONVERSATION, C.SIDE, C.ARCHETYPE, C.MEASURE]].assign(label=label)
    # an off-label reply is no answer: nothing to agree or disagree with
    return out[(out["label"] != "") & (out["label"].str.lower() != "invalid")]


def compare(left: pd.DataFrame, right: pd.DataFrame, name: str, by_side: bool = True) -> list[dict]:
    keys = [C.CONVERSATION, C.SIDE, C.MEASURE] if by_side else [C.CONVERSATION, C.MEASURE]
    joined = left.merge(right[keys + ["label"]], on=keys, suffixes=("_l", "_r"))
    rows = []
    for (arch, measure), g in joined.groupby([C.ARCHETYPE, C.MEASURE], sort=True):
        match = labels_match(measure, g["label_l"], g["label_r"])
        rows.append({"comparison": name, "archetype": arch, "measure": measure, "n": len(g),
                     "exact_match": float(match.mean()), "spearman_rho": rho(measure, g["label_l"], g["label_r"]),
                     "mean_abs_diff": np.nan, "same_order": None, "ties": 0, "note": ""})
    return rows


def cell_rows(measures: pd.DataFrame, main: str, second: str, settings: Settings, window: float | None) -> list[dict]:
    a = at_window(build_runs(measures, settings, main), window)
    b = at_window(build_runs(measures, settings, second), window)
    rows, diffs = [], []
    for task in JUDGED_TASKS:
        if task not in set(a["task"]):
            continue
        ma, mb = score_matrix(a, task, settings), score_matrix(b, task, settings)
        d = (ma.values - mb.values.reindex_like(ma.values)).abs().to_numpy().ravel()
        d = d[~np.isnan(d)]
        if not len(d):
            continue
        diffs.extend(d)
        order_a = ma.row_avg.dropna().sort_values(ascending=False, kind="stable").index.tolist()
        order_b = mb.row_avg.reindex(order_a).dropna().sort_values(ascending=False, kind="stable").index.tolist()
        rows.append({"comparison": f"{main} vs {second}: cells", "archetype": task, "measure": "score", "n": len(d),
                     "exact_match": np.nan, "spearman_rho": np.nan, "mean_abs_diff": float(d.mean()),
                     "same_order": order_a == order_b, "ties": 0, "note": "cells of the task-score matrix"})
    if diffs:
        rows.append({"comparison": f"{main} vs {second}: cells", "archetype": "all", "measure": "score", "n": len(diffs),
                     "exact_match": np.nan, "spearman_rho": np.nan, "mean_abs_diff": float(np.mean(diffs)),
                     "same_order": all(r["same_order"] for r in rows), "ties": 0, "note": "all judged cells"})
    return rows


def read_human_labels(path: Path, key: Path | None = None) -> pd.DataFrame:
    """Human labels, one row per rater and seat; validated with messages naming the column and fix.

    The blind annotation page exports items by opaque token (column ``item``); ``key`` (the key file
    beside the site, :mod:`dyafdb.viewer.study`) maps them back to conversations.
    """
    if not path.exists():
        raise InputError(f"{path}: human labels file not found; set analysis.human_labels to the CSV the annotation page exports, or remove it")
    frame = read_delimited(path, "human labels file", "export it again from the annotation page", sep=",",
                           dtype=str, keep_default_na=False)
    frame.columns = [c.strip().lower() for c in frame.columns]
    if "conversation_id" not in frame.columns and "item" in frame.columns:
        from dyafdb.analysis.annotation_key import token_maps

        if key is None:
            raise InputError(f"{path}: labels name items by token; the annotation key is needed to read them (analysis.annotation_key)")
        tokens = token_maps(key)
        unknown = sorted(set(frame["item"]) - set(tokens))
        if unknown:
            raise InputError(f"{path}: item(s) {', '.join(unknown[:3])} are not in the annotation key {key}; "
                             "these labels belong to another study (use that site's key)")
        frame["conversation_id"] = frame["item"].map(tokens)
    if "side" not in frame.columns and "seat" in frame.columns:
        frame = frame.rename(columns={"seat": "side"})
    missing = [c for c in (*HUMAN_COLUMNS, "side") if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: human labels lack column(s) {', '.join(missing)}; "
                         "expected rater, conversation_id, side (or seat), measure, label")
    frame["side"] = frame["side"].str.strip().str.lower()
    bad = sorted(set(frame["side"]) - {"a", "b"})
    if bad:
        raise InputError(f"{path}: column side holds {bad!r}; use the scenario side, 'a' or 'b'")
    frame["label"] = frame["label"].map(normalise)
    empty = frame["label"] == ""
    return frame[~empty].rename(columns={"side": C.SIDE, "conversation_id": C.CONVERSATION, "measure": C.MEASURE})


def majority(labels: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Majority label per seat and measure; returns (labels, number of seats left out for ties)."""
    out, ties = [], 0
    for (conv, side, measure), g in labels.groupby([C.CONVERSATION, C.SIDE, C.MEASURE], sort=True):
        counts = g["label"].value_counts()
        top = counts[counts == counts.max()].index.tolist()
        if len(top) == 1:
            label = top[0]
        elif measure == C.ROLE_ADHERENCE and all(v in C.ADHERENCE_SCALE for v in g["label"]):
            ranks = sorted(C.ADHERENCE_SCALE[v] for v in g["label"])
            median = ranks[(len(ranks) - 1) // 2]
            label = next(k for k, v in C.ADHERENCE_SCALE.items() if v == median)
        else:
            ties += 1
            continue
        out.append({C.CONVERSATION: conv, C.SIDE: side, C.MEASURE: measure, "label": label, "raters": len(g)})
    return pd.DataFrame(out, columns=[C.CONVERSATION, C.SIDE, C.MEASURE, "label", "raters"]), ties


def rater_pairs(labels: pd.DataFrame) -> list[dict]:
    rows = []
    keyed = labels.drop_duplicates(["rater", C.CONVERSATION, C.SIDE, C.MEASURE], keep="last")
    for r1, r2 in itertools.combinations(sorted(keyed["rater"].unique()), 2):
        a = keyed[keyed["rater"] == r1]
        b = keyed[keyed["rater"] == r2]
        j = a.merge(b, on=[C.CONVERSATION, C.SIDE, C.MEASURE], suffixes=("_l", "_r"))
        for measure, g in j.groupby(C.MEASURE):
            rows.append({"comparison": f"rater {r1} vs rater {r2}", "archetype": "all", "measure": measure,
                         "n": len(g), "exact_match": float(labels_match(measure, g["label_l"], g["label_r"]).mean()),
                         "spearman_rho": rho(measure, g["label_l"], g["label_r"]), "mean_abs_diff": np.nan,
                         "same_order": None, "ties": 0, "note": ""})
    return rows


def agreement_table(measures: pd.DataFrame, settings: Settings, main: str | None, second: str | None,
                    window: float | None, human: Path | None = None) -> pd.DataFrame:
    rows: list[dict] = []
    main_labels = judge_labels(measures, main) if main else None
    second_labels = judge_labels(measures, second) if second else None
    if main_labels is not None and second_labels is not None:
        rows += compare(main_labels, second_labels, f"{main} vs {second}")
        rows += cell_rows(measures, main, second, settings, window)
    if human is not None:
        labels = read_human_labels(human, settings.annotation_key)
        voted, ties = majority(labels)
        arch = measures.drop_duplicates(C.CONVERSATION).set_index(C.CONVERSATION)[C.ARCHETYPE]
        voted[C.ARCHETYPE] = voted[C.CONVERSATION].map(arch).fillna("?")
        for name, judged in ((main, main_labels), (second, second_labels)):
            if judged is None:
                continue
            # a conversation-level answer is compared on whichever side the humans labelled
            j = judged.copy()
            conv = j[C.MEASURE].isin(CONVERSATION_LEVEL)
            exp = pd.concat([j[~conv], j[conv].assign(**{C.SIDE: "a"}), j[conv].assign(**{C.SIDE: "b"})])
            found = compare(voted, exp, f"{name} vs human majority")
            for r in found:
                r["ties"] = ties
            rows += found
        pairs = rater_pairs(labels)
        rows += pairs
        for measure in sorted({r["measure"] for r in pairs}):
            em = [r["exact_match"] for r in pairs if r["measure"] == measure]
            rows.append({"comparison": "raters pairwise (range)", "archetype": "all", "measure": measure,
                         "n": len(em), "exact_match": float(np.mean(em)), "spearman_rho": np.nan,
                         "mean_abs_diff": np.nan, "same_order": None, "ties": ties,
                         "note": f"min {min(em):.3f}, max {max(em):.3f} over {len(em)} rater pairs"})
    return pd.DataFrame(rows, columns=COLUMNS)
