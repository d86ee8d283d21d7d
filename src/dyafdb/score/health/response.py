"""No-response and the longest silence of a side.

A partner *turn end* is exactly TOR_end's (:mod:`dyafdb.score.turntaking`): a partner silence of at
least ``turntaking.pause_s``, between two partner segments or from the partner's last segment to the
end of the recording. The side *did not respond* to a turn end ``[e, r)`` when it has no VAD speech
frame in it: it stayed silent until the partner spoke again (or the recording ended).
``no_response`` = unanswered turn ends / turn ends (None without a turn end; the denominator is
``tor_end_n``). ``longest_silence_s`` is the side's longest run of frames without VAD speech anywhere
in the recording, lead-in included (a side that never speaks: the whole recording).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from dyafdb.clock import FRAME_SECONDS
from dyafdb.score.vad import Interval


def no_response(turn_ends: Sequence[Interval], mask: np.ndarray) -> dict[str, Any]:
    silent = [(int(e), int(r)) for e, r in turn_ends if not mask[e:r].any()]
    return {"no_response": (len(silent) / len(turn_ends)) if turn_ends else None, "unanswered": silent}


def longest_silence_s(mask: np.ndarray) -> float:
    edges = np.flatnonzero(np.diff(np.concatenate([[True], np.asarray(mask, dtype=bool), [True]]).astype(np.int8)))
    # edges pair up as (start of a silent run, end of it)
    runs = edges[1::2] - edges[0::2]
    return round(float(runs.max() if len(runs) else 0) * FRAME_SECONDS, 2)
