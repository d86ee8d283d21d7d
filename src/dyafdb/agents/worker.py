"""An out-of-process agent worker: ``python -m dyafdb.agents.worker``.

Speaks the frame protocol (``dyafdb.agents.wire``) on stdin/stdout. Started by the bridge with the
command a model's config gives, so each model can live in its own environment.

A worker never outlives its bridge (a worker left running with PPID 1 keeps a GPU busy on a cluster):
on Linux the kernel kills it when its parent dies (``PR_SET_PDEATHSIG``), and a watchdog thread
exits when stdin reports hang-up, i.e. when every writer of the pipe is gone. The watchdog also
covers a worker started through a wrapper (``conda run``, a shell), whose parent is the wrapper,
and a worker stuck in a step, which never reads stdin again.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import threading
import traceback

import numpy as np

from dyafdb.agents import wire
from dyafdb.agents.base import Session, check_frame


def serve(in_fd: int, out_fd: int) -> int:
    reader = wire.FdReader(in_fd)
    agent = None
    adapter = "?"

    def send(data: bytes) -> None:
        wire.write_all(out_fd, data)

    while True:
        try:
            kind, payload = reader.read()
        except EOFError:
            return 0
        try:
            if kind == wire.INIT:
                from dyafdb.agents.registry import make_agent

                init = json.loads(payload)
                adapter = init["adapter"]
                agent = make_agent(adapter, init.get("params") or {}, init.get("model", adapter))
                from dyafdb import __version__

                send(wire.encode_json(wire.READY, {"adapter": adapter, "adapter_version": __version__, "pid": os.getpid()}))
            elif kind == wire.OPEN:
                info = agent.open(Session.from_json(json.loads(payload)))
                send(wire.encode_json(wire.OPENED, info.to_json()))
            elif kind == wire.STEP:
                if len(payload) != wire.AUDIO_BYTES:
                    raise wire.ProtocolError(f"STEP carries {len(payload)} bytes; expected {wire.AUDIO_BYTES}")
                heard = np.frombuffer(payload, dtype="<f4").astype(np.float32)
                frame = check_frame(agent.step(heard), adapter)
                send(wire.encode_frame(frame.audio, frame.text, frame.finished))
            elif kind == wire.CLOSE:
                report = agent.close() if agent is not None else None
                send(wire.encode_json(wire.CLOSED, report) if isinstance(report, dict) else wire.encode(wire.CLOSED))
            elif kind == wire.QUIT:
                return 0
            else:
                raise wire.ProtocolError(f"unexpected message {wire.KIND_NAMES.get(kind, kind)}")
        except Exception as exc:  # the bridge gets the reason; the worker cannot go on
            send(wire.encode_json(wire.ERROR, {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}))
            return 1


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere a no-op)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _exit_on_hangup(fd: int) -> None:
    poller = select.poll()
    poller.register(fd, 0)  # POLLHUP and POLLERR are always reported; no POLLIN, so frames are left alone
    while True:
        for _, event in poller.poll():
            if event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                print("dyafdb worker: the bridge is gone (stdin hung up); exiting", file=sys.stderr, flush=True)
                os._exit(1)


def start_stdin_watchdog(fd: int = 0) -> threading.Thread:
    """Exit the process as soon as every writer of ``fd`` (the bridge's end of the pipe) has closed it."""
    thread = threading.Thread(target=_exit_on_hangup, args=(fd,), daemon=True, name="dyafdb-stdin-watchdog")
    thread.start()
    return thread


def main() -> int:
    die_with_parent()
    start_stdin_watchdog(0)
    # Keep the protocol on a private descriptor and point fd 1 at stderr, so a library that prints
    # to stdout (C code included) cannot corrupt the frame stream.
    proto_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(0, proto_out)


if __name__ == "__main__":
    sys.exit(main())
