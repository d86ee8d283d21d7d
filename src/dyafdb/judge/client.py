"""A judge as an LLM client: its config entry as a :class:`~dyafdb.llm.ModelSpec`, its retry settings as the policy."""

from __future__ import annotations

from typing import Any, Mapping

from dyafdb.judge.settings import JudgeSettings, JudgeSpec
from dyafdb.llm import Client, LLMError, Reply, Request, RetryPolicy, make_client

JudgeError = LLMError  # a judge call that failed for good; `dyafdb judge` prints it on one line


class Backend(Client):
    """What the runner asks: an LLM client's calls, with the judge's settings as its ``spec``."""

    spec: JudgeSpec  # type: ignore[assignment]  # a judge's spec carries its model's and more


class ClientBackend(Backend):
    def __init__(self, spec: JudgeSpec, client: Client):
        self.spec = spec
        self.client = client
        if hasattr(client, "complete_batch"):
            self.complete_batch = self._complete_batch

    def request_body(self, request: Request) -> dict[str, Any]:
        return self.client.request_body(request)

    async def complete(self, request: Request) -> Reply:
        return await self.client.complete(request)

    async def _complete_batch(self, requests: Mapping[str, Request]) -> dict[str, Reply]:
        return await self.client.complete_batch(requests)  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        await self.client.aclose()


def retry_policy(settings: JudgeSettings) -> RetryPolicy:
    return RetryPolicy(max_retries=settings.max_retries, backoff_s=settings.backoff_s,
                       max_backoff_s=settings.max_backoff_s, timeout_s=settings.timeout_s, timeout_key="judge.timeout_s")


def make_backend(spec: JudgeSpec, settings: JudgeSettings) -> Backend:
    """The judge's client; a missing API key or model file stops here, before any request."""
    return ClientBackend(spec, make_client(spec.model_spec(), retry_policy(settings), spec.batch_poll_s))


__all__ = ["Backend", "JudgeError", "Reply", "Request", "make_backend", "retry_policy"]
