"""Sessions of an engine that steps each session on its own: one loaded model, no shared tick.

MiniCPM-o and Raon are not stepped in one batched forward pass: MiniCPM-o computes a ~1 s chunk in
a worker thread of its own and keeps its streaming state on the model object, Raon's gateway holds
each session's decoding state and serialises the model behind its own lock. Their engines
(``lockstep = False``) load the model once and step each session as its frame arrives, from the
session's connection thread; waiting for the others' frames would only delay them.

How many sessions run at once is the model's ``concurrent`` (its turns). A connection takes a turn
before the host sends READY, so a record job whose model is busy waits before it opens any session
(a partner engine would otherwise drop its already opened session for silence), and it keeps the
turn until it leaves. Turns are handed out in arrival order.

Faults, as the tick batcher's: a step that raises :class:`EngineFailure` (the model's state is
unknown: a failed MiniCPM-o chunk, a dead gateway) fails every hosted session and stops the engine;
any other error ends that session only. The host drops a session silent past its step timeout.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Protocol

import numpy as np

from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session
from dyafdb.schema_check import model_default


class EngineFailure(AgentError):
    """A model error after which no session of the engine can go on."""


class SessionModel(Protocol):
    """A loaded model hosting up to ``concurrent`` sessions, each stepped on its own."""

    capacity: int
    concurrent: int
    lockstep: bool  # False

    def open(self, session: Session) -> tuple[int, AgentInfo]: ...

    def close(self, slot: int) -> dict[str, Any] | None: ...

    def step_one(self, slot: int, heard: np.ndarray) -> Frame: ...


class SessionPool:
    """The host's view of a :class:`SessionModel`: turns, handles, faults (the TickBatcher's interface)."""

    def __init__(self, model: SessionModel, step_timeout_s: float = float(model_default("worker", "step_timeout_s"))):
        self.model = model
        self.step_timeout_s = step_timeout_s
        self.concurrent = max(1, int(model.concurrent))
        self._cond = threading.Condition()
        self._turns_held = 0
        self._queue: deque[int] = deque()
        self._next_ticket = 0
        self._slot_of: dict[int, int] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._next_handle = 0
        self.failure: str | None = None
        self.batch_sizes: list[int] = []  # sessions open at each step: the largest is the concurrency reached
        self.sessions_opened = 0
        self.steps = 0

    # -- turns (one per connection) -----------------------------------------------------------------
    def acquire_turn(self, stop: threading.Event | None = None, timeout_s: float | None = None) -> bool:
        """Wait, in arrival order, until fewer than ``concurrent`` connections hold a turn."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            self._check_alive()
            ticket = self._next_ticket
            self._next_ticket += 1
            self._queue.append(ticket)
            try:
                while not (self._queue[0] == ticket and self._turns_held < self.concurrent):
                    self._check_alive()
                    if stop is not None and stop.is_set():
                        return False
                    if deadline is not None and time.monotonic() > deadline:
                        return False
                    self._cond.wait(0.5)
                self._turns_held += 1
                return True
            finally:
                self._queue.remove(ticket)
                self._cond.notify_all()

    def release_turn(self) -> None:
        with self._cond:
            self._turns_held = max(0, self._turns_held - 1)
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    # -- sessions -----------------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self.failure is not None:
            raise AgentError(f"engine failed: {self.failure}")

    def open(self, session: Session) -> tuple[int, AgentInfo]:
        with self._cond:
            self._check_alive()
            if len(self._slot_of) >= self.concurrent:
                raise AgentError(f"engine full: {self.concurrent} session(s) at once")
        slot, info = self.model.open(session)
        with self._cond:
            handle = self._next_handle
            self._next_handle += 1
            self._slot_of[handle] = slot
            self._locks[handle] = threading.Lock()
            self.sessions_opened += 1
        return handle, info

    def step(self, handle: int, heard: np.ndarray) -> Frame:
        with self._cond:
            self._check_alive()
            if handle not in self._slot_of:
                raise AgentError(f"engine: handle {handle} holds no open session")
            slot, lock = self._slot_of[handle], self._locks[handle]
            self.batch_sizes.append(len(self._slot_of))
        with lock:
            try:
                frame = self.model.step_one(slot, heard)
            except EngineFailure as exc:
                with self._cond:
                    self.failure = str(exc)
                    self._cond.notify_all()
                raise
        self.steps += 1
        return frame

    def close(self, handle: int) -> dict[str, Any] | None:
        with self._cond:
            slot = self._slot_of.pop(handle, None)
            lock = self._locks.pop(handle, None)
        if slot is None or self.failure is not None:
            return None
        with lock or threading.Lock():
            return self.model.close(slot)

    def stop(self) -> None:
        with self._cond:
            handles = list(self._slot_of)
        for handle in handles:
            try:
                self.close(handle)
            except Exception:  # stopping: the engine exits anyway
                pass
        stop = getattr(self.model, "shutdown", None)
        if callable(stop):
            stop()
