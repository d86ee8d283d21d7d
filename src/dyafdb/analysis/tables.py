"""Score matrices: model (row) against partner (column), per-model averages and the paper's column averages.

Tables 3-5 and Appendix G. A cell is the mean over the runs of that pairing from the row model's
perspective (runs.py says which sides count). Averages are means of cells, each partner weighted
equally, as the paper reports them: the row average is the model's score over its pairings; the
bottom row of an asymmetric archetype averages each column, i.e. the opposing role (avoider,
defender, payer, buyer). T3-1's averages leave out the pinned self-play cell, which holds no
information (the paper's T3-1 averages are means of the two cross cells).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.answers import coverage_note, mechanical_note
from dyafdb.analysis.settings import Settings
from dyafdb.schema_check import schema_default
from dyafdb.text_pairing.archetypes import table9_reads

AVG = "avg"


@dataclass
class Matrix:
    """One score matrix with its averages; ``to_frame`` is the TSV, ``from_frame`` reads it back."""

    name: str
    title: str
    models: list[str]
    partners: list[str]
    values: pd.DataFrame  # models x partners
    n: pd.DataFrame  # runs behind each cell (decided runs for T4-3/T4-4)
    runs: pd.DataFrame | None = None  # all runs behind each cell when n counts decided runs only
    row_avg: pd.Series = field(default_factory=pd.Series)
    column_label: str | None = None
    column_avg: pd.Series | None = None
    pinned: set[tuple[str, str]] = field(default_factory=set)
    note: str = ""
    filters: dict[str, str] = field(default_factory=dict)  # the viewer index filter of its conversations
    lower: pd.DataFrame | None = None  # the cells' interval (scenario-cluster bootstrap), None when off
    upper: pd.DataFrame | None = None
    avg_lower: pd.Series | None = None  # the row averages' interval
    avg_upper: pd.Series | None = None

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for m in self.models:
            row = {"row": m, **{p: self.values.loc[m, p] for p in self.partners}, AVG: self.row_avg.get(m, np.nan)}
            row.update({f"n:{p}": int(self.n.loc[m, p]) for p in self.partners})
            if self.lower is not None:
                row.update({f"lo:{p}": self.lower.loc[m, p] for p in self.partners})
                row.update({f"hi:{p}": self.upper.loc[m, p] for p in self.partners})
                row["avg_lo"], row["avg_hi"] = self.avg_lower.get(m, np.nan), self.avg_upper.get(m, np.nan)
            if self.runs is not None:
                row.update({f"runs:{p}": int(self.runs.loc[m, p]) for p in self.partners})
            row["pinned"] = ",".join(p for p in self.partners if (m, p) in self.pinned)
            row["note"] = self.note if not rows else ""
            rows.append(row)
        if self.column_avg is not None and self.models:
            rows.append({"row": self.column_label, **{p: self.column_avg.get(p, np.nan) for p in self.partners}})
        columns = ["row", *self.partners, AVG, *[f"n:{p}" for p in self.partners],
                   *([*(f"lo:{p}" for p in self.partners), *(f"hi:{p}" for p in self.partners), "avg_lo", "avg_hi"]
                     if self.lower is not None else []),
                   *([f"runs:{p}" for p in self.partners] if self.runs is not None else []), "pinned", "note"]
        frame = pd.DataFrame(rows, columns=columns)
        frame.attrs["title"] = self.title
        return frame

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, name: str = "", title: str = "") -> "Matrix":
        partners = [c for c in frame.columns if c not in ("row", AVG, "pinned", "note", "avg_lo", "avg_hi") and ":" not in c]
        note = ""
        if "note" in frame.columns:
            notes = [str(x) for x in frame["note"] if isinstance(x, str) and x]
            note = notes[0] if notes else ""
        if not partners or frame.empty:
            empty = pd.DataFrame()
            return cls(name=name, title=title, models=[], partners=[], values=empty, n=empty, note=note)
        body = frame[frame[f"n:{partners[0]}"].notna()] if partners else frame
        bottom = frame[frame[f"n:{partners[0]}"].isna()] if partners else frame.iloc[0:0]
        models = list(body["row"])
        values = body.set_index("row")[partners].astype(float)
        n = body.set_index("row")[[f"n:{p}" for p in partners]].set_axis(partners, axis=1).astype(int)
        runs = None
        if f"runs:{partners[0]}" in frame.columns if partners else False:
            runs = body.set_index("row")[[f"runs:{p}" for p in partners]].set_axis(partners, axis=1).astype(int)
        pinned = {(m, p) for m, s in zip(body["row"], body.get("pinned", pd.Series("", index=body.index)).fillna(""))
                  for p in str(s).split(",") if p}
        col_label = col_avg = None
        if len(bottom):
            col_label = str(bottom["row"].iloc[0])
            col_avg = bottom.iloc[0][partners].astype(float)
        bounds: dict[str, Any] = {}
        if f"lo:{partners[0]}" in frame.columns:
            b = body.set_index("row")
            bounds = {"lower": b[[f"lo:{p}" for p in partners]].set_axis(partners, axis=1).astype(float),
                      "upper": b[[f"hi:{p}" for p in partners]].set_axis(partners, axis=1).astype(float),
                      "avg_lower": b["avg_lo"].astype(float), "avg_upper": b["avg_hi"].astype(float)}
        return cls(name=name, title=title, models=models, partners=partners, values=values, n=n, runs=runs,
                   row_avg=body.set_index("row")[AVG].astype(float), column_label=col_label, column_avg=col_avg,
                   pinned=pinned, note=note, **bounds)


def _order(runs: pd.DataFrame, settings: Settings) -> list[str]:
    return settings.order(set(runs[C.MODEL]) | set(runs[C.PARTNER]))


def cell_frame(runs: pd.DataFrame, indicator: str) -> pd.DataFrame:
    """Mean and count of ``indicator`` per (model, partner) over runs where it is defined."""
    valid = runs[runs[indicator].notna()]
    g = valid.groupby([C.MODEL, C.PARTNER])[indicator]
    return pd.DataFrame({"mean": g.mean(), "n": g.size()})


def _square(cells: pd.DataFrame, col: str, models: list[str], fill) -> pd.DataFrame:
    wide = cells[col].unstack(C.PARTNER) if len(cells) else pd.DataFrame()
    return wide.reindex(index=models, columns=models).fillna(fill) if fill is not None else wide.reindex(index=models, columns=models)


def _filters(tasks: list[str], runs: pd.DataFrame, side_a: bool = False) -> dict[str, str]:
    """The viewer index filter of a matrix's conversations: its archetypes, its window and, where only
    side a is scored, the row model on side a."""
    out = {"tasks": ",".join(tasks)}
    windows = sorted(set(runs[C.WINDOW])) if len(runs) else []
    if len(windows) == 1:
        out["window"] = f"{float(windows[0]):g}"
    if side_a:
        out["side"] = "a"
    return out


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def why_constant(values: pd.DataFrame, pinned: set[tuple[str, str]] = frozenset()) -> float | None:
    """The one value every non-pinned cell holds, or None when the cells differ (or there are none)."""
    cells = values.copy()
    for m, p in pinned:
        cells.loc[m, p] = np.nan
    finite = cells.to_numpy(float)[np.isfinite(cells.to_numpy(float))]
    if finite.size < 2 or not np.allclose(finite, finite[0]):
        return None
    return float(finite[0])


def conversations(runs: pd.DataFrame, indicator: str) -> dict[str, int]:
    """How many conversations carry ``indicator`` (``known``) and how many of them hold 0 (``zero``).

    The one count of a conversation-level answer: a cross-play run has a row per side, both carrying
    the pair's answer, so counting rows counts it twice (T2's "none 12 of 12" over 8 answers)."""
    if indicator not in runs:
        return {"known": 0, "zero": 0}
    per_conv = runs.loc[runs[indicator].notna()].groupby(C.CONVERSATION)[indicator].first()
    return {"known": int(len(per_conv)), "zero": int((per_conv == 0.0).sum())}


def score_note(task_runs: pd.DataFrame, task: str, values: pd.DataFrame, pinned: set[tuple[str, str]]) -> str:
    """Why a task matrix is empty or constant, in the runs' own words ("" when it is neither)."""
    from dyafdb.analysis.numbers import fmt

    if task_runs.empty:
        return f"no {task} runs at the main window: nothing to show"
    scored = task_runs[task_runs["score"].notna()]
    if scored.empty:
        decided = conversations(task_runs, "decided")
        if task in C.AMONG_DECIDED and decided["zero"]:
            return f"no run closed a deal ({decided['zero']} of {decided['known']} undecided): no cell"
        return f"no {task} run has a score (every answer invalid or missing)"
    value = why_constant(values, pinned)
    if value is None:
        return ""
    decided = conversations(scored, "decided")
    asked = conversations(scored, "asked")
    if decided["known"] and decided["zero"] == decided["known"]:
        why = f"the judge answered 'none' {decided['zero']} of {decided['known']}"
    elif asked["known"] and asked["zero"] == asked["known"] and value == 0.0:
        why = f"the judge found no request in {asked['zero']} of {asked['known']} conversations"
    else:
        why = f"all {len(scored)} scored {C.UNIT.get(task, 'runs')} are {fmt(value)}"
    return f"every cell is {fmt(value)}: {why}"


def cell_samples(use: pd.DataFrame, indicator: str, models: list[str], settings: Settings,
                 tasks: tuple[str, ...] = ()) -> np.ndarray | None:
    """Bootstrap replicates of every (model, partner) cell mean of ``indicator``, shape (B, models,
    models), by the scenario-cluster bootstrap (dyafdb.analysis.bootstrap.resampled_cluster_means;
    docs/analysis.md "Intervals"); None when ``settings.bootstrap`` is 0 or no run has a value.

    With ``tasks`` a cell is the mean of its per-task means, each task weighted equally (the
    turn-taking and audio-health matrices). Every interval of a matrix cell, a row average and a
    profile line comes from here, with the settings' seed: the same runs give the same draws, so a
    number shown in two places carries the same interval in both."""
    samples = task_cell_samples(use, indicator, models, settings, tasks)
    return None if samples is None else _nanmean(samples, axis=1)


def task_cell_samples(use: pd.DataFrame, indicator: str, models: list[str], settings: Settings,
                      tasks: tuple[str, ...] = ()) -> np.ndarray | None:
    """:func:`cell_samples` with the tasks kept apart, shape (B, tasks, models, models), for a
    statistic that compares them (a profile's T1-2 minus T1-1): one draw of scenarios for both."""
    from dyafdb.analysis.bootstrap import resampled_cluster_means

    use = use[use[indicator].notna()]
    if settings.bootstrap <= 0 or use.empty:
        return None
    tasks = tasks or ("",)
    keyed = tuple(tasks) != ("",)
    if keyed:
        use = use[use["task"].isin(tasks)]
    cells = [(t, m, p) for t in tasks for m in models for p in models]
    index = {c: i for i, c in enumerate(cells)}
    task_of = use["task"] if keyed else pd.Series("", index=use.index)
    codes = np.array([index[(t, m, p)] for t, m, p in zip(task_of, use[C.MODEL], use[C.PARTNER])], dtype=np.int64)
    clusters = (use[C.SCENARIO].astype(str) if C.SCENARIO in use else use[C.CONVERSATION].astype(str)).to_numpy()
    rng = np.random.default_rng(settings.seed)
    chunks = list(resampled_cluster_means(use[indicator].to_numpy(float), codes, len(cells), clusters, settings.bootstrap, rng))
    return np.concatenate(chunks).reshape(-1, len(tasks), len(models), len(models))


def _nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    import warnings

    with warnings.catch_warnings():  # an empty slice is a cell without runs: NaN is its answer
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=axis)


def intervals_of(samples: np.ndarray | None, models: list[str], settings: Settings,
                 pinned: set[tuple[str, str]] = frozenset()) -> dict[str, Any]:
    """A matrix's cell and row-average intervals from :func:`cell_samples` (nothing without samples)."""
    from dyafdb.analysis.bootstrap import interval

    if samples is None:
        return {}
    samples = samples.copy()
    for m, p in pinned:
        samples[:, models.index(m), models.index(p)] = np.nan
    lo, hi = interval(samples, settings.ci)
    avg_lo, avg_hi = interval(_nanmean(samples, axis=2), settings.ci)
    frame = lambda a: pd.DataFrame(a, index=models, columns=models)  # noqa: E731
    for m, p in pinned:  # a pinned cell holds no information: no interval
        lo[models.index(m), models.index(p)] = hi[models.index(m), models.index(p)] = np.nan
    return {"lower": frame(lo), "upper": frame(hi), "avg_lower": pd.Series(avg_lo, index=models),
            "avg_upper": pd.Series(avg_hi, index=models)}


def cell_intervals(task_runs: pd.DataFrame, indicator: str, models: list[str], pinned: set[tuple[str, str]],
                   settings: Settings) -> dict[str, Any]:
    """95% (``settings.ci``) intervals of every cell and row average of a score matrix."""
    return intervals_of(cell_samples(task_runs, indicator, models, settings), models, settings, pinned)


def score_matrix(runs: pd.DataFrame, task: str, settings: Settings) -> Matrix:
    """The task-score matrix of one archetype from main-window runs."""
    task_runs = runs[runs["task"] == task]
    models = _order(task_runs, settings)
    cells = cell_frame(task_runs, "score")
    values = _square(cells, "mean", models, None)
    n = _square(cells, "n", models, 0).astype(int)
    runs_n = None
    if task in C.AMONG_DECIDED:
        decided = cell_frame(task_runs, "decided")
        runs_n = _square(decided, "n", models, 0).astype(int)
    pinned: set[tuple[str, str]] = set()
    if task in C.PINNED_SELF_PLAY:
        pinned = {(m, m) for m in models if n.loc[m, m] > 0}
    average = values.copy()
    for m, p in pinned:
        average.loc[m, p] = np.nan
    row_avg = average.mean(axis=1, skipna=True)
    column_label = C.COLUMN_ROW_LABEL.get(task)
    column_avg = average.mean(axis=0, skipna=True) if column_label else None
    note = ""
    if task in C.AMONG_DECIDED:
        note = "cells among decided runs; n = decided runs, runs = all runs"
    if pinned:
        note = "self-play pinned at 0.50 (shown in parentheses, left out of the averages)"
    note = _join(score_note(task_runs, task, values, pinned), note,
                 coverage_note(task_runs, int(n.to_numpy().sum()), "scored " + C.UNIT.get(task, "runs")))
    return Matrix(name=task, title=C.TASK_TITLES.get(task, task), models=models, partners=models, values=values,
                  n=n, runs=runs_n, row_avg=row_avg, column_label=column_label, column_avg=column_avg,
                  pinned=pinned, note=note, filters=_filters([task], task_runs, side_a=task in C.REPORTED_SIDE_ONLY),
                  **cell_intervals(task_runs, "score", models, pinned, settings))


def turn_taking_matrix(runs: pd.DataFrame, metric: str, settings: Settings,
                       tasks: tuple[str, ...] = C.MAIN_TASKS, label: str | None = None,
                       no_case: str = "its denominator was 0 everywhere") -> Matrix:
    """A turn-taking metric per pairing, the tasks averaged with equal weight (section 3.2); also any
    other per-side mechanical measure (the audio-health matrices), given its ``label``."""
    in_tasks = runs[runs["task"].isin(tasks)]
    use = in_tasks[in_tasks[metric].notna()]
    models = _order(in_tasks, settings)  # a metric that never occurred still gets its (empty) cells
    per_task = use.groupby(["task", C.MODEL, C.PARTNER])[metric].mean()
    cells = per_task.groupby([C.MODEL, C.PARTNER]).mean()
    n = use.groupby([C.MODEL, C.PARTNER]).size()
    values = cells.unstack(C.PARTNER).reindex(index=models, columns=models) if len(cells) else pd.DataFrame(index=models, columns=models, dtype=float)
    counts = n.unstack(C.PARTNER).reindex(index=models, columns=models).fillna(0).astype(int) if len(n) else pd.DataFrame(0, index=models, columns=models)
    label = label or C.TURN_TAKING_LABELS.get(metric, metric)
    why = ""
    if in_tasks.empty:
        why = "no runs of the main tasks at the main window: nothing to show"
    elif use.empty:
        why = f"no {label} case in any of the {len(in_tasks)} conversation sides ({no_case})"
    elif (value := why_constant(values.astype(float))) is not None:
        from dyafdb.analysis.numbers import fmt

        why = f"every cell is {fmt(value)}: all {len(use)} conversation sides with a case measured {fmt(value)}"
    return Matrix(name=metric, title=f"{label} (row model against column partner)",
                  models=models, partners=models, values=values.astype(float), n=counts,
                  row_avg=values.astype(float).mean(axis=1, skipna=True), column_label="as partner avg",
                  column_avg=values.astype(float).mean(axis=0, skipna=True),
                  note=_join(why, "tasks averaged with equal weight",
                             mechanical_note(int(counts.to_numpy().sum()), "conversation sides")),
                  filters=_filters(list(tasks), in_tasks),
                  **intervals_of(cell_samples(in_tasks, metric, models, settings, tuple(sorted(set(use["task"])))),
                                 models, settings))


def model_average(runs: pd.DataFrame, task: str, indicator: str = "score", skip_pinned: bool = True) -> pd.Series:
    """Each model's mean over its pairing cells (partners weighted equally) of one indicator."""
    sub = runs[runs["task"] == task]
    if skip_pinned and "pinned" in sub:
        sub = sub[~sub["pinned"].astype(bool)]
    cells = cell_frame(sub, indicator)
    if cells.empty:
        return pd.Series(dtype=float)
    return cells["mean"].groupby(level=0).mean()


def table9_columns(archetypes: Sequence[str]) -> tuple[tuple[str, str, str], ...]:
    """(column, archetype, indicator) of Table 9 for the archetypes the text pairing played, as its
    declaration (:mod:`dyafdb.text_pairing.archetypes`) reads them; a success column is named as the
    other tables name that success (T3-2 agreement)."""
    return tuple((task if indicator == "score" else f"{task} {C.SUCCESS_NAME[task]}", task, indicator)
                 for task, indicator in table9_reads(archetypes))


# The paper's Table 9: the text pairing's default archetypes.
TABLE9 = table9_columns(schema_default("config-text_pairing", "archetypes"))


def table9(speech_runs: pd.DataFrame, text_runs: pd.DataFrame | None, speech_labels, text_labels,
           columns: Sequence[tuple[str, str, str]] = TABLE9) -> pd.DataFrame:
    """Speech models (each averaged over its pairings) above the text models of the text-only pairing
    (their one pairing): Appendix E's Table 9, one column per :func:`table9_columns` entry."""
    rows = []
    for kind, runs, label in (("speech", speech_runs, speech_labels), ("text", text_runs, text_labels)):
        if runs is None or runs.empty:
            continue
        per_task = {col: model_average(runs, task, indicator) for col, task, indicator in columns}
        models = list(dict.fromkeys(m for s in per_task.values() for m in s.index))
        order = label.order(models) if hasattr(label, "order") else models
        for m in order:
            rows.append({"model": m, "label": label.label(m) if hasattr(label, "label") else label.get(m, m), "kind": kind,
                         **{col: float(s.get(m, float("nan"))) for col, s in per_task.items()}})
    return pd.DataFrame(rows, columns=["model", "label", "kind", *[c for c, _, _ in columns]])


def table9_gaps(table: pd.DataFrame, speech_runs: pd.DataFrame | None, text_runs: pd.DataFrame | None,
                columns: Sequence[tuple[str, str, str]] = TABLE9) -> list[str]:
    """Why each dash of Table 9 is a dash, one line per empty cell ("<label>, <column>: <why>"): the
    model has no run of the task, plays only the side the column does not read, or its runs have
    no value (the judge answers left out, and why)."""
    from dyafdb.analysis.answers import runs_tally, tally_text

    out = []
    for _, row in table.iterrows():
        runs = text_runs if row["kind"] == "text" else speech_runs
        for col, task, indicator in columns:
            if pd.notna(row.get(col)):
                continue
            mine = runs[(runs["task"] == task) & (runs[C.MODEL] == row["model"])] if runs is not None and len(runs) else None
            if mine is None or mine.empty:
                why = f"no {task} run"
            elif task in C.REPORTED_SIDE_ONLY and not (mine[C.SIDE] == "a").any():
                read, held = C.SIDE_ROLES[task]
                why = f"plays only the {held} (side b); the column reads the {read}'s side"
            else:
                why = f"{len(mine)} runs, none with a value ({tally_text(runs_tally(mine))})"
            out.append(f"{row['label']}, {col}: {why}")
    return out
