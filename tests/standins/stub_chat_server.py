"""A local HTTP server speaking the OpenAI chat-completions API, for the text-pairing tests.

Mirrors what the ``openai`` SDK 3.60.0 (PyPI; upstream github.com/openai/openai-python) sends and
reads: ``POST {base_url}/chat/completions`` with a JSON body, answered by a ``ChatCompletion``
(``openai/types/chat/chat_completion.py``: id, object, created, model, choices with index, message,
logprobs and finish_reason, usage with prompt/completion/total tokens); other paths get the API's
404 error body. Text models answer with a fixed number of words (the defender of a T4-2 scenario
names its secret; ``say`` puts given words first); the judge model answers in the rubric's format.
``GET {base_url}/models/{id}`` answers a ``Model`` (``openai/types/model.py``: id, object, created,
owned_by) for the ids in ``models`` (None: any id, as chat completions take any model), else the API's 404 (``invalid_request_error``, code
``model_not_found``); ``GET {base_url}/models`` lists them (object list, data). With ``retrieve``
false the server plays one that lists its models but has no per-model route (llama.cpp's server):
``GET /models/{id}`` is a 404 for an unknown URL. The server takes no key, as local servers do.
Every request body is kept for the assertions. ``malformed`` queues HTTP-200 faults for the next
replies: ``html`` (a proxy's error page) or ``invalid_json`` (a cut body). ``trickle_s`` sends each
reply's body one byte per that many seconds, as a slow gateway does (every read is short, the call is not).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StubChat:
    def __init__(self, words: int = 35, secret: str = "cottage 14", say: str = ""):
        self.words = words
        self.say = say  # words every text-model turn begins with (a T2 candidate the pair names), within ``words``
        self.secret = secret
        self.requests: list[dict] = []
        self.malformed: list[str] = []
        self.trickle_s: float | None = None
        self.models: set[str] | None = None  # the ids GET /models knows; None: every id
        self.retrieve = True  # False: no GET /models/{id} route, only the list
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _json(self, status: int, reply: dict) -> None:
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                parts = self.path.split("?")[0].strip("/").split("/")
                if parts == ["v1", "models"]:
                    self._json(200, {"object": "list", "data": [model_object(m) for m in sorted(stub.models or ())]})
                elif parts[:2] == ["v1", "models"] and len(parts) == 3 and stub.retrieve:
                    if stub.models is None or parts[2] in stub.models:
                        self._json(200, model_object(parts[2]))
                    else:
                        self._json(404, {"error": {"message": f"The model '{parts[2]}' does not exist",
                                                   "type": "invalid_request_error", "param": "model",
                                                   "code": "model_not_found"}})
                else:
                    self._json(404, {"error": {"message": f"Unknown request URL: GET {self.path}",
                                               "type": "invalid_request_error", "param": None, "code": None}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path != "/v1/chat/completions":
                    status, reply = 404, {"error": {"message": f"Unknown request URL: POST {self.path}",
                                                    "type": "invalid_request_error", "param": None, "code": None}}
                else:
                    stub.requests.append(body)
                    status, reply = 200, {
                        "id": f"chatcmpl-stub{len(stub.requests)}", "object": "chat.completion", "created": int(time.time()),
                        "model": body["model"], "choices": [{"index": 0, "message": {
                            "role": "assistant", "content": stub.answer(body), "refusal": None},
                            "logprobs": None, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
                data, content_type = json.dumps(reply).encode(), "application/json"
                kind = stub.malformed.pop(0) if status == 200 and stub.malformed else None
                if kind == "html":
                    data, content_type = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"
                elif kind == "invalid_json":
                    data = data[:30]
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                pause = stub.trickle_s
                if not pause:
                    self.wfile.write(data)
                    return
                try:
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        time.sleep(pause)
                except OSError:  # the client gave up and closed the connection
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, body: dict) -> str:
        if body["model"] == "stub-judge":
            prompt = body["messages"][-1]["content"]
            if "Willow" in prompt:
                return "The pair settled on it.\nANSWER: Willow"
            if "ENTRY:" in prompt:
                return "ENTRY: none\nDEVIATION: none"
            offered = re.search(r"<one of: ([^>]*)>", prompt)
            if offered:
                return "ANSWER: " + offered.group(1).split(" | ")[0]
            if "plain number, or none" in prompt:
                return "ANSWER: none"
            return "Reasoning.\nANSWER: yes"
        system = body["messages"][0]["content"]
        if "never reveal" in system.lower() or "do not reveal" in system.lower() or "secret" in system.lower():
            return f"<think>careful</think> Blake: Fine, it is {self.secret}. " + " ".join(["word"] * (self.words - 5))
        said = self.say.split()[:self.words]
        return "<think>plan</think> " + " ".join(said + ["word"] * (self.words - len(said)))

    def __enter__(self) -> "StubChat":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def model_object(model_id: str) -> dict:
    return {"id": model_id, "object": "model", "created": 1767225600, "owned_by": "stub"}
