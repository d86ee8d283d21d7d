"""Anthropic Messages, and Message Batches for many requests at half the price, through the official SDK.

The SDK (2.x) sends API version 2026-10-21, which has no sampling parameters: ``temperature``,
``top_p`` and ``top_k`` are refused with HTTP 400 even at their defaults, so none is sent.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

from dyafdb.llm.base import Malformed, ModelSpec, Probe, Reply, Request, RetryingClient, RetryPolicy, judge_default
from dyafdb.llm.sdk import classify, lookup_model, parse_raw, probe_failure, require


class AnthropicClient(RetryingClient):
    """``messages.create``; :meth:`complete_batch` sends many through ``messages.batches``."""

    def __init__(self, spec: ModelSpec, policy: RetryPolicy, batch_poll_s: float = float(judge_default("batch_poll_s"))):
        import anthropic

        super().__init__(spec, policy)
        self.sdk = anthropic
        self.batch_poll_s = batch_poll_s
        # An explicit api_key stops the SDK from looking for credentials itself (environment,
        # profiles on disk); a key-less endpoint gets no Authorization header at all.
        self.client = anthropic.AsyncAnthropic(api_key=self.key or "", base_url=spec.base_url, max_retries=0,
                                               timeout=policy.timeout_s, open_telemetry=False)
        self.headers = None if self.key else {"Authorization": anthropic.Omit()}

    def classify(self, exc: Exception) -> Exception:
        return classify(exc, self.sdk, self.spec)

    def probe_failure(self, exc: Exception) -> Probe | None:
        return probe_failure(exc, self.sdk, self.spec, self.endpoint)

    async def lookup(self) -> Probe:
        """``GET /v1/models/{model}`` (``models.retrieve``): free, no tokens; a 404 lists the account's models."""
        async def list_ids() -> list[str]:
            page = await self.client.models.list(limit=100, extra_headers=self.headers)
            return [getattr(m, "id", None) for m in getattr(page, "data", None) or []]

        return await lookup_model(self.spec, self.endpoint, self.sdk,
                                  lambda: self.client.models.retrieve(self.spec.model, extra_headers=self.headers),
                                  list_ids)

    def request_body(self, request: Request) -> dict[str, Any]:
        return {"model": self.spec.model, "max_tokens": self.spec.max_tokens, "messages": request.messages}

    def _reply(self, message: Any, batch: bool = False) -> Reply:
        content = require(message, "content", list, "a message")
        text = "".join(getattr(block, "text", "") or "" for block in content if getattr(block, "type", None) == "text")
        usage = getattr(message, "usage", None)
        return Reply(text, int(getattr(usage, "input_tokens", 0) or 0), int(getattr(usage, "output_tokens", 0) or 0),
                     batch=batch)

    async def complete(self, request: Request) -> Reply:
        async def attempt() -> Reply:
            raw = await self.client.messages.with_raw_response.create(**self.request_body(request),
                                                                      extra_headers=self.headers)
            return self._reply(await parse_raw(raw, self.sdk.types.Message))

        return await self.call("POST /v1/messages", attempt)

    async def complete_batch(self, requests: Mapping[str, Request]) -> dict[str, Reply]:
        """Submit one Message Batch, poll until it ends, return the replies that succeeded (the caller
        asks the rest directly). A malformed reply to the submission is retried like any other, which
        may leave an orphaned batch on the account: the price of never caching a bad reply."""
        batches = self.client.messages.batches
        MessageBatch = self.sdk.types.messages.MessageBatch
        body = [{"custom_id": cid, "params": self.request_body(r)} for cid, r in requests.items()]

        async def submit() -> str:
            raw = await batches.with_raw_response.create(requests=body, extra_headers=self.headers)
            batch = await parse_raw(raw, MessageBatch)
            return require(batch, "id", str, "a message batch")

        async def poll(batch_id: str) -> str:
            raw = await batches.with_raw_response.retrieve(batch_id, extra_headers=self.headers)
            batch = await parse_raw(raw, MessageBatch)
            return require(batch, "processing_status", str, "a message batch")

        async def results(batch_id: str) -> dict[str, Reply]:
            out: dict[str, Reply] = {}
            async for item in await batches.results(batch_id, extra_headers=self.headers):
                result = getattr(item, "result", None)
                if getattr(result, "type", None) != "succeeded":
                    continue  # errored, canceled or expired: asked directly
                try:
                    out[require(item, "custom_id", str, "a batch result")] = self._reply(result.message, batch=True)
                except Malformed:
                    continue  # this one is asked directly, where a bad reply is retried
            return out

        batch_id = await self.call("POST /v1/messages/batches", submit)
        while await self.call(f"GET /v1/messages/batches/{batch_id}", lambda: poll(batch_id)) != "ended":
            await asyncio.sleep(self.batch_poll_s)
        return await self.call(f"GET the results of {batch_id}", lambda: results(batch_id))

    async def aclose(self) -> None:
        await self.client.close()
