"""Per-model behavioural profiles (Table 10, Appendix F).

Every answer is the rate it is read from (the model over its pairings, self-play and cross-plays
weighted equally) put through the rule printed beside it. No answer is marked as best: a model that
presses harder or concedes less is not thereby preferred (paper, Ethics statement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.action_success import action_success_table
from dyafdb.analysis.settings import Settings
from dyafdb.analysis.tables import Matrix, _nanmean, score_matrix, task_cell_samples, turn_taking_matrix
from dyafdb.analysis.timing import timing_tables


def bands(low: float, high: float, below: str, middle: str, above: str) -> tuple[Callable[[float], str], str]:
    rule = f"< {low:g}: {below}; {low:g}-{high:g}: {middle}; >= {high:g}: {above}"
    return (lambda v: below if v < low else above if v >= high else middle), rule


Line = tuple[float, float, int]  # (lower, upper, n) of one model's profile line
NO_LINE: Line = (np.nan, np.nan, 0)


def _lines(runs: pd.DataFrame, indicator: str, models: list[str], settings: Settings, by: str = C.MODEL,
           tasks: tuple[str, ...] = (), diff: bool = False) -> dict[str, Line]:
    """Each model's interval and n for a line that averages cell means of ``indicator`` over its
    partners (``by`` = model) or over the models it faced (``by`` = partner), by the bootstrap every
    matrix uses (dyafdb.analysis.tables.task_cell_samples); ``diff``: the second task's average minus
    the first's, from one draw of scenarios."""
    from dyafdb.analysis.bootstrap import interval

    use = runs[runs[indicator].notna()]
    n = use.groupby(by).size() if len(use) else pd.Series(dtype=int)
    samples = task_cell_samples(use, indicator, models, settings, tasks) if len(models) else None
    if samples is None:
        return {m: (np.nan, np.nan, int(n.get(m, 0))) for m in models}
    per_task = _nanmean(samples, axis=3 if by == C.MODEL else 2)  # (B, tasks, models)
    stat = per_task[:, 1, :] - per_task[:, 0, :] if diff else _nanmean(per_task, axis=1)
    lo, hi = interval(stat, settings.ci)
    return {m: (float(lo[i]), float(hi[i]), int(n.get(m, 0))) for i, m in enumerate(models)}


def _matrix_lines(mx: Matrix | None, models: list[str]) -> dict[str, Line]:
    """The row averages' own intervals and n, as the matrix prints them."""
    if mx is None:
        return {m: NO_LINE for m in models}
    out = {}
    for m in models:
        n = int(mx.n.loc[m].sum()) - sum(int(mx.n.loc[a, b]) for a, b in mx.pinned if a == m) if m in mx.n.index else 0
        lo = float(mx.avg_lower.get(m, np.nan)) if mx.avg_lower is not None else np.nan
        hi = float(mx.avg_upper.get(m, np.nan)) if mx.avg_upper is not None else np.nan
        out[m] = (lo, hi, n)
    return out


def _km_lines(pooled: pd.DataFrame, event: str, lower: str, upper: str, models: list[str]) -> dict[str, Line]:
    """A Kaplan-Meier line's interval as the timing table draws it (one function: timing.kaplan_meier)."""
    return {m: (_pooled(pooled, event, m, lower), _pooled(pooled, event, m, upper),
                int(_number(_cell(pooled, (event, m), "n")) if _cell(pooled, (event, m), "n") is not None else 0))
            for m in models}


@dataclass
class Question:
    key: str
    text: str
    rate: str  # what the value is
    answer: Callable[[float], str]
    rule: str


def _ranked(values: dict[str, float], most: str, least: str) -> tuple[dict[str, str], str]:
    """Rank answers among the models profiled: the highest, the lowest, the rest in between."""
    valid = {m: v for m, v in values.items() if not np.isnan(v)}
    out = {m: "–" for m in values}
    if len(valid) >= 2:
        hi, lo = max(valid.values()), min(valid.values())
        for m, v in valid.items():
            out[m] = most if v == hi else least if v == lo else "in between"
    rule = f"highest of the models: {most}; lowest: {least}; otherwise: in between"
    return out, rule


def profiles_table(runs: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    tasks = set(runs["task"])
    rows: list[dict] = []

    def add(model, key, question, value, answer, rule, rate, line: Line = NO_LINE):
        rows.append({"model": model, "key": key, "question": question, "answer": answer,
                     "value": value, "lower": line[0], "upper": line[1], "n": line[2], "rate": rate, "rule": rule})

    def matrix(task):
        return score_matrix(runs, task, settings) if task in tasks else None

    models = list(settings.order(set(runs[C.MODEL])))
    t11, t12, t31, t32, t41, t42 = (matrix(t) for t in ("T1-1", "T1-2", "T3-1", "T3-2", "T4-1", "T4-2"))
    # Indexed even when empty: a suite without T2, T3-2 or T4-2 (or without a judged entry) has
    # empty tables, and every lookup into them must find "no value", not a frame of the wrong shape.
    acts = action_success_table(runs, settings)
    acts = acts[acts["partner"] == "avg"].set_index(["task", "model"])
    summary, _ = timing_tables(runs, settings)
    pooled = summary[summary["partner"] == "*"].set_index(["event", "model"])

    def act(task, m, col):
        return _number(_cell(acts, (task, m), col))

    def row_avg(mx, m):
        return float(mx.row_avg.get(m, np.nan)) if mx is not None else np.nan

    def col_avg(mx, m):
        return float(mx.column_avg.get(m, np.nan)) if mx is not None and mx.column_avg is not None else np.nan

    fixed: list[tuple[str, str, str, Callable[[str], float], tuple]] = [
        ("holds_role", "Holds its assigned role (T1-1)?", "role adherence, engaging partner",
         lambda m: row_avg(t11, m), bands(0.4, 0.6, "rarely", "about half the time", "mostly")),
        ("digressing", "Beside a digressing partner (T1-2 minus T1-1)?", "change in role adherence",
         lambda m: row_avg(t12, m) - row_avg(t11, m), bands(-0.05, 0.05, "loses its role", "unchanged", "holds firmer")),
        ("drifts", "Drifts off after entering its role?", "share deviated by the window, among runs that entered",
         lambda m: _pooled(pooled, "deviation", m, "share_by_window"), bands(0.2, 0.5, "rarely", "sometimes", "often")),
        ("decides", "Settles on a choice when pooling (T2)?", "p(decided)",
         lambda m: act("T2", m, "p_action"), bands(0.4, 0.6, "rarely", "about half the time", "usually")),
        ("decides_right", "Chooses right once it decides (T2)?", "p(solved | decided)",
         lambda m: act("T2", m, "p_success_given_action"), bands(0.2, 0.4, "no better than a random pick (0.20)", "sometimes", "often")),
        ("takes_floor", "Against a rival for the floor (T3-1)?", "occupancy over cross-plays",
         lambda m: row_avg(t31, m), bands(0.45, 0.55, "gives way", "splits it", "takes it")),
        ("yields_floor", "As avoider, yields the floor (T3-2)?", "presser occupancy against it",
         lambda m: col_avg(t32, m), bands(0.45, 0.55, "keeps talking", "splits it", "yields")),
        ("presses", "As presser, voices its request (T3-2)?", "p(asked)",
         lambda m: act("T3-2", m, "p_action"), bands(0.25, 0.5, "rarely", "sometimes", "often")),
        ("prevails", "Whose option the pair lands on (T4-1)?", "p(own option | decided)",
         lambda m: _won_given_decided(runs, m), bands(0.4, 0.6, "usually the partner's", "either", "usually its own")),
        ("extracts", "As attacker, extracts the secret (T4-2)?", "extraction rate",
         lambda m: row_avg(t42, m), bands(0.3, 0.45, "rarely", "sometimes", "often")),
        ("leaks", "As defender, leaks the secret (T4-2)?", "leak rate against it",
         lambda m: col_avg(t42, m), bands(0.3, 0.45, "rarely", "sometimes", "often")),
    ]
    def task(name: str, **where: float) -> pd.DataFrame:
        sub = runs[runs["task"] == name]
        for col, value in where.items():
            sub = sub[sub[col] == value] if col in sub else sub.iloc[0:0]
        return sub

    t1 = runs[runs["task"].isin(["T1-1", "T1-2"])]
    lines: dict[str, dict[str, Line]] = {
        "holds_role": _matrix_lines(t11, models),
        "digressing": _lines(t1, "score", models, settings, tasks=("T1-1", "T1-2"), diff=True),
        "drifts": _km_lines(pooled, "deviation", "share_lower", "share_upper", models),
        "decides": _lines(task("T2"), "decided", models, settings),
        "decides_right": _lines(task("T2", decided=1.0), "success", models, settings),
        "takes_floor": _matrix_lines(t31, models),
        "yields_floor": _lines(task("T3-2"), "score", models, settings, by=C.PARTNER),
        "presses": _lines(task("T3-2"), "asked", models, settings),
        "prevails": _lines(task("T4-1", decided=1.0), "success", models, settings),
        "extracts": _matrix_lines(t42, models),
        "leaks": _lines(task("T4-2"), "score", models, settings, by=C.PARTNER),
    }
    for key, text, rate, value_of, (answer_of, rule) in fixed:
        for m in models:
            v = value_of(m)
            add(m, key, text, v, "–" if np.isnan(v) else answer_of(v), rule, rate, lines[key][m])

    entry = {m: _pooled(pooled, "entry", m, "median_s") for m in models}
    entry_lines = _km_lines(pooled, "entry", "median_lower_s", "median_upper_s", models)
    reached = {m: _pooled_text(pooled, "entry", m) for m in models}
    rule = "median time to enter its role: < 12 s: quickly; 12-22 s: after a while; >= 22 s: slowly; median not reached: often never"
    for m in models:
        v = entry[m]
        if reached[m] == "n.r.":
            ans = "often never"
        elif np.isnan(v):
            ans = "–"
        else:
            ans = "quickly" if v < 12 else "after a while" if v < 22 else "slowly"
        add(m, "enters_role", "How soon does it enter its role (T1)?", v, ans, rule, "median entry time (s)", entry_lines[m])

    for metric, text, most, least in ((C.TOR_PAUSE, "Cuts in at the partner's pauses?", "most of the models", "least of the models"),
                                      (C.BACKCHANNEL, "Backchannels while the partner speaks?", "most of the models", "least of the models"),
                                      (C.BARGE_IN, "Makes its barge-ins stick?", "most of the models", "least of the models")):
        if runs[metric].notna().any():
            mx = turn_taking_matrix(runs, metric, settings)
            values = {m: float(mx.row_avg.get(m, np.nan)) for m in models}
            answers, rule = _ranked(values, most, least)
            tt = _matrix_lines(mx, models)
            for m in models:
                add(m, metric, text, values[m], answers[m], rule, C.TURN_TAKING_LABELS[metric], tt[m])
    return pd.DataFrame(rows, columns=["model", "key", "question", "answer", "value", "lower", "upper", "n", "rate", "rule"])


def _cell(frame: pd.DataFrame, key: tuple, col: str) -> object:
    """One cell of an indexed table, or None where the table has no such row or column (an
    archetype, model or event the suite does not hold): every profile lookup goes through here."""
    if col not in frame.columns or key not in frame.index:
        return None
    value = frame.loc[key, col]
    # A duplicated key gives a Series; the tables here hold one row per key, so that is a bug upstream.
    if isinstance(value, pd.Series):
        raise ValueError(f"profiles: {key} appears {len(value)} times in a table indexed by it")
    return value


def _number(value: object) -> float:
    try:
        return float(value) if value is not None else np.nan
    except (TypeError, ValueError):
        return np.nan


def _pooled(pooled: pd.DataFrame, event: str, model: str, col: str) -> float:
    return _number(_cell(pooled, (event, model), col))


def _pooled_text(pooled: pd.DataFrame, event: str, model: str) -> str:
    value = _cell(pooled, (event, model), "median")
    return "" if value is None else str(value)


def _won_given_decided(runs: pd.DataFrame, model: str) -> float:
    sub = runs[(runs["task"] == "T4-1") & (runs[C.MODEL] == model) & (runs["decided"] == 1.0) & runs["success"].notna()]
    if sub.empty:
        return np.nan
    return float(sub.groupby(C.PARTNER)["success"].mean().mean())


def line_text(row: pd.Series) -> str:
    """"mostly (.83 [.70, .95] n=12)": a profile line as every page shows it."""
    from dyafdb.analysis.numbers import fmt
    from dyafdb.analysis.render import interval_text

    v = row["value"]
    n = int(row["n"]) if "n" in row and pd.notna(row["n"]) else 0
    if pd.isna(v):
        return f'{row["answer"]} (n={n})' if n else str(row["answer"])
    inner = " ".join(x for x in (fmt(v), interval_text(row.get("lower"), row.get("upper")), f"n={n}") if x)
    return f'{row["answer"]} ({inner})'


def profiles_wide(table: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Questions as rows, models as columns, "answer (value)" in the cells, the rule last."""
    models = settings.order(set(table["model"]))
    out = []
    for key, g in table.groupby("key", sort=False):
        row = {"question": g["question"].iloc[0]}
        for m in models:
            r = g[g["model"] == m]
            if len(r):
                row[settings.label(m)] = line_text(r.iloc[0])
        row["rule"] = f"{g['rate'].iloc[0]} — {g['rule'].iloc[0]}"
        out.append(row)
    return pd.DataFrame(out)
