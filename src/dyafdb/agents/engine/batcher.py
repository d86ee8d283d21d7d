"""One batched step per tick for the sessions of an engine, however their frames arrive.

Each session's connection thread hands in its heard frame and blocks until its frame comes back.
The stepping thread starts a tick when the first frame is waiting and steps as soon as every open
session has handed one in, or when ``max_wait_s`` has passed since the first (a slow or stalled
conversation delays the others by at most that, once per tick). A session that has not handed in
a frame for ``step_timeout_s`` is dropped: its slot is freed and its next call fails.

A model step that raises leaves the model's state unknown, so the batcher fails every session it
hosts and stops; the host process then exits, and the record jobs fail and rerun.

A model whose sessions start with work of their own (PersonaPlex's prompt phase) says so with
``ready(slot)`` and ``prompting()`` (and ``enable_ride_along``, called here): ``open`` returns once the slot is ready, and meanwhile every
tick carries that work along (``step`` with the frames at hand, or with none when no session
brings one), so a joining session costs the others no stalled ticks.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

import numpy as np

from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session
from dyafdb.schema_check import model_default


class BatchModel(Protocol):
    """A loaded model hosting up to ``capacity`` sessions in slots, stepped together."""

    capacity: int

    def open(self, session: Session) -> tuple[int, AgentInfo]: ...

    def close(self, slot: int) -> None: ...

    def step(self, heard: dict[int, np.ndarray]) -> dict[int, Frame]: ...


def _model_prompting(model: object) -> bool:
    prompting = getattr(model, "prompting", None)
    return bool(prompting()) if callable(prompting) else False


class TickBatcher:
    def __init__(self, model: BatchModel, max_wait_s: float = 0.01,
                 step_timeout_s: float = float(model_default("worker", "step_timeout_s"))):
        self.model = model
        self.max_wait_s = max_wait_s
        self.step_timeout_s = step_timeout_s
        self._cond = threading.Condition()
        self._model_lock = threading.Lock()  # open/close/step never overlap on the model
        # Sessions are keyed by a handle that is never reused, so a dropped session's late call
        # can never reach the slot's next occupant.
        self._slot_of: dict[int, int] = {}
        self._next_handle = 0
        self._open: dict[int, float] = {}  # handle -> when it last handed in a frame or opened
        self._pending: dict[int, np.ndarray] = {}
        self._results: dict[int, Frame] = {}
        self._dropped: dict[int, str] = {}
        self.failure: str | None = None
        self.batch_sizes: list[int] = []
        self.prompt_ticks = 0  # ticks that carried a joining session's prompt step and no frame
        self.sessions_opened = 0
        self._stop = False
        enable = getattr(model, "enable_ride_along", None)
        if callable(enable):  # this batcher ticks while a joining session's work is done (open waits for ready)
            enable()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="dyafdb-engine-tick")
        self._thread.start()

    # -- session side -----------------------------------------------------------------------------
    def open(self, session: Session) -> tuple[int, AgentInfo]:
        self._check_alive()
        with self._model_lock:
            slot, info = self.model.open(session)
        ready = getattr(self.model, "ready", None)
        if callable(ready):  # its prompt phase rides in the ticks: wake the stepping thread, wait for it
            with self._cond:
                self._cond.notify_all()
                while True:
                    with self._model_lock:
                        done = ready(slot)
                    if done:
                        break
                    if self.failure is not None or self._stop:
                        with self._model_lock:
                            self.model.close(slot)
                        self._check_alive()
                        raise AgentError("engine stopped while the session joined")
                    self._cond.wait(1.0)
        with self._cond:
            handle = self._next_handle
            self._next_handle += 1
            self._slot_of[handle] = slot
            self._open[handle] = time.monotonic()
            self.sessions_opened += 1
        return handle, info

    def step(self, slot: int, heard: np.ndarray) -> Frame:
        """``slot``: the handle :meth:`open` returned."""
        with self._cond:
            self._raise_if_gone(slot)
            self._pending[slot] = heard
            self._open[slot] = time.monotonic()
            self._cond.notify_all()
            while slot not in self._results:
                self._raise_if_gone(slot)
                self._cond.wait(1.0)
            return self._results.pop(slot)

    def close(self, slot: int) -> None:
        with self._cond:
            known = self._open.pop(slot, None) is not None
            self._pending.pop(slot, None)
            self._results.pop(slot, None)
            self._dropped.pop(slot, None)
            model_slot = self._slot_of.pop(slot, None) if known else None
            self._cond.notify_all()
        if model_slot is not None and self.failure is None:
            with self._model_lock:
                self.model.close(model_slot)

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout=5)

    def _check_alive(self) -> None:
        if self.failure is not None:
            raise AgentError(f"engine failed: {self.failure}")

    def _raise_if_gone(self, slot: int) -> None:
        self._check_alive()
        if slot in self._dropped:
            raise AgentError(self._dropped[slot])
        if slot not in self._open:
            raise AgentError(f"engine: slot {slot} holds no open session")

    # -- the stepping thread ----------------------------------------------------------------------
    def _prompting(self) -> bool:
        with self._model_lock:  # open() changes the model's sessions under this lock
            return _model_prompting(self.model)

    def _drop_hung(self, now: float) -> list[int]:
        hung = [s for s, seen in self._open.items() if s not in self._pending and now - seen > self.step_timeout_s]
        for handle in hung:
            del self._open[handle]
            self._dropped[handle] = (f"engine dropped this session: no frame for "
                                     f"{self.step_timeout_s:g} s (step timeout)")
        return [self._slot_of.pop(h) for h in hung]

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stop and not self._prompting():
                    hung = self._drop_hung(time.monotonic())
                    if hung:
                        break
                    self._cond.wait(min(1.0, self.step_timeout_s))
                if self._stop:
                    return
                if not self._pending and self._open:  # a prompt step waits a moment for the others' frames
                    self._cond.wait(self.max_wait_s)
                deadline = time.monotonic() + self.max_wait_s
                while self._pending and set(self._open) - set(self._pending):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                hung = self._drop_hung(time.monotonic())
                batch, self._pending = self._pending, {}
                slots = {h: self._slot_of[h] for h in batch}
            for slot in hung:
                with self._model_lock:
                    self.model.close(slot)
            prompting = self._prompting()
            if not batch and not prompting:
                continue
            try:
                with self._model_lock:
                    by_slot = self.model.step({slots[h]: heard for h, heard in batch.items()})
                frames = {h: by_slot[slots[h]] for h in batch}
            except BaseException as exc:  # the model's state is unknown now: fail everyone, stop
                with self._cond:
                    self.failure = f"model step raised {type(exc).__name__}: {exc}"
                    self._cond.notify_all()
                return
            with self._cond:
                self._results.update({h: f for h, f in frames.items() if h in self._open})
                if batch:
                    self.batch_sizes.append(len(batch))
                else:
                    self.prompt_ticks += 1
                self._cond.notify_all()
