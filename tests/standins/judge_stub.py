"""A local stub server speaking the Anthropic Messages (+ Message Batches) and the OpenAI
chat-completions HTTP APIs, for the judge tests (a real HTTP peer, not a mock of our code)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

KEY = "sk-test-7f3c9a1e5b2d4c6e8f0a1b3c5d7e9f1a"


class Stub:
    """Anthropic + OpenAI on one port. ``answer(messages) -> text`` decides every reply;
    ``fail`` is a queue of HTTP statuses returned (with Retry-After: 0) before normal replies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail: list[int] = []
        self.answer: Callable[[list[dict[str, str]]], str] = lambda messages: "ANSWER: yes"
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any, content_type: str = "application/json", headers=()) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _record(self, body: Any) -> None:
                with stub.lock:
                    stub.requests.append({"method": self.command, "path": self.path,
                                          "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})

            def _failing(self) -> bool:
                with stub.lock:
                    status = stub.fail.pop(0) if stub.fail else None
                if status is None:
                    return False
                self._send(status, {"type": "error", "error": {"type": "x", "message": f"status {status}"}},
                           headers=[("retry-after", "0")])
                return True

            def _authorised(self, anthropic: bool) -> bool:
                ok = (self.headers.get("x-api-key") == KEY if anthropic
                      else self.headers.get("authorization") in (f"Bearer {KEY}", None))
                if not ok:  # a real API may echo (part of) the key it rejected
                    self._send(401, {"error": {"message": f"invalid x-api-key {self.headers.get('x-api-key')}"}})
                return ok

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                self._record(body)
                if self.path == "/v1/messages":
                    if not self._authorised(True) or self._failing():
                        return
                    self._send(200, message(stub.answer(body["messages"]), body))
                elif self.path == "/v1/chat/completions":
                    if not self._authorised(False) or self._failing():
                        return
                    text = stub.answer(body["messages"])
                    self._send(200, {"id": "c1", "object": "chat.completion", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 7}})
                elif self.path == "/v1/messages/batches":
                    if not self._authorised(True):
                        return
                    bid = f"msgbatch_{len(stub.batches) + 1}"
                    stub.batches[bid] = body["requests"]
                    self._send(200, {"id": bid, "type": "message_batch", "processing_status": "in_progress"})
                else:
                    self._send(404, {"error": {"message": "no such path"}})

            def do_GET(self) -> None:
                self._record(None)
                if not self._authorised(True):
                    return
                parts = self.path.strip("/").split("/")
                if parts[:3] == ["v1", "messages", "batches"] and parts[3] in stub.batches:
                    bid = parts[3]
                    if len(parts) == 4:
                        self._send(200, {"id": bid, "processing_status": "ended",
                                         "results_url": f"{stub.url}/v1/messages/batches/{bid}/results"})
                        return
                    lines = [json.dumps({"custom_id": r["custom_id"], "result": {
                        "type": "succeeded", "message": message(stub.answer(r["params"]["messages"]), r["params"])}})
                        for r in stub.batches[bid]]
                    self._send(200, ("\n".join(lines) + "\n").encode(), "application/binary")
                    return
                self._send(404, {"error": {"message": "no such path"}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def posts(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST" and r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def message(text: str, body: dict[str, Any]) -> dict[str, Any]:
    prompt = json.dumps(body["messages"])
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": len(prompt) // 4, "output_tokens": 9}}
