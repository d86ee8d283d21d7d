"""Resampling runs within cells: the one bootstrap every interval and SD of the analysis uses.

A cell is whatever the statistic averages first (task x model x partner, model x partner, ...).
Runs are drawn with replacement inside their own cell, so every replicate keeps the design's cell
sizes, and statistics are recomputed from the replicate's cell means.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

CHUNK = 100  # replicates drawn at once: bounds memory at CHUNK x runs floats


def cell_codes(*keys: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Integer cell code per run from one or more key arrays, and the key tuple of every code."""
    stacked = list(zip(*[np.asarray(k).tolist() for k in keys]))
    uniques = sorted(set(stacked), key=lambda t: tuple(map(str, t)))
    index = {u: i for i, u in enumerate(uniques)}
    return np.fromiter((index[s] for s in stacked), dtype=np.int64, count=len(stacked)), uniques


def cell_means(values: np.ndarray, codes: np.ndarray, n_cells: int) -> np.ndarray:
    """Mean per cell (NaN where a cell has no runs)."""
    counts = np.bincount(codes, minlength=n_cells).astype(float)
    sums = np.bincount(codes, weights=values, minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def resampled_cell_means(values: np.ndarray, codes: np.ndarray, n_cells: int, n_boot: int,
                         rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Yield arrays of shape (chunk, n_cells): cell means of bootstrap replicates, CHUNK at a time."""
    values = np.asarray(values, dtype=float)
    codes = np.asarray(codes, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    v, c = values[order], codes[order]
    counts = np.bincount(c, minlength=n_cells)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    run_start, run_count = starts[c], counts[c]
    filled = np.flatnonzero(counts > 0)
    done = 0
    while done < n_boot:
        b = min(CHUNK, n_boot - done)
        idx = run_start + (rng.random((b, len(v))) * run_count).astype(np.int64)
        out = np.full((b, n_cells), np.nan)
        if len(v):
            sums = np.add.reduceat(v[idx], starts[filled], axis=1)
            out[:, filled] = sums / counts[filled]
        done += b
        yield out


def interval(samples: np.ndarray, ci: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of bootstrap samples (NaN-aware)."""
    tail = (1.0 - ci) / 2.0 * 100.0
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return (np.nanpercentile(samples, tail, axis=axis), np.nanpercentile(samples, 100.0 - tail, axis=axis))


def resampled_cluster_means(values: np.ndarray, codes: np.ndarray, n_cells: int, clusters: np.ndarray, n_boot: int,
                            rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Yield arrays of shape (chunk, n_cells): cell means of replicates that draw whole clusters.

    The unit drawn is the cluster (the scenario: every run of one scenario shares its situation and
    roles, so its runs are not independent of each other). A replicate draws the design's scenarios
    with replacement, once for all cells, and each run weighs as often as its scenario was drawn; so
    a scenario that suits one model moves all of that model's cells together, as it does in the data,
    and intervals of averages over cells are not narrowed by treating shared scenarios as new ones.
    """
    values = np.asarray(values, dtype=float)
    codes = np.asarray(codes, dtype=np.int64)
    cluster_codes, names = cell_codes(np.asarray(clusters))
    k = len(names)
    onehot = np.zeros((len(values), n_cells))
    if len(values):
        onehot[np.arange(len(values)), codes] = 1.0
    done = 0
    while done < n_boot:
        b = min(CHUNK, n_boot - done)
        drawn = rng.multinomial(k, np.full(k, 1.0 / k), size=b).astype(float) if k else np.zeros((b, 0))
        weights = drawn[:, cluster_codes] if len(values) else np.zeros((b, 0))
        sums = (weights * values) @ onehot
        counts = weights @ onehot
        with np.errstate(invalid="ignore", divide="ignore"):
            yield np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), np.nan)
        done += b
