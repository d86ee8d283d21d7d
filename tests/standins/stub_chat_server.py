"""A local HTTP server speaking the OpenAI chat-completions API, for the text-pairing tests.

Text models answer with a fixed number of words (the defender of a T4-2 scenario names its secret);
the judge model answers in the rubric's format. Every request body is kept for the assertions.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StubChat:
    def __init__(self, words: int = 35, secret: str = "cottage 14"):
        self.words = words
        self.secret = secret
        self.requests: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stub.requests.append(body)
                text = stub.answer(body)
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

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
        return "<think>plan</think> " + " ".join(["word"] * self.words)

    def __enter__(self) -> "StubChat":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
