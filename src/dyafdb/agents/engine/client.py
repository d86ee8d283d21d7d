"""A record job's side of one engine session: the agent protocol over the engine's Unix socket.

Behaves like :class:`dyafdb.agents.remote.RemoteAgent` for the bridge (``begin_step``/``end_step``
overlap both sides), but nothing is spawned: the engine is already loaded. An engine that dies, hangs
past the step timeout or drops the session raises :class:`AgentError`, which fails the conversation
(it is rerun); other sessions of the engine are not touched.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from dyafdb.agents import wire
from dyafdb.agents.base import AgentError
from dyafdb.agents.remote import WireSession
from dyafdb.schema_check import model_default


ENGINES_ENV = "DYAFDB_ENGINES"
# Set where the engines start beside the record jobs (a SLURM node group): seconds to wait for an
# engine's socket before failing the conversation, instead of loading a copy on a node whose GPUs
# were asked for the engines.
ENGINES_WAIT_ENV = "DYAFDB_ENGINES_WAIT_S"
# How long a job waits for a turn at an engine that hosts a few sessions at a time (MiniCPM-o: one):
# the jobs of a node group queue there, each for the conversations before it.
TURN_WAIT_ENV = "DYAFDB_ENGINE_TURN_WAIT_S"
DEFAULT_TURN_WAIT_S = 7200.0
# Turns this process holds per engine socket, and how many the engine has: a record job that holds
# them all (self-play on a one-session engine) would wait for itself, so it loads its own copy.
_TURNS_HELD: dict[str, int] = {}
_TURNS_OF: dict[str, int] = {}


def engine_socket(model: str) -> Path | None:
    """The socket of the engine hosting ``model``, if the job was given an engine folder
    (``DYAFDB_ENGINES``, set by whoever started the engines) and that model's engine listens in it."""
    folder = os.environ.get(ENGINES_ENV)
    if not folder:
        return None
    path = Path(folder) / f"{model}.sock"
    if _TURNS_HELD.get(str(path), 0) >= _TURNS_OF.get(str(path), 1 << 30):
        return None  # this job holds every turn (self-play on a one-session engine): waiting would never end
    wait_s = float(os.environ.get(ENGINES_WAIT_ENV) or 0)
    if wait_s > 0:
        deadline = time.monotonic() + wait_s
        while not _listening(path):
            if time.monotonic() > deadline:
                raise AgentError(f"engine for model {model} did not listen on {path} within {wait_s:g} s "
                                 f"({ENGINES_WAIT_ENV}); see its engine log")
            time.sleep(0.1)
        return path
    if not path.exists():
        return None
    # A killed engine leaves its socket file behind: nobody listens, so the job falls back to its
    # own workers (a conversation that failed with the engine reruns that way).
    return path if _listening(path) else None


def _listening(path: Path) -> bool:
    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


class EngineAgent(WireSession):
    """One session in an engine, over its Unix socket (the protocol methods are WireSession's)."""

    def __init__(self, name: str, socket_path: str | Path, step_timeout_s: float = float(model_default("worker", "step_timeout_s")),
                 connect_timeout_s: float = float(model_default("worker", "startup_timeout_s"))):
        self.name = name
        self.socket_path = Path(socket_path)
        self.step_timeout_s = step_timeout_s
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + connect_timeout_s
        while True:  # the socket appears once the engine has loaded its model
            try:
                self.sock.connect(str(self.socket_path))
                break
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                if time.monotonic() > deadline:
                    self.sock.close()
                    raise AgentError(f"agent {name}: no engine at {self.socket_path} after {connect_timeout_s:g} s ({exc})") from None
                time.sleep(0.05)
        self._fd = self.sock.fileno()
        self._reader = wire.FdReader(self._fd)
        # An engine that steps sessions on their own answers READY when a turn is free.
        turn_wait = float(os.environ.get(TURN_WAIT_ENV) or DEFAULT_TURN_WAIT_S)
        self.worker_info = json.loads(self._expect(wire.READY, connect_timeout_s + turn_wait,
                                                   "connecting (waiting for a turn)"))
        self._turn = not self.worker_info.get("lockstep", True)
        if self._turn:
            key = str(self.socket_path)
            _TURNS_HELD[key] = _TURNS_HELD.get(key, 0) + 1
            _TURNS_OF[key] = int(self.worker_info.get("concurrent") or 1)

    def wait_ready(self) -> None:
        """Connected means ready: the engine loaded its model before its socket appeared."""

    def _fail(self, reason: str) -> AgentError:
        self.kill()
        return AgentError(f"agent {self.name} (engine {self.socket_path.name}): {reason}")

    def _send(self, data: bytes) -> None:
        try:
            wire.write_all(self._fd, data)
        except OSError:
            raise self._fail("engine connection lost (the engine died?)") from None

    def _expect(self, kind: int, timeout: float, doing: str) -> bytes:
        try:
            got, payload = self._reader.read(timeout)
        except TimeoutError:
            raise self._fail(f"engine hung: no reply within {timeout:g} s while {doing}") from None
        except (EOFError, OSError):
            raise self._fail(f"engine died while {doing}") from None
        except wire.ProtocolError as exc:
            raise self._fail(f"malformed message from engine while {doing}: {exc}") from None
        if got == wire.ERROR:
            raise self._fail(f"engine error while {doing}: {json.loads(payload).get('error')}")
        if got != kind:
            raise self._fail(f"malformed exchange while {doing}: expected {wire.KIND_NAMES[kind]}, "
                             f"got {wire.KIND_NAMES.get(got, got)}")
        return payload

    def close(self) -> dict | None:
        """End the session; what the engine's model reported at close (as a worker's agent does)."""
        if self.sock.fileno() >= 0:
            self._send(wire.encode(wire.CLOSE))
            payload = self._expect(wire.CLOSED, self.step_timeout_s, "closing the session")
            return json.loads(payload) if payload else None
        return None

    def shutdown(self) -> None:
        """Leave the engine (it stays up for other jobs)."""
        if self.sock.fileno() >= 0:
            try:
                wire.write_all(self._fd, wire.encode(wire.QUIT))
            except OSError:
                pass
        self.kill()

    def kill(self) -> None:
        if getattr(self, "_turn", False):
            self._turn = False
            key = str(self.socket_path)
            _TURNS_HELD[key] = max(0, _TURNS_HELD.get(key, 1) - 1)
        try:
            self.sock.close()
        except OSError:
            pass
