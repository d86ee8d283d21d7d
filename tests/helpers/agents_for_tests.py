"""Agents with known behaviour for bridge and worker tests (importable by out-of-process workers)."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.clock import FRAME_SAMPLES


def probe_audio(side: str, tick: int) -> np.ndarray:
    """A frame that encodes who emitted it and when: sample k = side_code + tick/1000 + k*1e-7."""
    base = (0.1 if side == "a" else 0.2) + tick / 1000.0
    return (base + np.arange(FRAME_SAMPLES, dtype=np.float64) * 1e-7).astype(np.float32)


class ProbeAgent:
    """Emits tick-coded frames, remembers everything it heard; options via params."""

    def __init__(self, params: dict[str, Any], model_name: str = "probe"):
        self.params = params
        self.heard: list[np.ndarray] = []
        self.tick = 0
        self.side = "a"

    def open(self, session: Session) -> AgentInfo:
        self.side, self.tick, self.heard = session.side, 0, []
        self.session = session
        return AgentInfo(adapter="probe", adapter_version="test", model="probe", extra={"prompt": session.prompt})

    def step(self, heard: np.ndarray) -> Frame:
        self.heard.append(np.array(heard, copy=True))
        sleep = self.params.get("sleep_s", 0)
        if sleep:
            time.sleep(sleep)
        t = self.tick
        self.tick += 1
        if self.params.get("crash_at") == t:
            raise RuntimeError("boom (planned crash)")
        if self.params.get("exit_at") == t:
            os._exit(self.params.get("exit_code", 17))
        if self.params.get("hang_at") == t:
            if self.params.get("hang_marker"):  # tells a test the hang has begun
                open(f"{self.params['hang_marker']}.{self.side}", "w").close()
            time.sleep(3600)
        if self.params.get("bad_shape_at") == t:
            return Frame(np.zeros(100, dtype=np.float32))
        finished = self.params.get("finish_at") == t
        return Frame(probe_audio(self.side, t), [f"{self.side}{t}"], finished)

    def close(self) -> None:
        pass
