"""Variance decomposition of cell means (Appendix C, Figure 2, Table 6).

Cells are x[t, m, p], the mean over runs of task t, model m and partner p. With every cell present
once the design is balanced and the closed form is exact (Type I = II = III sums of squares):

    eta2_task      = M*P * sum_t (xbar_t - mu)^2 / SS_total
    eta2_model     = T*P * sum_m (xbar_m - mu)^2 / SS_total
    eta2_partner   = T*M * sum_p (xbar_p - mu)^2 / SS_total
    eta2_model_x_partner = T * sum_mp (xbar_mp - xbar_m - xbar_p + mu)^2 / SS_total
    eta2_residual  = what is left: the interactions that involve the task

A single task-score matrix has no task factor, and model + partner + interaction = 1.
When cells are missing (the cross-play-only variant drops the diagonal; a cell can have no runs)
the closed form no longer holds, and the terms are Type II sums of squares from nested least-squares
fits (each term added after every term that does not contain it; on a complete grid these equal
statsmodels' ``anova_lm(typ=2)`` and the closed form). They need not sum to one; the residual is
reported as it is, not renormalised.

Where the cells cannot answer the question, the terms are left empty (NaN, null in
``dyafdb analysis variance-cells``) with the reason, never printed as zeros (:func:`why_undefined`): a table whose
cell means are all equal has no variance to split, and a grid where the model of a cell fixes its
partner (a two-model cross-play grid: cells (A, B) and (B, A)) cannot separate model from partner.

Uncertainty: runs are resampled within cells, cell means and the terms recomputed; the SD over
replicates is reported, as in the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dyafdb.analysis import bootstrap
from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings
from dyafdb.errors import InputError

TERMS = ("task", "model", "partner", "model_x_partner", "residual")


def closed_form(x: np.ndarray, with_task: bool) -> dict[str, np.ndarray]:
    """eta2 of a complete grid; ``x`` has shape (..., T, M, P) with a task axis, else (..., M, P).

    Leading axes are batches (bootstrap replicates) and are kept.
    """
    x = np.asarray(x, dtype=float)
    if not with_task:
        x = x[..., None, :, :]
    t, m, p = x.shape[-3:]
    mu = x.mean(axis=(-3, -2, -1), keepdims=True)
    ss_total = ((x - mu) ** 2).sum(axis=(-3, -2, -1))
    xt = x.mean(axis=(-2, -1), keepdims=True)
    xm = x.mean(axis=(-3, -1), keepdims=True)
    xp = x.mean(axis=(-3, -2), keepdims=True)
    xmp = x.mean(axis=-3, keepdims=True)
    ss = {
        "task": m * p * ((xt - mu) ** 2).sum(axis=(-3, -2, -1)),
        "model": t * p * ((xm - mu) ** 2).sum(axis=(-3, -2, -1)),
        "partner": t * m * ((xp - mu) ** 2).sum(axis=(-3, -2, -1)),
        "model_x_partner": t * ((xmp - xm - xp + mu) ** 2).sum(axis=(-3, -2, -1)),
    }
    ss["residual"] = ss_total - ss["task"] - ss["model"] - ss["partner"] - ss["model_x_partner"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {k: np.where(ss_total > 0, v / np.where(ss_total > 0, ss_total, 1.0), np.nan) for k, v in ss.items()}
    if not with_task:
        out.pop("task")
        out.pop("residual")  # saturated: one value per cell leaves nothing over
    return out


def _dummies(labels: np.ndarray) -> np.ndarray:
    uniques, codes = np.unique(labels.astype(str), return_inverse=True)
    out = np.zeros((len(labels), len(uniques)))
    out[np.arange(len(labels)), codes] = 1.0
    return out


def _projector(blocks: list[np.ndarray], n: int) -> np.ndarray:
    x = np.hstack([np.ones((n, 1)), *blocks]) if blocks else np.ones((n, 1))
    return x @ np.linalg.pinv(x)


def least_squares(factors: dict[str, np.ndarray], y: np.ndarray) -> dict[str, np.ndarray]:
    """Type II eta2 for terms task (optional), model, partner, model x partner; ``y`` is (..., n)."""
    y = np.asarray(y, dtype=float)
    n = y.shape[-1]
    with_task = "task" in factors
    d = {k: _dummies(np.asarray(v)) for k, v in factors.items()}
    mp_labels = np.char.add(np.char.add(np.asarray(factors["model"]).astype(str), "\x1f"), np.asarray(factors["partner"]).astype(str))
    d["model_x_partner"] = _dummies(mp_labels)
    task = [d["task"]] if with_task else []

    def rss(blocks):
        h = _projector(blocks, n)
        r = y - y @ h.T
        return (r ** 2).sum(axis=-1)

    full = rss(task + [d["model"], d["partner"], d["model_x_partner"]])
    main = rss(task + [d["model"], d["partner"]])
    ss = {
        "model": rss(task + [d["partner"]]) - main,
        "partner": rss(task + [d["model"]]) - main,
        "model_x_partner": main - full,
    }
    if with_task:
        ss["task"] = rss([d["model"], d["partner"], d["model_x_partner"]]) - full
        ss["residual"] = full
    ss_total = ((y - y.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {k: np.where(ss_total > 0, np.maximum(v, 0.0) / np.where(ss_total > 0, ss_total, 1.0), np.nan)
               for k, v in ss.items()}
    return {k: out[k] for k in TERMS if k in out}


@dataclass
class Grid:
    """Cells of a decomposition: factor labels per cell, and whether they fill a full grid."""

    tasks: list[str] | None
    models: list[str]
    partners: list[str]
    keys: list[tuple]  # (task, model, partner) or (model, partner), one per cell
    complete: bool

    def factors(self) -> dict[str, np.ndarray]:
        names = ["task", "model", "partner"] if self.tasks is not None else ["model", "partner"]
        return {name: np.asarray([k[i] for k in self.keys], dtype=object) for i, name in enumerate(names)}

    def as_array(self, values: np.ndarray) -> np.ndarray:
        """(..., n_cells) in ``keys`` order -> (..., T, M, P) or (..., M, P); complete grids only."""
        shape = ((len(self.tasks),) if self.tasks is not None else ()) + (len(self.models), len(self.partners))
        return np.asarray(values).reshape(values.shape[:-1] + shape)


def make_grid(keys: list[tuple], with_task: bool) -> Grid:
    """Order cells task-major so a complete grid reshapes directly."""
    if with_task:
        tasks = sorted({k[0] for k in keys})
        models = sorted({k[1] for k in keys})
        partners = sorted({k[2] for k in keys})
        full = list(product(tasks, models, partners))
    else:
        tasks = None
        models = sorted({k[0] for k in keys})
        partners = sorted({k[1] for k in keys})
        full = list(product(models, partners))
    present = set(keys)
    complete = set(full) == present
    ordered = full if complete else sorted(present, key=lambda k: tuple(map(str, k)))
    return Grid(tasks, models, partners, ordered, complete)


def decompose_values(grid: Grid, values: np.ndarray) -> dict[str, np.ndarray]:
    """eta2 terms for cell values in ``grid.keys`` order (leading axes are batches)."""
    with_task = grid.tasks is not None
    if grid.complete:
        return closed_form(grid.as_array(values), with_task)
    return least_squares(grid.factors(), values)


CONSTANT = "every cell has the same mean: there is no variance to split"
CONFOUNDED = ("the cells cannot separate model from partner (each model meets one partner only, e.g. a "
              "two-model cross-play grid): model, partner and their interaction are not identified")


def _rank(blocks: list[np.ndarray], n: int) -> int:
    return int(np.linalg.matrix_rank(np.hstack([np.ones((n, 1)), *blocks])))


def why_undefined(grid: Grid, values: np.ndarray) -> str:
    """Why the terms of these cell means say nothing ("" when they do)."""
    y = np.asarray(values, float)
    if y.size and np.allclose(y, y[0]):
        return CONSTANT
    f = grid.factors()
    n = len(grid.keys)
    m, p = _dummies(np.asarray(f["model"])), _dummies(np.asarray(f["partner"]))
    both = _rank([m, p], n)
    if both == _rank([m], n) or both == _rank([p], n):
        return CONFOUNDED
    return ""


def decompose_cells(cells: pd.DataFrame) -> dict[str, float]:
    """The standalone decomposition of a table of cell means: columns model, partner, value[, task]."""
    for col in ("model", "partner", "value"):
        if col not in cells.columns:
            raise InputError(f"cells table lacks column {col!r}; it needs model, partner, value and optionally task")
    with_task = "task" in cells.columns
    key_cols = (["task"] if with_task else []) + ["model", "partner"]
    values = pd.to_numeric(cells["value"], errors="coerce")
    unusable = ~np.isfinite(values.to_numpy(dtype=float))  # text, empty (a short row) or inf
    if unusable.any():
        bad = cells.loc[unusable, key_cols].astype(str).agg("/".join, axis=1).tolist()[:5]
        raise InputError(f"cells table: column value must be a finite number in every row; not in cells {', '.join(bad)}")
    dup = cells.duplicated(key_cols, keep=False)
    if dup.any():
        bad = cells.loc[dup, key_cols].astype(str).agg("/".join, axis=1).drop_duplicates().tolist()[:5]
        raise InputError(f"cells table: one row per cell expected; repeated cells {', '.join(bad)} (average runs first)")
    keys = [tuple(map(str, k)) for k in cells[key_cols].itertuples(index=False)]
    if len(keys) < 2:
        raise InputError("cells table: at least two cells are needed")
    grid = make_grid(keys, with_task)
    lookup = dict(zip(keys, values.to_numpy()))
    y = np.array([lookup[k] for k in grid.keys])
    terms = {k: float(v) for k, v in decompose_values(grid, y).items()}
    why = why_undefined(grid, y)
    if why:
        terms = {k: (np.nan if k != "task" or why == CONSTANT else v) for k, v in terms.items()}
    return terms


def decompose_note(cells: pd.DataFrame) -> str:
    """Why :func:`decompose_cells` leaves its terms empty for this table ("" when it does not)."""
    with_task = "task" in cells.columns
    key_cols = (["task"] if with_task else []) + ["model", "partner"]
    keys = [tuple(map(str, k)) for k in cells[key_cols].itertuples(index=False)]
    grid = make_grid(keys, with_task)
    lookup = dict(zip(keys, pd.to_numeric(cells["value"], errors="coerce").to_numpy()))
    return why_undefined(grid, np.array([lookup[k] for k in grid.keys]))


def _decompose_runs(runs: pd.DataFrame, value: str, key_cols: list[str], n_boot: int, rng: np.random.Generator,
                    with_task: bool) -> tuple[dict[str, float], dict[str, float], Grid, str]:
    use = runs[runs[value].notna()]
    keys_per_run = list(zip(*[use[c].astype(str).to_numpy() for c in key_cols]))
    grid = make_grid(sorted(set(keys_per_run)), with_task)
    index = {k: i for i, k in enumerate(grid.keys)}
    codes = np.fromiter((index[k] for k in keys_per_run), dtype=np.int64, count=len(keys_per_run))
    vals = use[value].to_numpy(dtype=float)
    point = decompose_values(grid, bootstrap.cell_means(vals, codes, len(grid.keys)))
    sds: dict[str, float] = {k: np.nan for k in point}
    if n_boot > 1 and len(grid.keys) > 1:
        reps = {k: [] for k in point}
        for chunk in bootstrap.resampled_cell_means(vals, codes, len(grid.keys), n_boot, rng):
            for k, v in decompose_values(grid, chunk).items():
                reps[k].append(v)
        sds = {k: float(np.nanstd(np.concatenate(v), ddof=1)) for k, v in reps.items()}
    why = why_undefined(grid, bootstrap.cell_means(vals, codes, len(grid.keys)))
    if why:  # the terms say nothing here: empty, not zero (module doc)
        drop = set(point) if why == CONSTANT else {"model", "partner", "model_x_partner"}
        point = {k: (np.nan if k in drop else v) for k, v in point.items()}
        sds = {k: (np.nan if k in drop else v) for k, v in sds.items()}
    return {k: float(v) for k, v in point.items()}, sds, grid, why


def variance_table(runs: pd.DataFrame, settings: Settings, tasks: tuple[str, ...] = C.MAIN_TASKS,
                   score_tasks: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every decomposition of Appendix C as one long table.

    Rows: measure, kind (turn_taking | health | task_score), variant (all | cross_play), term, eta2, sd, cells,
    complete (closed form) and flag (pinned T3-1 self-play cells).
    """
    rng = np.random.default_rng(settings.seed)
    present_tasks = [t for t in tasks if t in set(runs["task"])]
    score_tasks = tuple(t for t in (score_tasks or tuple(C.TASK_TITLES)) if t in set(runs["task"]))
    rows = []

    def add(measure, kind, variant, point, sds, grid, flag=""):
        for term in TERMS:
            if term in point:
                rows.append({"measure": measure, "kind": kind, "variant": variant, "term": term,
                             "eta2": point[term], "sd": sds.get(term, np.nan), "cells": len(grid.keys),
                             "complete": grid.complete, "flag": flag})

    in_tasks = runs[runs["task"].isin(present_tasks)]
    for metric in C.TURN_TAKING:
        for variant, sub in (("all", in_tasks), ("cross_play", in_tasks[in_tasks["play"] == "cross"])):
            if sub[metric].notna().sum() == 0:
                continue
            point, sds, grid, why = _decompose_runs(sub, metric, ["task", C.MODEL, C.PARTNER], settings.bootstrap, rng, True)
            add(metric, "turn_taking", variant, point, sds, grid, why)
    # Audio health is measured in every archetype, so every archetype of the runs enters.
    for metric in (m for m in C.HEALTH if m in runs):
        for variant, sub in (("all", runs), ("cross_play", runs[runs["play"] == "cross"])):
            if sub[metric].notna().sum() == 0:
                continue
            point, sds, grid, why = _decompose_runs(sub, metric, ["task", C.MODEL, C.PARTNER], settings.bootstrap, rng, True)
            add(metric, "health", variant, point, sds, grid, why)
    for task in score_tasks:
        task_runs = runs[runs["task"] == task]
        for variant, sub in (("all", task_runs), ("cross_play", task_runs[task_runs["play"] == "cross"])):
            if sub["score"].notna().sum() == 0:
                continue
            point, sds, grid, flag = _decompose_runs(sub, "score", [C.MODEL, C.PARTNER], settings.bootstrap, rng, False)
            if task in C.PINNED_SELF_PLAY and variant == "all" and bool(sub["pinned"].any()):
                flag = "; ".join(x for x in (flag, "self-play cells are constant 0.50 by construction; see the cross_play variant") if x)
            add(task, "task_score", variant, point, sds, grid, flag)
    return pd.DataFrame(rows, columns=["measure", "kind", "variant", "term", "eta2", "sd", "cells", "complete", "flag"])


def decompose_file(path: Path, cross_play_only: bool = False, digits: int = 6) -> dict[str, Any]:
    """`dyafdb analysis variance-cells`: the terms of a TSV/CSV of cell means (columns model, partner,
    value[, task]), rounded; terms the cells cannot answer are null with the reason in ``note``
    (a constant table, or a grid that cannot separate model from partner), never zeros."""
    from dyafdb.analysis.io import read_delimited

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    cells = read_delimited(path, "cells table", "one row per cell, columns model, partner, value[, task]", sep=sep,
                           dtype=str, keep_default_na=False)
    cells.columns = [c.strip().lower() for c in cells.columns]
    if cross_play_only and {"model", "partner"} <= set(cells.columns):
        cells = cells[cells["model"] != cells["partner"]]
    try:
        terms = decompose_cells(cells)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    doc: dict[str, Any] = {k: None if math.isnan(v) else round(v, digits) for k, v in terms.items()}
    note = decompose_note(cells)
    if note:
        doc["note"] = note
    return doc
