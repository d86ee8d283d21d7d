"""An engine process: ``python -m dyafdb.agents.engine.host --socket PATH --adapter A --model M``.

Loads the model once, then binds the Unix socket (so the socket's appearance means "ready": a
Snakemake service job or a script waits for it) and serves each connection as one session with the
worker frame protocol (``dyafdb.agents.wire``): the host sends READY on connect, then answers OPEN,
STEP, CLOSE and QUIT as a worker does. Frames of all sessions go through one
:class:`~dyafdb.agents.engine.batcher.TickBatcher`.

Engines whose model steps each session on its own (``lockstep = False``: MiniCPM-o, Raon) go
through a :class:`~dyafdb.agents.engine.sessions.SessionPool` instead: a connection waits for a turn
(one of the model's ``concurrent`` sessions) before READY, keeps it until it leaves, and its session
is dropped when it sends nothing for the step timeout. CLOSED carries what the model reported at
close (Raon's recoverable errors and voice facts), as a worker's does.

It exits on SIGTERM/SIGINT, after ``--idle-exit-s`` with no session (so a forgotten engine never
holds a GPU for long), when its parent dies (Linux), or with code 1 when a model step fails; the
socket file is removed on the way out. A session's own error (a bad message, a dropped session)
ends that connection only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

from dyafdb.agents import wire
from dyafdb.agents.base import AgentError, Session, check_frame
from dyafdb.agents.engine.batcher import TickBatcher
from dyafdb.agents.engine.sessions import SessionPool
from dyafdb.schema_check import model_default


class EngineHost:
    def __init__(self, socket_path: Path, adapter: str, model: str, params: dict, capacity: int,
                 max_wait_s: float, step_timeout_s: float, idle_exit_s: float):
        from dyafdb.agents.engine.models import make_engine

        self.socket_path, self.adapter, self.model = socket_path, adapter, model
        t0 = time.perf_counter()
        self.engine = make_engine(adapter, params, model, capacity)
        self.load_s = time.perf_counter() - t0
        self.lockstep = bool(getattr(self.engine, "lockstep", True))
        self.step_timeout_s = step_timeout_s
        self.batcher: TickBatcher | SessionPool = (
            TickBatcher(self.engine, max_wait_s=max_wait_s, step_timeout_s=step_timeout_s) if self.lockstep
            else SessionPool(self.engine, step_timeout_s=step_timeout_s))
        self.idle_exit_s = idle_exit_s
        self.connections = 0
        self._active = 0
        self._last_active = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def info(self) -> dict:
        return {"adapter": self.adapter, "model": self.model, "pid": os.getpid(), "engine": True,
                "capacity": self.engine.capacity, "model_loads": 1, "load_s": round(self.load_s, 3),
                "sessions_opened": self.batcher.sessions_opened, "ticks": len(self.batcher.batch_sizes),
                "largest_batch": max(self.batcher.batch_sizes, default=0), "lockstep": self.lockstep,
                "concurrent": getattr(self.batcher, "concurrent", self.engine.capacity)}

    def serve(self) -> int:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.socket_path.with_name(self.socket_path.name + f".{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(tmp))
        server.listen(64)
        os.replace(tmp, self.socket_path)  # appears only once the model is loaded and we listen
        server.settimeout(0.5)
        print(f"engine {self.model}: ready on {self.socket_path} ({json.dumps(self.info())})", file=sys.stderr, flush=True)
        try:
            while not self._stop.is_set():
                if self.batcher.failure is not None:
                    print(f"engine {self.model}: {self.batcher.failure}; exiting", file=sys.stderr, flush=True)
                    return 1
                with self._lock:
                    idle = self._active == 0 and time.monotonic() - self._last_active > self.idle_exit_s
                if idle:
                    print(f"engine {self.model}: idle for {self.idle_exit_s:g} s; exiting", file=sys.stderr, flush=True)
                    return 0
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    continue
                with self._lock:
                    self._active += 1
                    self.connections += 1
                threading.Thread(target=self._session, args=(conn,), daemon=True).start()
            return 0
        finally:
            server.close()
            self.socket_path.unlink(missing_ok=True)
            self.batcher.stop()

    def stop(self, *_: object) -> None:
        self._stop.set()

    def _session(self, conn: socket.socket) -> None:
        fd = conn.fileno()
        reader = wire.FdReader(fd)
        handle = None
        turn = False
        try:
            if not self.lockstep:  # wait for a turn before READY: the job opens nothing while it waits
                try:
                    turn = self.batcher.acquire_turn(self._stop)
                except AgentError as exc:
                    wire.write_all(fd, wire.encode_json(wire.ERROR, {"error": str(exc)}))
                    return
                if not turn:
                    return
            wire.write_all(fd, wire.encode_json(wire.READY, {**self.info(), "adapter_version": _version()}))
            while True:
                try:
                    # A lockstep session's silence is the batcher's to judge; an own-stepped one is
                    # dropped here, freeing its turn for the next job.
                    timeout = self.step_timeout_s if handle is not None and not self.lockstep else None
                    kind, payload = reader.read(timeout)
                except EOFError:
                    return
                except TimeoutError:
                    print(f"engine {self.model}: dropped a session silent for {self.step_timeout_s:g} s (step timeout)",
                          file=sys.stderr, flush=True)
                    return
                try:
                    if kind == wire.OPEN:
                        if handle is not None:
                            self.batcher.close(handle)
                        handle, info = self.batcher.open(Session.from_json(json.loads(payload)))
                        info.extra = {**info.extra, "engine_pid": os.getpid()}
                        wire.write_all(fd, wire.encode_json(wire.OPENED, info.to_json()))
                    elif kind == wire.STEP:
                        if len(payload) != wire.AUDIO_BYTES or handle is None:
                            raise wire.ProtocolError("STEP without an open session" if handle is None else
                                                     f"STEP carries {len(payload)} bytes; expected {wire.AUDIO_BYTES}")
                        heard = np.frombuffer(payload, dtype="<f4").astype(np.float32)
                        frame = check_frame(self.batcher.step(handle, heard), self.adapter)
                        wire.write_all(fd, wire.encode_frame(frame.audio, frame.text, frame.finished))
                    elif kind == wire.CLOSE:
                        report = None
                        if handle is not None:
                            report = self.batcher.close(handle)
                            handle = None
                        wire.write_all(fd, wire.encode_json(wire.CLOSED, report) if isinstance(report, dict)
                                       else wire.encode(wire.CLOSED))
                    elif kind == wire.QUIT:
                        return
                    else:
                        raise wire.ProtocolError(f"unexpected message {wire.KIND_NAMES.get(kind, kind)}")
                except Exception as exc:  # this session ends; the engine and other sessions go on
                    wire.write_all(fd, wire.encode_json(wire.ERROR, {"error": f"{type(exc).__name__}: {exc}",
                                                                      "traceback": traceback.format_exc()}))
                    return
        except OSError:
            return
        finally:
            if handle is not None:
                try:
                    self.batcher.close(handle)
                except Exception as exc:  # the connection is gone either way
                    print(f"engine {self.model}: closing a session failed: {exc}", file=sys.stderr, flush=True)
            if turn:
                self.batcher.release_turn()
            conn.close()
            with self._lock:
                self._active -= 1
                self._last_active = time.monotonic()


def _version() -> str:
    from dyafdb import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--params", default="{}", help="the model's params as JSON")
    parser.add_argument("--sessions", type=int, default=model_default("engine", "sessions"), help="slots: sessions stepped in one batch")
    parser.add_argument("--max-wait-ms", type=float, default=float(model_default("engine", "max_wait_ms")), help="longest wait to fill a batch")
    parser.add_argument("--step-timeout-s", type=float, default=float(model_default("worker", "step_timeout_s")), help="drop a session silent this long")
    parser.add_argument("--idle-exit-s", type=float, default=float(model_default("engine", "idle_exit_s")), help="exit after this long without sessions")
    args = parser.parse_args(argv)
    from dyafdb.agents import worker

    die_with_parent = getattr(worker, "die_with_parent", None)  # the workers' PR_SET_PDEATHSIG, where present
    if die_with_parent is not None:
        die_with_parent()
    host = EngineHost(args.socket, args.adapter, args.model, json.loads(args.params), args.sessions,
                      args.max_wait_ms / 1000.0, args.step_timeout_s, args.idle_exit_s)
    signal.signal(signal.SIGTERM, host.stop)
    signal.signal(signal.SIGINT, host.stop)
    return host.serve()


if __name__ == "__main__":
    sys.exit(main())
