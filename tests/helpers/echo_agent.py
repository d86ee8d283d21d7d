"""An agent that replays what it hears, frame for frame, in the same step: its output at tick t is
what the bridge handed it at t, i.e. its partner's frame t-1 (the audio-health echo test)."""

from __future__ import annotations

from typing import Any

import numpy as np


class EchoAgent:
    def __init__(self, params: dict[str, Any], model_name: str = "echo"):
        self.gain = float(params.get("gain", 0.8))

    def open(self, session):
        from dyafdb.agents.base import AgentInfo

        return AgentInfo(adapter="echo", adapter_version="test", model="echo")

    def step(self, heard):
        from dyafdb.agents.base import Frame

        return Frame((np.asarray(heard, dtype=np.float32) * self.gain).astype(np.float32), [], False)

    def close(self):
        pass
