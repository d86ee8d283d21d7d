"""The bridge's logical clock: every stage agrees on these numbers.

Boundaries are integer frame indices everywhere; seconds appear only at the edges (reports,
transcripts), so set operations on frames stay exact.
"""

from __future__ import annotations

import math

SAMPLE_RATE = 24_000
FRAME_SAMPLES = 1_920
FRAME_SECONDS = FRAME_SAMPLES / SAMPLE_RATE  # 0.08 s
_EPS = 1e-9  # absorbs float error in seconds/0.08 so grid values (0.16 / 0.08 = 2) stay whole


def seconds_to_ticks(seconds: float) -> int:
    """Whole ticks covering ``seconds``, rounded up so a duration is never cut short.

    The 1.5 s lead-in is 18.75 frames; rounding up gives 19 ticks (1.52 s), so the opener always
    gets at least the lead-in the paper specifies.
    """
    return math.ceil(round(seconds / FRAME_SECONDS, 9))


def tick_to_seconds(tick: int) -> float:
    return round(tick * FRAME_SECONDS, 6)


def frames_ceil(seconds: float) -> int:
    """Fewest whole frames that last at least ``seconds``: "shorter than X" is ``n < frames_ceil(X)``."""
    return max(0, math.ceil(seconds / FRAME_SECONDS - _EPS))


def frames_floor(seconds: float) -> int:
    """Most whole frames that last at most ``seconds``: "at most X" is ``n <= frames_floor(X)``."""
    return max(0, math.floor(seconds / FRAME_SECONDS + _EPS))
