"""A local stub of the Anthropic Messages (+ Message Batches) and the OpenAI chat-completions HTTP
APIs on one port, for the judge tests: a real HTTP peer for the official SDKs, not a mock of our code.

Mirrors what the SDKs pinned in pyproject's ``judge`` extra send and expect (read from their
sources: ``anthropic`` 2.16.0 on PyPI, upstream github.com/anthropics/anthropic-sdk-python;
``openai`` 3.60.0 on PyPI, upstream github.com/openai/openai-python):

- Anthropic ``POST /v1/messages`` answers a ``Message`` (``anthropic/types/message.py``: id, type,
  role, model, content blocks, stop_reason, stop_sequence, usage with input/output tokens). The key
  arrives as ``Authorization: Bearer`` (``Anthropic._api_key_auth`` in 2.x) or ``x-api-key`` (the
  documented header, sent by 0.x SDKs and curl); API version header ``anthropic-version``.
- Message Batches (``resources/messages/batches.py``): ``POST /v1/messages/batches`` answers a
  ``MessageBatch`` (``types/messages/message_batch.py``) ``in_progress`` with ``results_url`` null;
  ``GET /v1/messages/batches/{id}`` answers it ``ended`` with ``request_counts`` and an absolute
  ``results_url``; that URL serves JSONL of ``MessageBatchIndividualResponse`` lines (custom_id,
  result ``succeeded`` with the message), which ``AsyncBatches.results`` reads after a retrieve.
- OpenAI ``POST /v1/chat/completions`` answers a ``ChatCompletion`` (``openai/types/chat/
  chat_completion.py``: id, object, created, model, choices with index/message/finish_reason/
  logprobs, usage with prompt/completion/total tokens); key as ``Authorization: Bearer``.
- Errors have the APIs' bodies: Anthropic ``{"type": "error", "error": {"type", "message"},
  "request_id"}`` (rate_limit_error, overloaded_error, api_error, authentication_error, ...),
  OpenAI ``{"error": {"message", "type", "param", "code"}}``; 429 and 529 carry ``retry-after``.
  A rejected key is echoed back in the message, as some servers do, to test scrubbing.
- Models (what ``dyafdb plan --check`` probes): ``GET /v1/models/{id}`` answers Anthropic's ``ModelInfo``
  (``anthropic/types/model_info.py``: type, id, display_name, created_at, lifecycle, max_input_tokens,
  max_tokens) when the request carries ``anthropic-version`` (the Anthropic SDK always sends it), else
  OpenAI's ``Model`` (``openai/types/model.py``: id, object, created, owned_by); with ``models`` set,
  an id not in it gets the API's 404 (Anthropic ``not_found_error``; OpenAI ``invalid_request_error`` with
  code ``model_not_found``), a wrong key 401 (``authentication_error``; OpenAI code ``invalid_api_key``).
  ``GET /v1/models`` lists ``models`` (Anthropic: data, has_more, first_id, last_id; OpenAI: object
  list, data).
- A request without ``model``, ``max_tokens`` (Anthropic) or ``messages`` gets the 400 the API gives;
  under ``anthropic-version: 2026-10-21`` (what SDK 2.x sends) ``temperature``, ``top_p`` and ``top_k``
  are refused with 400 "Extra inputs are not permitted", as the 2026-10-21 migration guide says;
  2023-06-01 still takes them.

Faults on demand: ``fail`` is a queue of HTTP statuses answered before normal replies; ``malformed``
is a queue of HTTP-200 faults (``invalid_json``, ``html``, ``no_content``, ``no_id``,
``no_choices``) applied to the next replies, as a proxy or a broken gateway would serve them.
``trickle_s`` sends every reply one byte per that many seconds (``trickle_headers``: from the status
line on, else the headers at once and then the body), as a slow gateway does: no single read ever
waits long, so only a deadline on the whole call ends it. ``delay_s`` holds every reply that long
before answering (so that two runs overlap). ``echo`` is a queue of error messages: the next
requests get HTTP 400 with that message (a server quoting the request back).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

KEY = "sk-test-7f3c9a1e5b2d4c6e8f0a1b3c5d7e9f1a"
HTML_PAGE = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"
ANTHROPIC_ERROR_TYPE = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                        404: "not_found_error", 408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error",
                        500: "api_error", 529: "overloaded_error"}
MALFORMED = ("invalid_json", "html", "no_content", "no_id", "no_choices")


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gives up (a deadline, a failed batch closing its other connections) is no
        # fault of the stub's; anything else is printed as socketserver does.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class Stub:
    """Anthropic + OpenAI on one port. ``answer(messages) -> text`` decides every reply."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail: list[int] = []
        self.malformed: list[str] = []
        self.answer: Callable[[list[dict[str, str]]], str] = lambda messages: "ANSWER: yes"
        self.trickle_s: float | None = None
        self.trickle_headers = False
        self.delay_s = 0.0
        self.echo: list[str] = []
        self.batches: dict[str, dict[str, Any]] = {}
        # The ids GET /v1/models knows; None: every id, as the Messages and chat endpoints answer any model.
        self.models: set[str] | None = None
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any, content_type: str = "application/json", headers=()) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                if stub.delay_s:
                    time.sleep(stub.delay_s)
                if stub.trickle_s:
                    self._trickle(status, data, content_type, headers, stub.trickle_s)
                    return
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_stub_{len(stub.requests)}")
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _trickle(self, status: int, data: bytes, content_type: str, headers, pause: float) -> None:
                head = [f"{self.protocol_version} {status} {self.responses.get(status, ('',))[0]}", f"content-type: {content_type}",
                        f"content-length: {len(data)}", *(f"{k}: {v}" for k, v in headers)]
                raw_head = ("\r\n".join(head) + "\r\n\r\n").encode()
                slow = raw_head + data if stub.trickle_headers else data
                try:
                    if not stub.trickle_headers:
                        self.wfile.write(raw_head)
                    for i in range(len(slow)):
                        self.wfile.write(slow[i:i + 1])
                        time.sleep(pause)
                except OSError:  # the client gave up and closed the connection
                    self.close_connection = True

            def _ok(self, payload: dict[str, Any], openai: bool = False) -> None:
                """A 200 reply, unless a malformed one is queued."""
                with stub.lock:
                    kind = stub.malformed.pop(0) if stub.malformed else None
                if kind == "invalid_json":
                    self._send(200, json.dumps(payload).encode()[:40])
                elif kind == "html":
                    self._send(200, HTML_PAGE, "text/html; charset=utf-8")
                elif kind is not None:
                    field = kind.removeprefix("no_")
                    self._send(200, {k: v for k, v in payload.items() if k != field})
                else:
                    self._send(200, payload)

            def _error(self, status: int, message: str, openai: bool, param: str | None = None,
                       code: str | None = None) -> None:
                headers = [("retry-after", "0")] if status in (429, 529) else []
                if openai:
                    body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                                      "param": param, "code": code}}
                else:
                    body = {"type": "error", "error": {"type": ANTHROPIC_ERROR_TYPE.get(status, "api_error"),
                                                       "message": message}, "request_id": f"req_stub_{len(stub.requests)}"}
                self._send(status, body, headers=headers)

            def _record(self, body: Any) -> None:
                with stub.lock:
                    stub.requests.append({"method": self.command, "path": self.path,
                                          "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})

            def _failing(self, openai: bool) -> bool:
                with stub.lock:
                    echoed = stub.echo.pop(0) if stub.echo else None
                if echoed is not None:
                    self._error(400, echoed, openai)
                    return True
                with stub.lock:
                    status = stub.fail.pop(0) if stub.fail else None
                if status is None:
                    return False
                self._error(status, f"status {status}", openai)
                return True

            def _authorised(self, openai: bool) -> bool:
                bearer = self.headers.get("authorization")
                given = self.headers.get("x-api-key") or (bearer.removeprefix("Bearer ") if bearer else None)
                ok = given == KEY or (openai and given is None)  # the OpenAI stub also plays a key-less local server
                if not ok:
                    if openai:
                        self._error(401, f"Incorrect API key provided: {given}.", True, code="invalid_api_key")
                    else:
                        self._error(401, f"invalid x-api-key {given}", False)
                return ok

            def _missing(self, body: dict[str, Any], fields: tuple[str, ...], openai: bool) -> bool:
                for name in fields:
                    if name not in body:
                        self._error(400, f"{name}: Field required", openai)
                        return True
                return False

            def _sampling(self, body: dict[str, Any]) -> bool:
                if self.headers.get("anthropic-version") != "2026-10-21":
                    return False
                for name in ("temperature", "top_p", "top_k"):
                    if name in body:
                        self._error(400, f"{name}: Extra inputs are not permitted", False)
                        return True
                return False

            def do_POST(self) -> None:
                length = int(self.headers["content-length"])
                raw = self.rfile.read(length)
                if len(raw) < length:
                    # the client went away mid-body (a deadline, a full disk ending the batch): no
                    # request to answer, as a real endpoint sees it; not an error of the stub's
                    self.close_connection = True
                    return
                body = json.loads(raw)
                self._record(body)
                if self.path == "/v1/messages":
                    if (not self._authorised(False) or self._failing(False)
                            or self._missing(body, ("model", "max_tokens", "messages"), False) or self._sampling(body)):
                        return
                    self._ok(message(stub.answer(body["messages"]), body))
                elif self.path == "/v1/chat/completions":
                    if not self._authorised(True) or self._failing(True) or self._missing(body, ("model", "messages"), True):
                        return
                    self._ok(chat_completion(stub.answer(body["messages"]), body), openai=True)
                elif self.path == "/v1/messages/batches":
                    if not self._authorised(False) or self._failing(False) or self._missing(body, ("requests",), False):
                        return
                    with stub.lock:
                        bid = f"msgbatch_stub{len(stub.batches) + 1:04d}"
                        stub.batches[bid] = {"requests": body["requests"], "created": time.time(),
                                             "version": self.headers.get("anthropic-version")}
                    self._ok(stub.batch(bid, ended=False))
                else:
                    self._error(404, "Not found", self.path.endswith("/chat/completions"))

            def do_GET(self) -> None:
                self._record(None)
                openai = "anthropic-version" not in {k.lower() for k in self.headers}
                parts = self.path.split("?")[0].strip("/").split("/")
                if parts[:2] == ["v1", "models"] and len(parts) <= 3:
                    if not self._authorised(openai) or self._failing(openai):
                        return
                    if len(parts) == 2:
                        ids = sorted(stub.models or ())
                        data = [model_object(m, openai) for m in ids]
                        self._send(200, {"object": "list", "data": data} if openai else
                                   {"data": data, "has_more": False, "first_id": ids[0] if ids else None,
                                    "last_id": ids[-1] if ids else None})
                    elif stub.models is None or parts[2] in stub.models:
                        self._ok(model_object(parts[2], openai))
                    elif openai:
                        self._error(404, f"The model '{parts[2]}' does not exist", True, param="model",
                                    code="model_not_found")
                    else:
                        self._error(404, f"model: {parts[2]}", False)
                    return
                if not self._authorised(False):
                    return
                if parts[:3] == ["v1", "messages", "batches"] and len(parts) > 3 and parts[3] in stub.batches:
                    if self._failing(False):
                        return
                    bid = parts[3]
                    if len(parts) == 4:
                        self._ok(stub.batch(bid, ended=True))
                        return
                    lines = [json.dumps({"custom_id": r["custom_id"], "result": stub.batch_result(bid, r["params"])})
                             for r in stub.batches[bid]["requests"]]
                    self._send(200, ("\n".join(lines) + "\n").encode(), "application/binary")
                    return
                self._error(404, "Not found", False)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def batch(self, bid: str, ended: bool) -> dict[str, Any]:
        """A MessageBatch object: in progress when created, ended (all succeeded) when retrieved."""
        n = len(self.batches[bid]["requests"])
        created = self.batches[bid]["created"]
        return {"id": bid, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": {"processing": 0 if ended else n, "succeeded": n if ended else 0, "errored": 0,
                                   "canceled": 0, "expired": 0},
                "ended_at": _iso(time.time()) if ended else None, "created_at": _iso(created),
                "expires_at": _iso(created + 86400), "archived_at": None, "cancel_initiated_at": None,
                "results_url": f"{self.url}/v1/messages/batches/{bid}/results" if ended else None}

    def batch_result(self, bid: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request's result: errored as the API would refuse it alone, else succeeded."""
        sampling = [k for k in ("temperature", "top_p", "top_k") if k in params]
        if self.batches[bid]["version"] == "2026-10-21" and sampling:
            return {"type": "errored", "error": {"type": "error", "error": {
                "type": "invalid_request_error", "message": f"{sampling[0]}: Extra inputs are not permitted"}}}
        return {"type": "succeeded", "message": message(self.answer(params["messages"]), params)}

    def posts(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST" and r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def message(text: str, body: dict[str, Any]) -> dict[str, Any]:
    prompt = json.dumps(body["messages"])
    return {"id": "msg_stub01", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": len(prompt) // 4, "output_tokens": 9, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "service_tier": "standard"}}


def model_object(model_id: str, openai: bool) -> dict[str, Any]:
    """What ``GET /v1/models/{id}`` answers: OpenAI's ``Model`` or Anthropic's ``ModelInfo``."""
    if openai:
        return {"id": model_id, "object": "model", "created": 1767225600, "owned_by": "stub"}
    return {"type": "model", "id": model_id, "display_name": model_id.replace("-", " ").title(),
            "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active", "max_input_tokens": 200000,
            "max_tokens": 64000}


def chat_completion(text: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-stub01", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}}
