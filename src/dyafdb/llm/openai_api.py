"""Chat completions on any OpenAI-compatible server (OpenAI, vLLM, llama.cpp's server) through the official SDK."""

from __future__ import annotations

from typing import Any

from dyafdb.llm.base import Malformed, ModelSpec, Probe, Reply, Request, RetryingClient, RetryPolicy
from dyafdb.llm.sdk import classify, lookup_model, parse_raw, probe_failure, require

# Sent as the SDK's named parameters; everything else in a request body (a grammar, extra_body) as extra_body.
NAMED = ("model", "messages", "max_tokens", "temperature", "seed")


class OpenAIClient(RetryingClient):
    def __init__(self, spec: ModelSpec, policy: RetryPolicy):
        import openai

        super().__init__(spec, policy)
        self.sdk = openai
        # The SDK insists on a key; a key-less local server gets a placeholder whose header every
        # request omits (the SDK checks the omission per request, not on the client's default headers).
        self.client = openai.AsyncOpenAI(api_key=self.key or "unused", base_url=spec.base_url, max_retries=0,
                                         timeout=policy.timeout_s)
        self.headers = None if self.key else {"Authorization": openai.Omit()}

    def classify(self, exc: Exception) -> Exception:
        return classify(exc, self.sdk, self.spec)

    def probe_failure(self, exc: Exception) -> Probe | None:
        return probe_failure(exc, self.sdk, self.spec, self.endpoint)

    async def lookup(self) -> Probe:
        """``GET /models/{model}`` (``models.retrieve``); where a local server lacks that route,
        ``GET /models`` (``models.list``) and the id looked for in it."""
        async def list_ids() -> list[str]:
            page = await self.client.models.list(extra_headers=self.headers)
            return [getattr(m, "id", None) for m in getattr(page, "data", None) or []]

        return await lookup_model(self.spec, self.endpoint, self.sdk,
                                  lambda: self.client.models.retrieve(self.spec.model, extra_headers=self.headers),
                                  list_ids)

    def request_body(self, request: Request) -> dict[str, Any]:
        body = {"model": self.spec.model, "messages": request.messages, "max_tokens": self.spec.max_tokens,
                "temperature": self.spec.temperature}
        if request.seed is not None:
            body["seed"] = request.seed
        body.update(self.spec.extra_body)
        if request.grammar:
            body["grammar"] = request.grammar  # llama.cpp's server; other servers take extra_body instead
        return body

    async def complete(self, request: Request) -> Reply:
        body = self.request_body(request)
        named = {k: v for k, v in body.items() if k in NAMED}
        extra = {k: v for k, v in body.items() if k not in NAMED}

        async def attempt() -> Reply:
            raw = await self.client.chat.completions.with_raw_response.create(**named, extra_body=extra or None,
                                                                       extra_headers=self.headers)
            completion = await parse_raw(raw, self.sdk.types.chat.ChatCompletion)
            choices = require(completion, "choices", list, "a chat completion")
            message = getattr(choices[0], "message", None) if choices else None
            if message is None:
                raise Malformed("a chat completion without choices[0].message")
            usage = getattr(completion, "usage", None)
            return Reply(getattr(message, "content", None) or "", int(getattr(usage, "prompt_tokens", 0) or 0),
                         int(getattr(usage, "completion_tokens", 0) or 0))

        return await self.call("POST /chat/completions", attempt)

    async def aclose(self) -> None:
        await self.client.close()
