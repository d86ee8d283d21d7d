"""The seat's web server: pages, a small JSON API and two WebSockets, on websockets' asyncio server.

  GET /                 the seat: the participant's conversations, role card, consent, the conversation
  GET /listen           listen in: a model-model conversation played as it is recorded
  GET /assets/<file>    the pages' scripts and styles (dyafdb/seat/assets)
  GET /api/seat         the seat's conversations and their state;  GET /api/card?id=  one role card
  GET /api/listen       the model-model conversations
  GET /api/score?id=    score (and with --judge, judge) a recorded conversation and build its viewer page
  GET /site/<path>      the viewer's pages (dyafdb.viewer), as built for this seat's recordings
  WS  /ws/seat?id=      one conversation with the person (protocol below)
  WS  /ws/listen?id=    one model-model conversation, paced to the wall clock

Seat protocol: the page sends ``{"type": "consent", "digest"}`` first (the consent text it showed);
the server loads and opens the agents and answers ``{"type": "ready"}``; the page then streams its
microphone as binary messages (uint32 frame index, then 1,920 float32 samples, little-endian) and
``{"type": "ping", "id"}`` (answered by ``pong``); the server sends each model frame the same way
(uint32 tick + samples; listen: both channels, a then b). At the window's end the server sends
``{"type": "end"}``, the page answers ``{"type": "stats", ...}`` (its playback timing), and the
server writes the recording and sends ``{"type": "saved"}``. ``{"type": "abandon"}`` or a closed
socket ends the conversation with nothing written.

Binds 127.0.0.1 unless told otherwise; any other host needs a token, which every request must carry
(``?token=``). The pages load nothing from elsewhere (Content-Security-Policy ``default-src 'self'``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import mimetypes
import struct
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import parse_qs, urlsplit

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from dyafdb.agents.base import AgentError
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError
from dyafdb.paths import results_of
from dyafdb.record.conversation import AgentPool
from dyafdb.record.recording import is_complete
from dyafdb.seat.after import score_and_view, site_dir
from dyafdb.seat.consent import consent_digest, consent_text
from dyafdb.seat.live import ListenConversation, SeatConversation, role_card
from dyafdb.seat.study import participant_rows, person_side, seat_rows
from dyafdb.suite.design import Conversation, build_design, find_conversation, is_person
from dyafdb.suite.scenarios import find_scenario

LOOPBACK = ("127.0.0.1", "localhost", "::1")
PAGES = {"/": "seat.html", "/listen": "listen.html"}
HEADER = struct.Struct("<I")
STATS_WAIT_S = 10.0  # how long the page may take to send its timing after the end


def check_host(host: str, token: str | None) -> None:
    if host not in LOOPBACK and not token:
        raise InputError(f"--host {host}: serving beyond this machine needs --token (a secret every request must "
                         "carry); or keep the default 127.0.0.1")


def _asset(name: str) -> bytes | None:
    if "/" in name or name.startswith("."):
        return None
    path = resources.files("dyafdb.seat") / "assets" / name
    return path.read_bytes() if path.is_file() else None


class Seat:
    """The server's state: the config, the conversations it offers and the one that is running."""

    def __init__(self, config: Mapping[str, Any], root: Path, participant: str | None = None,
                 token: str | None = None, judge: bool = False):
        self.config, self.root, self.participant, self.token = dict(config), root, participant, token
        self.judge = judge
        rows = seat_rows(config, root)
        self.rows = participant_rows(config, rows, participant) if participant else rows
        self.listen_rows = [r for r in build_design(self.config, root)
                            if not (is_person(self.config, r.model_a) or is_person(self.config, r.model_b))]
        self.pool = AgentPool({**self.config, "bridge": {**self.config["bridge"], "in_process": True}})
        self.busy = asyncio.Lock()

    def warm(self) -> None:
        """Load every partner model before the page opens, so a conversation starts without a wait."""
        for row in self.rows:
            side = "b" if person_side(self.config, row) == "a" else "a"
            self.pool.get(row.model_of(side), ("a", "b").index(side))

    # -- HTTP -------------------------------------------------------------------------------
    def _authorised(self, query: Mapping[str, list[str]]) -> bool:
        return self.token is None or hmac.compare_digest((query.get("token") or [""])[0], self.token)

    def _json(self, data: Any, status: int = 200) -> Response:
        return _response(status, json.dumps(data, ensure_ascii=False).encode(), "application/json")

    def consent(self, row: Conversation) -> str:
        return consent_text(row.window_s, results_of(self.config, self.root).recordings, self.participant)

    def _row(self, rows: list[Conversation], query: Mapping[str, list[str]]) -> Conversation:
        return find_conversation(rows, (query.get("id") or [""])[0])

    def seat_listing(self) -> dict[str, Any]:
        out = []
        for row in self.rows:
            side = person_side(self.config, row)
            partner = row.model_of("b" if side == "a" else "a")
            out.append({"id": row.conversation_id, "archetype": row.archetype, "scenario": row.scenario,
                        "partner": (self.config["models"][partner] or {}).get("label", partner),
                        "role": row.role_of(side), "you_open": row.opener == side, "window_s": row.window_s,
                        "recorded": is_complete(Path(results_of(self.config, self.root).recording(row.conversation_id)))})
        return {"participant": self.participant, "conversations": out}

    def card(self, row: Conversation) -> dict[str, Any]:
        scenario = find_scenario(self.root / self.config["scenarios_dir"], row.scenario)
        text = self.consent(row)
        return {"id": row.conversation_id, "card": role_card(scenario, row, person_side(self.config, row)),
                "consent": text, "consent_digest": consent_digest(text)}

    def _site_file(self, rel: str) -> Response:
        top = site_dir(self.config, self.root).resolve()
        path = (top / rel).resolve()
        if not path.is_relative_to(top) or not path.is_file():
            return _response(404, b"not found", "text/plain")
        # the viewer's pages carry inline scripts and styles; still nothing from elsewhere
        return _response(200, path.read_bytes(), mimetypes.guess_type(path.name)[0] or "application/octet-stream",
                         csp="default-src 'self' 'unsafe-inline' data: blob:; connect-src 'self'")

    async def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        query = parse_qs(url.query)
        # The pages and their scripts hold nothing private; what they fetch (the API, the sockets) needs the token.
        guarded = url.path.startswith(("/api/", "/ws/"))
        if guarded and not self._authorised(query):
            return _response(403, b"forbidden: this seat needs its token (?token=...)", "text/plain")
        if url.path.startswith("/ws/"):
            return None  # the WebSocket handshake goes on
        try:
            if url.path in PAGES:
                return _response(200, _asset(PAGES[url.path]) or b"", "text/html")
            if url.path.startswith("/assets/"):
                body = _asset(url.path[len("/assets/"):])
                if body is None:
                    return _response(404, b"not found", "text/plain")
                return _response(200, body, mimetypes.guess_type(url.path)[0] or "application/octet-stream")
            if url.path == "/api/seat":
                return self._json(self.seat_listing())
            if url.path == "/api/card":
                return self._json(self.card(self._row(self.rows, query)))
            if url.path.startswith("/site/"):
                return self._site_file(url.path[len("/site/"):])
            if url.path == "/api/score":
                row = self._row(self.rows, query)
                done = await asyncio.to_thread(score_and_view, self.config, self.root, row, self.rows, self.judge)
                return self._json({"page": "site/" + done["page"], "judged": done["judged"]})
            if url.path == "/api/listen":
                return self._json({"conversations": [{"id": r.conversation_id, "pairing": r.pairing, "archetype": r.archetype}
                                                     for r in self.listen_rows]})
        except InputError as exc:
            return self._json({"error": str(exc)}, 404)
        return _response(404, b"not found", "text/plain")

    # -- WebSockets ---------------------------------------------------------------------------
    async def handle(self, ws: ServerConnection) -> None:
        url = urlsplit(ws.request.path)
        query = parse_qs(url.query)
        if self.busy.locked():
            await ws.send(json.dumps({"type": "error", "message": "another conversation is running on this seat"}))
            return
        async with self.busy:
            try:
                if url.path == "/ws/seat":
                    await self._seat(ws, self._row(self.rows, query))
                elif url.path == "/ws/listen":
                    await self._listen(ws, self._row(self.listen_rows, query))
            except (InputError, AgentError) as exc:
                await _send_quietly(ws, {"type": "error", "message": str(exc)})
            except Exception as exc:  # the page must hear of it, or it waits for ever; the log keeps the rest
                await _send_quietly(ws, {"type": "error", "message": f"the seat failed: {type(exc).__name__}: {exc}; "
                                                                    "nothing was kept"})
                raise

    async def _seat(self, ws: ServerConnection, row: Conversation) -> None:
        first = json.loads(await ws.recv())
        expected = consent_digest(self.consent(row))
        if first.get("type") != "consent" or first.get("digest") != expected:
            await ws.send(json.dumps({"type": "error", "message": "no consent for this text; reload the page"}))
            return
        consent = {"digest": expected, "given_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        conv = await asyncio.to_thread(SeatConversation, self.config, self.root, row, self.pool, self.participant)
        await conv.open()
        await ws.send(json.dumps({"type": "ready", "window_ticks": conv.bridge.window_ticks}))
        stats: asyncio.Future = asyncio.get_running_loop().create_future()

        async def send(t: int, frames: dict[str, np.ndarray]) -> None:
            await ws.send(HEADER.pack(t) + frames[conv.model_side].astype("<f4").tobytes())

        async def receive() -> None:
            async for message in ws:
                if isinstance(message, bytes):
                    if len(message) != HEADER.size + 4 * FRAME_SAMPLES:
                        continue
                    (index,) = HEADER.unpack_from(message)
                    try:
                        conv.feed(index, np.frombuffer(message, dtype="<f4", offset=HEADER.size))
                    except AgentError:
                        pass  # a frame with non-finite samples: its tick stays silent and is counted late
                    continue
                msg = json.loads(message)
                if msg.get("type") == "ping":
                    await ws.send(json.dumps({"type": "pong", "id": msg.get("id")}))
                elif msg.get("type") == "stats" and not stats.done():
                    stats.set_result(msg)
                elif msg.get("type") == "abandon":
                    return

        reader = asyncio.create_task(receive())
        runner = asyncio.create_task(conv.run(send))
        try:
            done, _ = await asyncio.wait({reader, runner}, return_when=asyncio.FIRST_COMPLETED)
            if runner not in done or runner.exception() is not None:
                if runner in done:
                    raise runner.exception()
                runner.cancel()
                await _send_quietly(ws, {"type": "abandoned", "message": "nothing was kept"})
                return  # abandoned: the bridge closes below, nothing is written
            await ws.send(json.dumps({"type": "end"}))
            try:
                browser = await asyncio.wait_for(asyncio.shield(stats), STATS_WAIT_S)
            except TimeoutError:
                browser = {}
            meta = await asyncio.to_thread(conv.finish, browser, consent)
            await ws.send(json.dumps({"type": "saved", "ticks": meta["ticks"], "conversation_id": row.conversation_id,
                                      "folder": results_of(self.config, self.root).recording(row.conversation_id)}))
        except ConnectionClosed:
            pass
        finally:
            reader.cancel()
            runner.cancel()
            await asyncio.to_thread(conv.close)  # waits for a tick in flight

    async def _listen(self, ws: ServerConnection, row: Conversation) -> None:
        conv = await asyncio.to_thread(ListenConversation, self.config, self.root, row, self.pool)
        await conv.open()
        await ws.send(json.dumps({"type": "ready", "window_ticks": conv.bridge.window_ticks}))

        async def send(t: int, frames: dict[str, np.ndarray]) -> None:
            await ws.send(HEADER.pack(t) + np.concatenate([frames["a"], frames["b"]]).astype("<f4").tobytes())

        try:
            await conv.run(send)
            meta = await asyncio.to_thread(conv.finish)
            await ws.send(json.dumps({"type": "saved", "ticks": meta["ticks"], "conversation_id": row.conversation_id}))
        except ConnectionClosed:
            pass
        finally:
            await asyncio.to_thread(conv.close)


def _response(status: int, body: bytes, content_type: str, csp: str = "default-src 'self'; connect-src 'self'") -> Response:
    headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(body))), ("Cache-Control", "no-store"),
                       ("Content-Security-Policy", csp),
                       ("X-Content-Type-Options", "nosniff")])
    reason = {200: "OK", 403: "Forbidden", 404: "Not Found"}.get(status, "")
    return Response(status, reason, headers, body)


async def _send_quietly(ws: ServerConnection, data: dict[str, Any]) -> None:
    try:
        await ws.send(json.dumps(data))
    except ConnectionClosed:
        pass


async def serve_seat(seat: Seat, host: str, port: int, announce: Any = print) -> None:
    """Serve until cancelled; ``announce`` gets the page's address once the socket listens."""
    await asyncio.to_thread(seat.warm)
    async with serve(seat.handle, host, port, process_request=seat.process_request, max_size=2 ** 20) as server:
        bound = server.sockets[0].getsockname()[1]
        suffix = "?token=<your token>" if seat.token else ""  # the secret stays out of logs
        shown = f"[{host}]" if ":" in host else host
        announce(f"seat: http://{shown}:{bound}/{suffix}  (listen in: http://{shown}:{bound}/listen{suffix})")
        try:
            await asyncio.Future()
        finally:
            seat.pool.shutdown()
