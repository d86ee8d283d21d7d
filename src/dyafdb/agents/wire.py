"""The frame protocol between the bridge and an out-of-process agent worker.

Every message is a 5-byte header, ``<kind:u8><length:u32 little-endian>``, then ``length`` bytes.
The worker reads from its stdin and writes to its stdout; its own logging goes to stderr.

bridge -> worker                          worker -> bridge
  INIT   json {adapter, model, params}      READY  json {adapter, adapter_version, pid}
  OPEN   json Session                       OPENED json AgentInfo
  STEP   1920 float32 LE samples (heard)    FRAME  1920 float32 LE samples, then json {text, finished}
  CLOSE  empty                              CLOSED empty, or json {...} the agent's close() reported
  QUIT   empty (worker exits 0)             ERROR  json {error, traceback}   (any time)

A conversation is INIT (once per process), then any number of OPEN, STEP*, CLOSE. Models load at
INIT so a worker serves many conversations with one load.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

import numpy as np

from dyafdb.clock import FRAME_SAMPLES

HEADER = struct.Struct("<BI")
AUDIO_BYTES = FRAME_SAMPLES * 4
MAX_MESSAGE = 64 * 1024 * 1024

INIT, READY, OPEN, OPENED, STEP, FRAME, CLOSE, CLOSED, QUIT, ERROR = range(1, 11)
KIND_NAMES = {v: k for k, v in dict(INIT=INIT, READY=READY, OPEN=OPEN, OPENED=OPENED, STEP=STEP, FRAME=FRAME,
                                     CLOSE=CLOSE, CLOSED=CLOSED, QUIT=QUIT, ERROR=ERROR).items()}


class ProtocolError(RuntimeError):
    """The peer broke the protocol, died or went silent past its deadline."""


def encode(kind: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def encode_json(kind: int, obj: Any) -> bytes:
    return encode(kind, json.dumps(obj).encode())


def encode_frame(audio: np.ndarray, text: list[str], finished: bool) -> bytes:
    tail = json.dumps({"text": text, "finished": finished}).encode()
    return encode(FRAME, np.ascontiguousarray(audio, dtype="<f4").tobytes() + tail)


def decode_frame(payload: bytes) -> tuple[np.ndarray, list[str], bool]:
    if len(payload) < AUDIO_BYTES:
        raise ProtocolError(f"FRAME carries {len(payload)} bytes; expected at least {AUDIO_BYTES}")
    audio = np.frombuffer(payload[:AUDIO_BYTES], dtype="<f4").astype(np.float32)
    try:
        tail = json.loads(payload[AUDIO_BYTES:] or b"{}")
        text, finished = list(tail.get("text", [])), bool(tail.get("finished", False))
    except (json.JSONDecodeError, AttributeError, TypeError) as exc:
        raise ProtocolError(f"FRAME text part is not valid JSON: {exc}") from None
    return audio, text, finished


class FdReader:
    """Reads whole messages from a file descriptor, with an optional deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def _fill(self, n: int, deadline: float | None) -> None:
        while len(self.buf) < n:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                ready, _, _ = select.select([self.fd], [], [], remaining)
                if not ready:
                    raise TimeoutError
            chunk = os.read(self.fd, max(65536, n - len(self.buf)))
            if not chunk:
                raise EOFError
            self.buf += chunk

    def read(self, timeout: float | None = None) -> tuple[int, bytes]:
        deadline = None if timeout is None else time.monotonic() + timeout
        self._fill(HEADER.size, deadline)
        kind, length = HEADER.unpack_from(self.buf)
        if kind not in KIND_NAMES or length > MAX_MESSAGE:
            raise ProtocolError(f"malformed message header (kind={kind}, length={length})")
        self._fill(HEADER.size + length, deadline)
        payload = bytes(self.buf[HEADER.size:HEADER.size + length])
        del self.buf[:HEADER.size + length]
        return kind, payload


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
