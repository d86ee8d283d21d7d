"""A person in one seat: the side of a conversation that a human speaks from a browser (``dyafdb seat``).

``adapter: person`` in a model entry declares a human seat. The design pairs it with every model of
its suite like any model (roles and openers counterbalanced), never with itself. Its frames come
from the browser, 1,920 samples at 24 kHz indexed by their sample count, through :meth:`feed`; the
bridge steps it like any agent, and the frame of tick t is the one the browser captured for t. A
frame that has not arrived when its tick runs is silence and is counted as late (``close`` reports
the count into meta.json). Its text channel is written afterwards from Whisper on its audio.

Outside a seat (``dyafdb record``, the workflow) it has no one to listen to, so ``open`` refuses.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session, silence
from dyafdb.agents.registry import adapter
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.suite.design import PERSON_ADAPTER


@adapter("person")  # = PERSON_ADAPTER (the registry reads the literal)
class PersonAgent:
    concurrent_step = False  # a dictionary look-up; a thread handoff would cost more

    def __init__(self, params: dict[str, Any], model_name: str = PERSON_ADAPTER):
        self.model_name = model_name
        self.live = False  # set by the seat that feeds it
        self._lock = threading.Lock()
        self._frames: dict[int, np.ndarray] = {}
        self.tick = 0
        self.late = 0
        self.stale = 0  # frames that arrived after their tick had run (dropped)
        self.received = 0

    def feed(self, index: int, audio: np.ndarray) -> None:
        """The browser's frame ``index`` (its first sample is sample ``index * 1920`` of the capture)."""
        audio = np.asarray(audio, dtype=np.float32)
        if audio.shape != (FRAME_SAMPLES,) or not np.all(np.isfinite(audio)):
            raise AgentError(f"person {self.model_name}: frame {index} is not {FRAME_SAMPLES} finite samples")
        with self._lock:
            self.received += 1
            if index < self.tick:
                self.stale += 1
                return
            self._frames[index] = audio

    def has(self, index: int) -> bool:
        with self._lock:
            return index in self._frames

    def open(self, session: Session) -> AgentInfo:
        if not self.live:
            raise AgentError(f"model {self.model_name} is a person (adapter: person): its conversations are recorded "
                             "in a browser with `dyafdb seat -c CONFIG`, not by `dyafdb record` or the workflow")
        with self._lock:
            self._frames, self.tick, self.late, self.stale, self.received = {}, 0, 0, 0, 0
        return AgentInfo(adapter=PERSON_ADAPTER, adapter_version=__version__, model=self.model_name,
                         extra={"source": "browser microphone, 24 kHz mono frames of 1,920 samples"})

    def step(self, heard: np.ndarray) -> Frame:
        with self._lock:
            audio = self._frames.pop(self.tick, None)
            if audio is None:
                self.late += 1
                audio = silence()
            self.tick += 1
        return Frame(audio)

    def close(self) -> dict[str, Any]:
        with self._lock:
            return {"late_input_frames": self.late, "stale_input_frames": self.stale, "received_frames": self.received}
