"""An agent that is always silent: the bridge's cost with no model in the way (benchmarks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentInfo, Frame, Session, silence
from dyafdb.agents.registry import adapter


@adapter("null")
class NullAgent:
    concurrent_step = False  # its step costs microseconds; no thread handoff needed

    def __init__(self, params: dict[str, Any], model_name: str = "null"):
        self.model_name = model_name
        self._silence = silence()

    def open(self, session: Session) -> AgentInfo:
        return AgentInfo(adapter="null", adapter_version=__version__, model=self.model_name)

    def step(self, heard: np.ndarray) -> Frame:
        return Frame(self._silence)

    def close(self) -> None:
        pass
