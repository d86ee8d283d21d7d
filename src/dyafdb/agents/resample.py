"""Continuous 24 kHz -> 16 kHz resampling, one 80 ms frame at a time, sample-exact across frames.

A causal polyphase FIR (up 2, low-pass, down 3) with its input history carried over, so that
resampling a stream frame by frame gives exactly the samples of resampling it in one go
(``resample_whole``), and every 1,920-sample frame yields exactly 1,280 output samples. Chunk
boundaries cut from the output therefore fall on fixed sample indices of one continuous signal.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.signal import firwin, upfirdn

UP, DOWN = 2, 3
TAPS = 6 * 24 + 1  # 145 taps: (TAPS - 1) / 2 = 72 upsampled samples = a 24-sample (1.5 ms) delay at 16 kHz
HISTORY = 96  # input samples kept; a multiple of DOWN, and >= TAPS / UP


@lru_cache(maxsize=1)
def lowpass() -> np.ndarray:
    # Cut at 16 kHz's Nyquist (8 kHz) on the 48 kHz upsampled grid; gain UP restores zero-stuffed level.
    return (firwin(TAPS, 1.0 / DOWN, window=("kaiser", 8.0)) * UP).astype(np.float64)


class StreamResampler:
    """24 kHz in, 16 kHz out, with state across calls; input lengths must be multiples of 3."""

    def __init__(self) -> None:
        self._history = np.zeros(HISTORY, dtype=np.float64)

    def process(self, frame: np.ndarray) -> np.ndarray:
        x = np.asarray(frame, dtype=np.float64)
        if len(x) % DOWN:
            raise ValueError(f"StreamResampler needs a multiple of {DOWN} samples per call, got {len(x)}")
        buf = np.concatenate([self._history, x])
        y = upfirdn(lowpass(), buf, up=UP, down=DOWN)
        start = HISTORY * UP // DOWN
        out = y[start:start + len(x) * UP // DOWN]
        self._history = buf[-HISTORY:]
        return out.astype(np.float32)


def resample_whole(x: np.ndarray) -> np.ndarray:
    """The same filter over a whole signal at once (the reference for exactness checks)."""
    x = np.asarray(x, dtype=np.float64)
    y = upfirdn(lowpass(), np.concatenate([np.zeros(HISTORY), x]), up=UP, down=DOWN)
    start = HISTORY * UP // DOWN
    return y[start:start + len(x) * UP // DOWN].astype(np.float32)
