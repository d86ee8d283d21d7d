"""An out-of-process agent worker: ``python -m dyafdb.agents.worker``.

Speaks the frame protocol (``dyafdb.agents.wire``) on stdin/stdout. Started by the bridge with the
command a model's config gives, so each model can live in its own environment.
"""

from __future__ import annotations

import json
import os
import sys
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


def main() -> int:
    # Keep the protocol on a private descriptor and point fd 1 at stderr, so a library that prints
    # to stdout (C code included) cannot corrupt the frame stream.
    proto_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(0, proto_out)


if __name__ == "__main__":
    sys.exit(main())
