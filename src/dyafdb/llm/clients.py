"""One constructor for every backend, and a synchronous face for callers that take turns (text pairing)."""

from __future__ import annotations

import asyncio

from dyafdb.errors import InputError
from dyafdb.llm.base import BACKENDS, Client, ModelSpec, Reply, Request, RetryPolicy, judge_default


def make_client(spec: ModelSpec, policy: RetryPolicy = RetryPolicy(),
                batch_poll_s: float = float(judge_default("batch_poll_s"))) -> Client:
    """The client for ``spec.backend``; a missing API key or GGUF file stops here, before any request."""
    if spec.backend == "anthropic":
        from dyafdb.llm.anthropic_api import AnthropicClient

        return AnthropicClient(spec, policy, batch_poll_s)
    if spec.backend == "openai":
        from dyafdb.llm.openai_api import OpenAIClient

        return OpenAIClient(spec, policy)
    if spec.backend == "llamacpp":
        from dyafdb.llm.llamacpp import LlamaCppClient

        return LlamaCppClient(spec)
    raise InputError(f"{spec.kind} {spec.name}: unknown backend {spec.backend!r}; use {', '.join(BACKENDS)}")


class SyncClient:
    """A client driven one request at a time from synchronous code, on an event loop of its own
    (the SDK's connection pool belongs to the loop it first ran on, so one loop serves every call)."""

    def __init__(self, spec: ModelSpec, policy: RetryPolicy = RetryPolicy()):
        self.client = make_client(spec, policy)
        self.loop = asyncio.new_event_loop()

    @property
    def spec(self) -> ModelSpec:
        return self.client.spec

    def complete(self, request: Request) -> Reply:
        return self.loop.run_until_complete(self.client.complete(request))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.client.aclose())
        finally:
            self.loop.close()
