"""The bridge's side of an out-of-process agent: spawn, talk the frame protocol, fail loudly.

A worker that crashes, exits, hangs past its timeout or sends a malformed message raises
:class:`AgentError` naming the agent, its side and the tick (self-play runs one model on both
sides) and the reason, with the tail of the worker's stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from typing import Any, Sequence

import numpy as np

from dyafdb.agents import wire
from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session
from dyafdb.schema_check import model_default

DEFAULT_COMMAND = (sys.executable, "-m", "dyafdb.agents.worker")


class WireSession:
    """The agent protocol spoken over the worker frame protocol (``dyafdb.agents.wire``).

    Shared by a worker process (:class:`RemoteAgent`) and an engine session
    (``dyafdb.agents.engine.client.EngineAgent``): each gives ``name``, ``step_timeout_s``, ``_send``
    and ``_expect`` for its transport. ``begin_step``/``end_step`` let the bridge step two at once;
    the side and tick kept here name where a failure happened.
    """

    name: str
    step_timeout_s: float
    _side: str | None = None
    _tick = -1

    def _send(self, data: bytes) -> None:
        raise NotImplementedError

    def _expect(self, kind: int, timeout: float, doing: str) -> bytes:
        raise NotImplementedError

    def open(self, session: Session) -> AgentInfo:
        self._side, self._tick = session.side, -1
        self._send(wire.encode_json(wire.OPEN, session.to_json()))
        return AgentInfo(**json.loads(self._expect(wire.OPENED, self.step_timeout_s * 10, "opening the session")))

    def begin_step(self, heard: np.ndarray) -> None:
        self._tick += 1
        self._send(wire.encode(wire.STEP, np.ascontiguousarray(heard, dtype="<f4").tobytes()))

    def end_step(self) -> Frame:
        audio, text, finished = wire.decode_frame(self._expect(wire.FRAME, self.step_timeout_s, "stepping"))
        return Frame(audio, text, finished)

    def step(self, heard: np.ndarray) -> Frame:
        self.begin_step(heard)
        return self.end_step()


class RemoteAgent(WireSession):
    """An agent living in its own process; ``begin_step``/``end_step`` let two run concurrently."""

    def __init__(self, name: str, adapter: str, params: dict[str, Any] | None = None,
                 command: Sequence[str] | None = None, env: dict[str, str] | None = None,
                 startup_timeout_s: float = float(model_default("worker", "startup_timeout_s")),
                 step_timeout_s: float = float(model_default("worker", "step_timeout_s")), log_path: str | None = None,
                 wait: bool = True):
        """Start the worker and send INIT; with ``wait=False`` the caller calls :meth:`wait_ready`
        later, so several workers load their models at the same time."""
        self.name = name
        self.step_timeout_s = step_timeout_s
        self._side: str | None = None  # of the session in progress, for error messages
        self._tick = -1
        self._log = open(log_path, "ab") if log_path else tempfile.TemporaryFile()
        argv = list(command or DEFAULT_COMMAND)
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                         env={**os.environ, **(env or {})}, bufsize=0)
        except OSError as exc:
            raise AgentError(f"agent {name}: cannot start worker {argv!r}: {exc}") from None
        self._reader = wire.FdReader(self.proc.stdout.fileno())
        self._out = self.proc.stdin.fileno()
        self._send(wire.encode_json(wire.INIT, {"adapter": adapter, "model": name, "params": params or {}}))
        self._startup_deadline = time.monotonic() + startup_timeout_s
        self.worker_info: dict[str, Any] | None = None
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Block until the worker has loaded its model (READY), within the start-up timeout."""
        if self.worker_info is None:
            remaining = max(self._startup_deadline - time.monotonic(), 0.001)
            self.worker_info = json.loads(self._expect(wire.READY, remaining, "starting"))

    # -- plumbing -------------------------------------------------------------------------------
    def _stderr_tail(self, lines: int = 15) -> str:
        try:
            self._log.flush()
            self._log.seek(0)
            tail = deque(self._log.read().decode(errors="replace").splitlines(), maxlen=lines)
            self._log.seek(0, 2)
        except (OSError, ValueError):
            return ""
        return ("\n  worker stderr (last lines):\n    " + "\n    ".join(tail)) if tail else ""

    def _where(self) -> str:
        if self._side is None:
            return ""
        return f" (side {self._side}, tick {self._tick})" if self._tick >= 0 else f" (side {self._side})"

    def _fail(self, reason: str) -> AgentError:
        self.kill()
        return AgentError(f"agent {self.name}{self._where()}: {reason}{self._stderr_tail()}")

    def _send(self, data: bytes) -> None:
        try:
            wire.write_all(self._out, data)
        except (BrokenPipeError, OSError):
            raise self._fail(f"worker died (exit code {self.proc.poll()})") from None

    def _expect(self, kind: int, timeout: float, doing: str) -> bytes:
        try:
            got, payload = self._reader.read(timeout)
        except TimeoutError:
            raise self._fail(f"worker hung: no reply within {timeout:g} s while {doing}") from None
        except EOFError:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # closed its stdout but lives on
                code = None
            if code == 0:
                raise self._fail(f"worker exited with code 0 while {doing}, without an error and without being asked "
                                 "to quit (does the adapter or a library call exit()?)") from None
            raise self._fail(f"worker crashed while {doing} (exit code {code})") from None
        except wire.ProtocolError as exc:
            raise self._fail(f"malformed message from worker while {doing}: {exc}") from None
        if got == wire.ERROR:
            err = json.loads(payload)
            raise self._fail(f"worker error while {doing}: {err.get('error')}\n{err.get('traceback', '')}")
        if got != kind:
            raise self._fail(f"malformed exchange while {doing}: expected {wire.KIND_NAMES[kind]}, got {wire.KIND_NAMES.get(got, got)}")
        return payload

    # -- the agent protocol (open and the steps are WireSession's) --------------------------------
    def close(self) -> dict[str, Any] | None:
        """End the session; returns what the worker's agent reported at close (see ``Agent.close``)."""
        if self.proc.poll() is None:
            self._send(wire.encode(wire.CLOSE))
            payload = self._expect(wire.CLOSED, self.step_timeout_s, "closing the session")
            return json.loads(payload) if payload else None
        return None

    def shutdown(self) -> None:
        """End the worker process (after the last conversation of a job)."""
        if self.proc.poll() is None:
            try:
                wire.write_all(self._out, wire.encode(wire.QUIT))
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
