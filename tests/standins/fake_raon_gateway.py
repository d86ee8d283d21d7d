"""A stand-in Raon gateway on loopback: the real frame protocol, both session-start variants.

Run as ``python fake_raon_gateway.py --port N --variant demo|realtime --record events.jsonl``. It
serves ``GET /health``, the realtime variant's ``POST /realtime/session/{start,finish}``, and the
WebSocket endpoint (``/ws/chat`` with query parameters, or ``/realtime/ws?session_id=``), one HTTP
port for all of it as the real gateways do. Per AUDIO frame it answers with TEXT deltas that still
contain structural markers, sometimes a SEQ_DELTA trace, and one AUDIO frame whose samples encode
the tick; every few ticks it PINGs first and will not answer until the PONG comes back. Options
make it send ERROR or die (exit) at a given tick. Every event goes to the record file as JSON.

Written on websockets' sans-I/O protocol, because websockets' own server cannot answer a POST.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import urllib.parse

import numpy as np
from websockets.frames import Opcode
from websockets.server import ServerProtocol

READY, AUDIO, TEXT, SEQ_TRACE, SEQ_DELTA, ERROR, CLOSE, PING, PONG = range(9)
# What a gateway may put in TEXT: pieces with leading spaces, segment-break newlines, and (in a
# gateway that decodes with skip_special_tokens=False) structural markers.
TEXT_SCRIPT = {2: "\n", 3: " Hello", 4: "<|fim_middle|>", 5: " there<|im_end|>", 7: "\n Nice", 8: "<|audio_output_sil|>\n"}


def frame_audio(tick: int) -> np.ndarray:
    return np.full(1920, 0.01 * (tick % 90 + 1), dtype="<f4")


class Gateway:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.record = open(args.record, "a")
        self.sessions: dict[str, dict] = {}
        self.active: str | None = None

    def log(self, **event) -> None:
        self.record.write(json.dumps(event) + "\n")
        self.record.flush()

    # -- plain HTTP ------------------------------------------------------------------------------
    def route(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        if method == "GET" and path == "/health":
            status = {"status": "ok", "active_session_id": self.active}
            if self.args.variant == "demo":
                status["router"] = {"healthy_worker_count": 1}
            return 200, status
        if self.args.variant == "realtime" and method == "POST" and path == "/realtime/session/start":
            payload = json.loads(body or b"{}")
            if self.active and not payload.get("force_restart"):
                return 409, {"detail": "session already active"}
            sid = payload.get("session_id") or "s1"
            self.sessions[sid] = payload
            self.active = sid
            self.log(event="session_start", payload=payload)
            return 200, {"session_id": sid, "ws_path": "/realtime/ws"}
        if self.args.variant == "realtime" and method == "POST" and path == "/realtime/session/finish":
            sid = json.loads(body or b"{}").get("session_id")
            self.log(event="session_finish", session_id=sid)
            self.active = None
            return 200, {"session_id": sid, "close_reason": "client_finish"}
        return 404, {"detail": f"no route {method} {path}"}

    # -- the WebSocket session ------------------------------------------------------------------
    async def session(self, proto: ServerProtocol, reader, writer, path: str, query: dict) -> None:
        async def flush():
            data = b"".join(proto.data_to_send())
            if data:
                writer.write(data)
                await writer.drain()

        async def send(kind: int, payload: bytes = b"") -> None:
            proto.send_binary(bytes([kind]) + payload)
            await flush()

        pending: list = []

        async def recv() -> bytes | None:
            while True:
                pending.extend(proto.events_received())
                while pending:
                    event = pending.pop(0)
                    if event.opcode == Opcode.BINARY:
                        return event.data
                    if event.opcode == Opcode.CLOSE:
                        await flush()
                        return None
                await flush()  # pongs to control pings
                data = await reader.read(65536)
                if not data:
                    proto.receive_eof()
                    return None
                proto.receive_data(data)

        if self.args.variant == "demo":
            if path.rstrip("/") != "/ws/chat":
                await send(ERROR, b"unknown path")
                return
            self.log(event="session_start", query=query)
        else:
            sid = query.get("session_id")
            if path != "/realtime/ws" or sid not in self.sessions:
                await send(ERROR, b"session already active")
                await send(CLOSE, b"busy")
                return
        await send(READY)
        tick = 0
        while True:
            message = await recv()
            if message is None:
                self.log(event="disconnected", tick=tick)
                return
            kind, payload = message[0], message[1:]
            if kind == CLOSE:
                self.log(event="client_close", reason=payload.decode(), tick=tick)
                await send(CLOSE, b"client_finish")
                proto.send_close(1000)
                await flush()
                return
            if kind == PONG:
                self.log(event="unexpected_pong", tick=tick)
                continue
            if kind != AUDIO or len(payload) != 1920 * 4:
                await send(ERROR, f"bad frame kind {kind} of {len(payload)} bytes".encode())
                continue
            heard = np.frombuffer(payload, dtype="<f4")
            self.log(event="audio", tick=tick, first=float(heard[0]), mean=float(heard.mean()))
            if tick == self.args.die_at:
                os._exit(3)
            if tick == self.args.error_at:
                await send(ERROR, b"CUDA out of memory")
                await send(CLOSE, b"internal_error")
                return
            if self.args.ping_every and tick % self.args.ping_every == 1:
                await send(PING, f"p{tick}".encode())
                reply = await asyncio.wait_for(recv(), timeout=5)
                ok = reply is not None and reply[0] == PONG and reply[1:] == f"p{tick}".encode()
                self.log(event="pong" if ok else "bad_pong", tick=tick)
                if not ok:
                    await send(ERROR, b"keepalive timeout")
                    return
            if self.args.variant == "demo" and tick % 4 == 0:
                await send(SEQ_DELTA, json.dumps({"ids": [151660], "tokens": ["<|fim_middle|>"]}).encode())
            if tick in TEXT_SCRIPT:
                await send(TEXT, TEXT_SCRIPT[tick].encode())
            await send(AUDIO, frame_audio(tick).tobytes())
            tick += 1

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if ": " in line)}
        path, _, qs = target.partition("?")
        query = {k: v[0] for k, v in urllib.parse.parse_qs(qs).items()}
        if headers.get("upgrade", "").lower() == "websocket":
            proto = ServerProtocol()
            proto.receive_data(head)
            request = proto.events_received()[0]
            proto.send_response(proto.accept(request))
            writer.write(b"".join(proto.data_to_send()))
            await writer.drain()
            try:
                await self.session(proto, reader, writer, path, query)
            finally:
                writer.close()
            return
        body = await reader.readexactly(int(headers.get("content-length", 0) or 0))
        status, obj = self.route(method, path, body)
        data = json.dumps(obj).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode() + data)
        await writer.drain()
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--variant", choices=["demo", "realtime"], required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--die-at", type=int, default=-1)
    parser.add_argument("--error-at", type=int, default=-1)
    parser.add_argument("--ping-every", type=int, default=5)
    parser.add_argument("--startup-delay", type=float, default=0.0)
    args = parser.parse_args()
    await asyncio.sleep(args.startup_delay)  # a gateway takes a while to load its model
    gateway = Gateway(args)
    server = await asyncio.start_server(gateway.handle, "127.0.0.1", args.port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
