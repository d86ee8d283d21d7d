"""A scripted agent: speaks a fixed, timed script, whatever it hears.

Tests and fixtures use it to get recordings whose segment timing is known to the frame. Each script
entry is ``{start_s, end_s, text, amplitude}``; the audio is shaped noise whose RMS is exactly
``amplitude`` in every frame of the entry (so VAD thresholds can be hit precisely), and the text's
words are spread evenly over the entry's ticks. Times are on the conversation clock (tick 0 = start).

params:
  script:          entries used on either side
  opener_script:   entries used instead when this agent opens (optional)
  responder_script: entries used instead when it does not open (optional)
  finish_at_s:     report ``finished`` at this time (optional)
  amplitude:       default RMS for entries without one (0.05)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.clock import FRAME_SAMPLES, seconds_to_ticks
from dyafdb.errors import InputError
from dyafdb.agents.registry import adapter


def _tick_of(seconds: float) -> int:
    return int(round(seconds / 0.08))


@adapter("scripted")
class ScriptedAgent:
    concurrent_step = False  # its step costs microseconds; no thread handoff needed

    def __init__(self, params: dict[str, Any], model_name: str = "scripted"):
        self.params = params
        self.model_name = model_name
        self.tick = 0
        self.plan: dict[int, tuple[float, list[str]]] = {}
        self.finish_tick: int | None = None
        self.rng = np.random.default_rng(0)

    def _entries(self, session: Session) -> list[dict[str, Any]]:
        key = "opener_script" if session.is_opener else "responder_script"
        entries = self.params.get(key, self.params.get("script", []))
        if not isinstance(entries, list):
            raise InputError(f"scripted agent {self.model_name}: params.{key} must be a list of {{start_s, end_s, text}} entries")
        return entries

    def open(self, session: Session) -> AgentInfo:
        self.tick = 0
        self.rng = np.random.default_rng(session.seed)
        self.plan = {}
        default_amp = float(self.params.get("amplitude", 0.05))
        for i, entry in enumerate(self._entries(session)):
            try:
                start, end = _tick_of(float(entry["start_s"])), _tick_of(float(entry["end_s"]))
            except (KeyError, TypeError, ValueError):
                raise InputError(f"scripted agent {self.model_name}: script entry {i} needs numeric start_s and end_s") from None
            amp = float(entry.get("amplitude", default_amp))
            words = str(entry.get("text", "")).split()
            n = max(end - start, 1)
            for k in range(start, end):
                self.plan[k] = (amp, [])
            for j, word in enumerate(words):
                self.plan[start + (j * n) // max(len(words), 1)][1].append(word)
        finish = self.params.get("finish_at_s")
        self.finish_tick = None if finish is None else seconds_to_ticks(float(finish))
        return AgentInfo(adapter="scripted", adapter_version=__version__, model=self.model_name,
                         extra={"entries": len(self._entries(session))})

    def step(self, heard: np.ndarray) -> Frame:
        amp, words = self.plan.get(self.tick, (0.0, []))
        if amp > 0:
            noise = self.rng.standard_normal(FRAME_SAMPLES)
            audio = (noise * (amp / np.sqrt(np.mean(noise ** 2)))).astype(np.float32)
        else:
            audio = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        finished = self.finish_tick is not None and self.tick + 1 >= self.finish_tick
        self.tick += 1
        return Frame(audio, list(words), finished)

    def close(self) -> None:
        self.plan = {}
