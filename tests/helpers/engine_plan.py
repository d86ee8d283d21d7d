"""Self-talk conversations stepped through a model engine by a plan, for the engine tests.

A plan maps each conversation to the global ticks it steps on: both of its sides join at its first
tick, hear each other's frame of the tick before (the bridge's t-1 coupling), and leave after its
last, so a test can put one conversation alone or among others that join, pause and leave around it.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

Plan = Mapping[str, Sequence[int]]


def run_plan(plan: Plan, join: Callable[[str, str], int], step: Callable[[dict[int, np.ndarray]], Mapping[int, Any]],
             tokens: Callable[[int], np.ndarray], leave: Callable[[int], None]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per conversation and side: the tokens of every step (stacked), the audio and the text.

    ``join(conversation, side)`` opens a session and returns its slot, ``step`` is the engine's
    (slot -> heard frame, returning slot -> Frame), ``tokens(slot)`` the tokens it sampled last."""
    slots: dict[tuple[str, str], int] = {}
    heard: dict[tuple[str, str], np.ndarray] = {}
    got = {c: {s: {"tokens": [], "audio": [], "text": []} for s in "ab"} for c in plan}
    for t in range(max(max(p) for p in plan.values()) + 1):
        for c, ticks in plan.items():
            if t == ticks[0]:
                for s in "ab":
                    slots[(c, s)] = join(c, s)
                    heard[(c, s)] = np.zeros(1920, np.float32)
        stepping = [c for c, ticks in plan.items() if t in ticks]
        frames = step({slots[(c, s)]: heard[(c, s)] for c in stepping for s in "ab"})
        for c in stepping:
            for s in "ab":
                frame = frames[slots[(c, s)]]
                got[c][s]["audio"].append(frame.audio)
                got[c][s]["text"].extend(frame.text)
                got[c][s]["tokens"].append(tokens(slots[(c, s)]))
            heard[(c, "a")], heard[(c, "b")] = frames[slots[(c, "b")]].audio, frames[slots[(c, "a")]].audio
            if t == plan[c][-1]:
                for s in "ab":
                    leave(slots[(c, s)])
    return {c: {s: {"tokens": np.stack(v["tokens"]), "audio": np.concatenate(v["audio"]), "text": v["text"]}
                for s, v in sides.items()} for c, sides in got.items()}
