"""Whole-signal polyphase resampling in numpy, equal to ``scipy.signal.resample_poly`` to float32 rounding.

Written out because importing scipy.signal costs ~0.7 s per process, which every one-conversation
record job (the CPU agent's TTS and ASR, the garble watcher's Whisper) would pay.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=8)
def _polyphase_filter(up: int, down: int) -> tuple[np.ndarray, int]:
    """scipy.signal.resample_poly's default low-pass (Kaiser beta 5, 10 zero crossings, gain ``up``),
    split into one row of taps per output phase: row r serves outputs whose upsampled position is r mod up."""
    half = 10 * max(up, down)
    cutoff = 1.0 / max(up, down)
    n = np.arange(-half, half + 1)
    h = cutoff * np.sinc(cutoff * n) * np.kaiser(2 * half + 1, 5.0)
    h = h / h.sum() * up
    taps = 2 * half // up + 2
    r = np.arange(up)[:, None]
    first = -(-(r - half) // up)  # first input sample that reaches output phase r
    hidx = r - (first + np.arange(taps)[None, :]) * up + half
    table = np.where((hidx >= 0) & (hidx < h.size), h[np.clip(hidx, 0, h.size - 1)], 0.0)
    return table.astype(np.float32), half


def resample(audio: np.ndarray, up: int, down: int) -> np.ndarray:
    """Polyphase resampling by ``up/down`` with a zero-phase filter, equal to ``scipy.signal.resample_poly``
    to float32 rounding."""
    x = np.asarray(audio, dtype=np.float32)
    table, half = _polyphase_filter(up, down)
    taps = table.shape[1]
    n_out = -(-x.size * up // down)
    period = up // math.gcd(up, down)  # output phases repeat with this period
    blocks = -(-n_out // period)
    j = np.arange(blocks * period, dtype=np.int64) * down  # output positions on the upsampled grid
    first = -(-(j - half) // up)
    pad = taps + half // up + 1
    padded = np.concatenate([np.zeros(pad, np.float32), x, np.zeros(pad + taps + period * down // up + 1, np.float32)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, taps)[first + pad].reshape(blocks, period, taps)
    cycle = table[(np.arange(period) * down) % up]
    return np.einsum("bpt,pt->bp", windows, cycle).reshape(-1)[:n_out].astype(np.float32)
