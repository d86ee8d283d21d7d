"""Rating a new model against the reference set (Appendix H; anchors section 4).

Two complementary views, both anchored so that adding a model never moves the models already rated:

1. Bradley-Terry over the contested tasks. Each cross-play run is one battle between its two sides:
   T3-1 the side with more than half the floor wins; T3-2 the presser wins when the avoider grants
   the request; T4-1 the side whose option is landed; T4-2 the attacker wins on a leak, the
   defender otherwise; T4-3 the side whose line is landed; T4-4 the seller when its share of the
   gap is above one half, the buyer when below. No deal (and an exact half) is a tie, which counts
   as half a win for each side. P(a beats b) = 1 / (1 + 10^((R_b - R_a - s_task - o) / scale)),
   with a side-a advantage s_task per task and an opener advantage o, so a rating is not confounded
   by which side of an asymmetric game or which speaking slot a model drew (both are
   counterbalanced, but runs can be missing). Self-play runs carry no information and are skipped.
2. Additive effects on every task: score = mu_task + own[model] + partner[partner], fitted by
   least squares on runs (equivalently on cell means weighted by their runs); ``own`` is the
   model's effect on its own (reported-side) score, ``partner`` its effect on whoever faces it.
   T3-1's pinned self-play cells are left out.

Anchoring: the reference models (config ``analysis.reference_models``) are fitted on their own runs
only, with the anchor model pinned at ``anchor_rating`` and at zero effects. Every other model is
then fitted alone against the references, whose parameters (and the side, opener and task terms)
stay fixed, using only its runs with the references (its self-play included for the additive
effects). Runs between two new models are not used, so each new model's numbers are independent
of which other models were added.

Intervals: percentile bootstrap. Battles are resampled with replacement (multinomial over the
distinct battle outcomes, as FastChat does); additive effects resample runs within pairing cells.
Each replicate refits the references first and the new models against that replicate's
references, so the references' own uncertainty reaches the new models' intervals. Rank = 1 + the
number of models whose lower bound lies above this model's upper bound, so only clearly
separated models count.

A weak ridge (``RIDGE`` on the log-odds parameters) keeps a model that won or lost every battle
finite; on the paper's scale its pull is negligible. Fits are Newton steps on the convex logistic
loss, batched over bootstrap replicates (the same maximum likelihood FastChat reaches with L-BFGS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dyafdb.analysis import bootstrap
from dyafdb.analysis import columns as C
from dyafdb.analysis.settings import Settings
from dyafdb.errors import InputError

RIDGE = 1e-3
LN10 = np.log(10.0)


# ---------------------------------------------------------------------------------------------
# battles


def battles(runs: pd.DataFrame, contested: list[str]) -> pd.DataFrame:
    """One row per cross-play run of a contested task: model_a, model_b, task, opener_a, outcome (side a)."""
    a = runs[(runs[C.SIDE] == "a") & (runs["play"] == "cross") & runs["task"].isin(contested)]
    outcome = pd.Series(np.nan, index=a.index)
    task = a["task"]
    occ = a[C.OCCUPANCY]
    outcome[task == "T3-1"] = np.sign(occ[task == "T3-1"] - 0.5) / 2 + 0.5
    outcome[task == "T3-2"] = a.loc[task == "T3-2", "success"]
    t41 = task == "T4-1"
    outcome[t41] = np.where(a.loc[t41, "decided"] == 0.0, 0.5, a.loc[t41, "success"])
    outcome[task == "T4-2"] = a.loc[task == "T4-2", "score"]
    t43 = task == "T4-3"
    outcome[t43] = np.where(a.loc[t43, "decided"] == 0.0, 0.5, a.loc[t43, "score"])
    t44 = task == "T4-4"
    outcome[t44] = np.where(a.loc[t44, "decided"] == 0.0, 0.5, np.sign(a.loc[t44, "score"] - 0.5) / 2 + 0.5)
    out = pd.DataFrame({"model_a": a[C.MODEL], "model_b": a[C.PARTNER], "task": task,
                        "opener_a": a[C.OPENER].astype(bool), "outcome": outcome})
    return out[out["outcome"].notna()].reset_index(drop=True)


@dataclass
class BattleData:
    """Distinct battles with counts: what a weighted Bradley-Terry fit needs."""

    a: np.ndarray  # model index of side a
    b: np.ndarray
    task: np.ndarray  # task index
    opener: np.ndarray  # +1 when side a opened, -1 when side b did
    y: np.ndarray  # outcome for side a (0, 0.5, 1)
    counts: np.ndarray


def _collapse(frame: pd.DataFrame, models: list[str], tasks: list[str]) -> BattleData:
    midx = {m: i for i, m in enumerate(models)}
    tidx = {t: i for i, t in enumerate(tasks)}
    g = frame.groupby(["model_a", "model_b", "task", "opener_a", "outcome"]).size().reset_index(name="n")
    return BattleData(
        a=g["model_a"].map(midx).to_numpy(int), b=g["model_b"].map(midx).to_numpy(int),
        task=g["task"].map(tidx).to_numpy(int), opener=np.where(g["opener_a"], 1.0, -1.0),
        y=g["outcome"].to_numpy(float), counts=g["n"].to_numpy(float),
    )


def newton_logistic(x: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray | None = None,
                    ridge: float = RIDGE, iterations: int = 100, tol: float = 1e-10) -> np.ndarray:
    """Maximum-likelihood logistic coefficients by Newton's method, batched over weight vectors.

    ``x`` (n, k) design, ``y`` (n,) outcomes in [0, 1] (a tie is 0.5), ``weights`` (B, n) counts,
    ``offset`` (B, n) or (n,) fixed margins. Returns (B, k). The loss is convex and the ridge makes
    it strictly so, so Newton converges in a handful of steps for every replicate at once.
    """
    weights = np.atleast_2d(np.asarray(weights, float))
    b, (n, k) = weights.shape[0], x.shape
    off = np.zeros((b, n)) if offset is None else np.broadcast_to(np.asarray(offset, float), (b, n))
    beta = np.zeros((b, k))
    eye = np.eye(k)
    for _ in range(iterations):
        margin = beta @ x.T + off
        p = 1.0 / (1.0 + np.exp(-margin))
        grad = (weights * (p - y)) @ x + 2 * ridge * beta
        hess = np.einsum("bn,ni,nj->bij", weights * p * (1 - p), x, x) + 2 * ridge * eye
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        beta -= step
        if np.max(np.abs(step)) < tol:
            break
    return beta


def _reference_design(data: BattleData, n_models: int, n_tasks: int, anchor: int) -> np.ndarray:
    free = [i for i in range(n_models) if i != anchor]
    x = np.zeros((len(data.y), len(free) + n_tasks + 1))
    col = {m: j for j, m in enumerate(free)}
    for r, (a, b) in enumerate(zip(data.a, data.b)):
        if a in col:
            x[r, col[a]] += 1.0
        if b in col:
            x[r, col[b]] -= 1.0
    x[np.arange(len(data.y)), len(free) + data.task] = 1.0
    x[:, -1] = data.opener
    return x


def fit_references(data: BattleData, n_models: int, n_tasks: int, anchor: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Natural-scale parameters [theta (anchor 0) ..., side effect per task ..., opener]; batched when
    ``weights`` is (B, n): one row of parameters per replicate."""
    w = data.counts if weights is None else weights
    x = _reference_design(data, n_models, n_tasks, anchor)
    coef = newton_logistic(x, data.y, w)
    free = [i for i in range(n_models) if i != anchor]
    theta = np.zeros((coef.shape[0], n_models))
    theta[:, free] = coef[:, : len(free)]
    out = np.concatenate([theta, coef[:, len(free):]], axis=1)
    return out[0] if np.ndim(w) == 1 else out


def fit_new(data: BattleData, new: int, ref_params: np.ndarray, n_models: int, n_tasks: int,
            weights: np.ndarray | None = None) -> np.ndarray | float:
    """Theta of one new model with every reference parameter held fixed (batched like fit_references)."""
    w = data.counts if weights is None else weights
    params = np.atleast_2d(ref_params)
    theta_fixed = params[:, :n_models]
    side = params[:, n_models: n_models + n_tasks]
    opener = params[:, -1:]
    sign = np.where(data.a == new, 1.0, -1.0)
    other = np.where(data.a == new, data.b, data.a)
    # side a's margin theta_a - theta_b + side + opener, with the new model on either side
    offset = -sign * theta_fixed[:, other] + side[:, data.task] + opener * data.opener
    coef = newton_logistic(sign[:, None], data.y, np.broadcast_to(w, offset.shape), offset)
    return float(coef[0, 0]) if np.ndim(ref_params) == 1 and np.ndim(w) == 1 else coef[:, 0]


# ---------------------------------------------------------------------------------------------
# additive effects


@dataclass
class CellDesign:
    keys: list[tuple[str, str]]
    codes: np.ndarray
    values: np.ndarray


def _cells(runs: pd.DataFrame, task: str) -> CellDesign:
    sub = runs[(runs["task"] == task) & runs["score"].notna() & ~runs["pinned"].astype(bool)]
    codes, keys = bootstrap.cell_codes(sub[C.MODEL].to_numpy(), sub[C.PARTNER].to_numpy())
    return CellDesign(keys=[tuple(k) for k in keys], codes=codes, values=sub["score"].to_numpy(float))


def _ref_operator(keys, counts, refs: list[str], anchor: str) -> tuple[np.ndarray, list[str]]:
    """Linear map cell means -> [mu, own[r != anchor] ..., partner[r != anchor] ...] (weighted LS)."""
    free = [r for r in refs if r != anchor]
    names = ["mu"] + [f"own:{r}" for r in free] + [f"partner:{r}" for r in free]
    use = [i for i, (m, p) in enumerate(keys) if m in refs and p in refs]
    x = np.zeros((len(use), len(names)))
    x[:, 0] = 1.0
    for row, i in enumerate(use):
        m, p = keys[i]
        if m != anchor:
            x[row, 1 + free.index(m)] = 1.0
        if p != anchor:
            x[row, 1 + len(free) + free.index(p)] = 1.0
    w = np.sqrt(counts[use])
    op = np.zeros((len(names), len(keys)))
    op[:, use] = np.linalg.pinv(x * w[:, None]) * w[None, :]
    return op, names


def _unpack_refs(beta: np.ndarray, names: list[str], refs: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(mu, own, partner) from the reference coefficients; the anchor's effects are zero. Batched over rows."""
    beta = np.atleast_2d(beta)
    pos = {n: i for i, n in enumerate(names)}
    zero = np.zeros(beta.shape[0])
    own = {r: beta[:, pos[f"own:{r}"]] if f"own:{r}" in pos else zero for r in refs}
    partner = {r: beta[:, pos[f"partner:{r}"]] if f"partner:{r}" in pos else zero for r in refs}
    return beta[:, 0], own, partner


def _new_effects(y: np.ndarray, keys, counts, new: str, refs: list[str], mu, own, partner) -> tuple[np.ndarray, np.ndarray]:
    """own[new], partner[new] given fixed reference terms; ``y`` is (B, cells). NaN where not estimable."""
    rows, targets, weights = [], [], []
    for i, (m, p) in enumerate(keys):
        if m == new and p in refs:
            rows.append((1.0, 0.0)); targets.append(y[:, i] - mu - partner[p])
        elif p == new and m in refs:
            rows.append((0.0, 1.0)); targets.append(y[:, i] - mu - own[m])
        elif m == new and p == new:
            rows.append((1.0, 1.0)); targets.append(y[:, i] - mu)
        else:
            continue
        weights.append(counts[i])
    nan = np.full(y.shape[0], np.nan)
    if not rows:
        return nan, nan
    x = np.array(rows)
    w = np.sqrt(np.array(weights))
    t = np.stack(targets, axis=1)  # (B, r)
    pinv = np.linalg.pinv(x * w[:, None]) * w[None, :]  # (2, r)
    est = t @ pinv.T
    # identifiable: both when the rows span two dimensions; with one, only the effect that appears alone
    full = np.linalg.matrix_rank(x) == 2
    own_ok = full or not x[:, 1].any()
    part_ok = full or not x[:, 0].any()
    return (est[:, 0] if own_ok else nan), (est[:, 1] if part_ok else nan)


def additive_effects(runs: pd.DataFrame, settings: Settings, refs: list[str], anchor: str, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    tasks = [t for t in C.TASK_TITLES if t in set(runs["task"])]
    for task in tasks:
        design = _cells(runs, task)
        if not design.keys:
            continue
        n_cells = len(design.keys)
        counts = np.bincount(design.codes, minlength=n_cells).astype(float)
        point = bootstrap.cell_means(design.values, design.codes, n_cells)[None, :]
        reps = [point]
        if settings.bootstrap > 1:
            reps += list(bootstrap.resampled_cell_means(design.values, design.codes, n_cells, settings.bootstrap, rng))
        y = np.concatenate(reps)  # row 0 is the point estimate
        present_refs = [r for r in refs if any(r in k for k in design.keys)]
        if anchor not in present_refs:
            continue
        op, names = _ref_operator(design.keys, counts, present_refs, anchor)
        beta = y @ op.T
        mu, own, partner = _unpack_refs(beta, names, present_refs)
        estimates = {r: (own[r], partner[r]) for r in present_refs}
        others = settings.order({m for k in design.keys for m in k} - set(present_refs))
        for new in others:
            estimates[new] = _new_effects(y, design.keys, counts, new, present_refs, mu, own, partner)
        for m in settings.order(estimates):
            o, p = estimates[m]
            n_runs = int(sum(counts[i] for i, k in enumerate(design.keys) if m in k))
            row = {"task": task, "model": m, "reference": m in present_refs, "anchor": m == anchor, "runs": n_runs,
                   "mu": float(mu[0])}
            for name, v in (("own", o), ("partner", p)):
                lo, hi = bootstrap.interval(v[1:], settings.ci) if len(v) > 1 else (np.nan, np.nan)
                row.update({name: float(v[0]), f"{name}_lower": float(lo), f"{name}_upper": float(hi)})
            rows.append(row)
    return pd.DataFrame(rows, columns=["task", "model", "reference", "anchor", "runs", "mu", "own", "own_lower",
                                       "own_upper", "partner", "partner_lower", "partner_upper"])


# ---------------------------------------------------------------------------------------------
# leaderboard


def rank_by_separation(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """1 + the number of models whose lower bound lies above this model's upper bound."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    return np.array([1 + int(np.sum(lower > u)) for u in upper])


# A rating is read in points: one decimal; more only prints the fit's float noise (2.22e-16).
RATING_DIGITS = 1
EFFECT_DIGITS = 3


def separability(models: list[str], lower: np.ndarray, upper: np.ndarray) -> list[str]:
    """Per model, the models its interval overlaps ("not separable from y, z"), so no rank order is
    read between them; "separable" where it overlaps none. The anchor's pinned point counts as its interval."""
    out = []
    for i, m in enumerate(models):
        overlap = [o for j, o in enumerate(models) if j != i and not (lower[j] > upper[i] or upper[j] < lower[i])]
        out.append("not separable from " + ", ".join(overlap) if overlap else "separable")
    return out


def bradley_terry(runs: pd.DataFrame, settings: Settings, refs: list[str], anchor: str,
                  rng: np.random.Generator) -> pd.DataFrame:
    table = battles(runs, settings.contested)
    models = settings.order(set(table["model_a"]) | set(table["model_b"]) | set(refs))
    tasks = sorted(set(table["task"]))
    midx = {m: i for i, m in enumerate(models)}
    a_i = midx[anchor]
    is_ref = table["model_a"].isin(refs) & table["model_b"].isin(refs)
    ref_data = _collapse(table[is_ref], models, tasks)
    n_m, n_t = len(models), len(tasks)
    to_points = settings.rating_scale / LN10
    if len(ref_data.y) == 0:
        # nothing to rate yet (e.g. one reference model, or no contested task recorded): an empty board
        return pd.DataFrame(columns=["model", "rank", "reference", "anchor", "rating", "lower", "upper", "battles"])
    ref_point = fit_references(ref_data, n_m, n_t, a_i)
    n_ref = int(ref_data.counts.sum())
    ref_reps = np.zeros((0, len(ref_point)))
    if settings.bootstrap > 1:
        draws = rng.multinomial(n_ref, ref_data.counts / n_ref, size=settings.bootstrap).astype(float)
        ref_reps = fit_references(ref_data, n_m, n_t, a_i, weights=draws)
    thetas = {m: np.concatenate([[ref_point[midx[m]]], ref_reps[:, midx[m]]]) for m in refs if m in midx}
    counts = {m: int((((table["model_a"] == m) | (table["model_b"] == m)) & is_ref).sum()) for m in refs}
    for new in [m for m in models if m not in refs]:
        mine = table[((table["model_a"] == new) & table["model_b"].isin(refs)) | ((table["model_b"] == new) & table["model_a"].isin(refs))]
        counts[new] = len(mine)
        if mine.empty:
            continue
        data = _collapse(mine, models, tasks)
        values = [fit_new(data, midx[new], ref_point, n_m, n_t)]
        if len(ref_reps):
            n = int(data.counts.sum())
            draws = rng.multinomial(n, data.counts / n, size=len(ref_reps)).astype(float)
            values = np.concatenate([values, fit_new(data, midx[new], ref_reps, n_m, n_t, weights=draws)])
        thetas[new] = np.asarray(values, float)
    rows = []
    for m in settings.order(thetas):
        v = np.asarray(thetas[m]) * to_points + settings.anchor_rating
        lo, hi = bootstrap.interval(v[1:], settings.ci) if len(v) > 1 else (np.nan, np.nan)
        if m == anchor:  # pinned: its "interval" is the pin, not an uncertainty
            lo = hi = np.nan
        if m in refs:  # the battles counted in ``counts``: among references, or a new model's against them
            mine = table[((table["model_a"] == m) | (table["model_b"] == m)) & is_ref]
        else:
            mine = table[((table["model_a"] == m) & table["model_b"].isin(refs)) | ((table["model_b"] == m) & table["model_a"].isin(refs))]
        ties = int((mine["outcome"] == 0.5).sum())
        rows.append({"model": m, "reference": m in refs, "anchor": m == anchor, "rating": float(v[0]),
                     "lower": float(lo), "upper": float(hi), "battles": counts.get(m, 0),
                     "decisive": counts.get(m, 0) - ties, "ties": ties})
    out = pd.DataFrame(rows, columns=["model", "reference", "anchor", "rating", "lower", "upper", "battles", "decisive", "ties"])
    if len(out):
        lower = out["lower"].fillna(out["rating"]).to_numpy()
        upper = out["upper"].fillna(out["rating"]).to_numpy()
        out.insert(1, "rank", rank_by_separation(lower, upper))
        out["separable"] = separability(out["model"].tolist(), lower, upper)
        out = out.sort_values(["rank", "rating"], ascending=[True, False], kind="stable").reset_index(drop=True)
        out[["rating", "lower", "upper"]] = out[["rating", "lower", "upper"]].round(RATING_DIGITS) + 0.0
    side_terms = {t: float(ref_point[n_m + i]) * to_points for i, t in enumerate(tasks)}
    out.attrs["side_advantage"] = side_terms
    out.attrs["opener_advantage"] = float(ref_point[-1]) * to_points
    return out


def rating_tables(runs: pd.DataFrame, settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(leaderboard, additive effects). The leaderboard carries each model's own effect per task."""
    present = set(runs[C.MODEL]) | set(runs[C.PARTNER])
    refs = [m for m in (settings.reference_models or settings.models) if m in present]
    if not refs:
        raise InputError("rating: none of the reference models has runs in measures.tsv; check analysis.reference_models")
    anchor = settings.anchor_model if settings.anchor_model in refs else refs[0]
    rng = np.random.default_rng(settings.seed)
    board = bradley_terry(runs, settings, refs, anchor, rng) if runs["task"].isin(settings.contested).any() else \
        pd.DataFrame(columns=["model", "rank", "reference", "anchor", "rating", "lower", "upper", "battles"])
    effects = additive_effects(runs, settings, refs, anchor, rng)
    numeric = effects.select_dtypes("number").columns.difference(["runs"])
    # + 0.0: a rounded -1e-17 is -0.0, which the TSV writes as "-0"
    effects[numeric] = effects[numeric].round(EFFECT_DIGITS) + 0.0
    if len(effects):
        own = effects.pivot(index="model", columns="task", values="own")
        own.columns = [f"own:{c}" for c in own.columns]
        if len(board):
            board = board.merge(own, left_on="model", right_index=True, how="outer")
        else:
            # No contested archetype in this config: the board keeps its rating columns, empty, so it
            # reads the same in every config and says there is no rating rather than leaving it out.
            board = own.reset_index().reindex(columns=[*board.columns, *own.columns])
    if "rank" in board.columns:
        board = board.sort_values(["rank", "rating"], ascending=[True, False], kind="stable", na_position="last")
    return board.reset_index(drop=True), effects
