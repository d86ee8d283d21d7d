"""Echo: is a side's output a copy of what it just heard?

The bridge gives each side its partner's frame of tick t-1 at tick t, so a side that replays its
input emits, at tick t, the partner's frame t - lag (lag = 1 tick for a replay within the same step;
``health.echo_lag_ticks``). For every frame t where the side's frame and the partner's frame t - lag
both carry energy (frame RMS at least ``echo_min_rms``), the normalised cross-correlation at that
exact lag is ``sum(x*y) / sqrt(sum(x^2) * sum(y^2))``: 1 for a copy at any gain, near 0 for
unrelated speech. ``echo`` is its mean over those frames (None when there is none), ``echo_n`` their
number, ``echo_flag`` 1 when ``echo`` is at least ``echo_threshold``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dyafdb.clock import FRAME_SAMPLES


def echo(side: np.ndarray, partner: np.ndarray, lag_ticks: int, min_rms: float) -> dict[str, Any]:
    """Mean normalised cross-correlation of ``side`` frame t with ``partner`` frame t - lag."""
    n = min(len(side), len(partner)) // FRAME_SAMPLES
    if n <= lag_ticks:
        return {"echo": None, "echo_n": 0}
    x = np.asarray(side[:n * FRAME_SAMPLES], dtype=np.float64).reshape(n, FRAME_SAMPLES)[lag_ticks:]
    y = np.asarray(partner[:n * FRAME_SAMPLES], dtype=np.float64).reshape(n, FRAME_SAMPLES)[:n - lag_ticks]
    ex, ey = (x ** 2).sum(axis=1), (y ** 2).sum(axis=1)
    floor = min_rms ** 2 * FRAME_SAMPLES
    both = (ex >= floor) & (ey >= floor)
    if not both.any():
        return {"echo": None, "echo_n": 0}
    ncc = (x[both] * y[both]).sum(axis=1) / np.sqrt(ex[both] * ey[both])
    return {"echo": float(ncc.mean()), "echo_n": int(both.sum())}
