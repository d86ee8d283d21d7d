"""What every LLM client shares: the model's settings, a request and its reply, the errors, one retry policy.

The retry policy is the same for every HTTP backend and caller: rate limits (429), lock and request
timeouts (408, 409), server errors and overload (5xx, 529), timeouts and connection errors, and
HTTP-200 replies that are not a well-formed API object (invalid JSON, an HTML page, a message
without content, a batch without id) are retried with exponential backoff and jitter (a
``Retry-After`` header wins, capped at ``max_backoff_s``); after ``max_retries`` retries the call
fails with :class:`LLMError` naming the model, the call and what was wrong. Any other HTTP status
fails at once. The SDKs' own retries are switched off so that this is the only policy.

API keys come from the environment variable a model names and nowhere else (never from SDK
profiles or files); they go to the SDK client, and every message that quotes a server is scrubbed
of them.
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, TypeVar

from dyafdb.errors import InputError

T = TypeVar("T")

BACKENDS = ("anthropic", "openai", "llamacpp")


class LLMError(RuntimeError):
    """An LLM call failed for good (after its retries, or with a status that retrying cannot fix)."""


class Malformed(Exception):
    """An HTTP-200 reply that is not the API object asked for; retried like a server error."""


class Transient(Exception):
    """A failure worth retrying (rate limit, server error, timeout, lost connection)."""

    def __init__(self, reason: str, retry_after: str | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    backoff_s: float = 2.0
    max_backoff_s: float = 60.0
    timeout_s: float = 120.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff_s)
            except ValueError:
                pass
        base = min(self.backoff_s * (2 ** attempt), self.max_backoff_s)
        return base * (0.75 + 0.5 * random.random())  # jitter: parallel requests do not retry in lockstep


@dataclass(frozen=True)
class ModelSpec:
    """One model as a client reaches it. ``kind`` and ``config_key`` only word the messages
    (``judge main``, ``judge.judges.main``); the judge and the text pairing each build one from their config."""

    name: str
    backend: str
    model: str = ""
    kind: str = "model"
    config_key: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    max_tokens: int = 512
    temperature: float = 0.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    model_path: str | None = None
    n_ctx: int = 8192
    threads: int = 2
    seed: int | None = None
    prompt_cache: bool = True  # llama.cpp: a request may start from any earlier prompt's prefix (dyafdb.llama_server)
    slots: int = 1  # llama.cpp: private KV caches of n_ctx tokens each (Request.slot)

    @property
    def what(self) -> str:
        return f"{self.kind} {self.name} ({self.backend}, {self.model})"

    def api_key(self) -> str | None:
        """The key from the environment; a missing one stops with the variable's name."""
        if self.backend == "llamacpp" or self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            where = f" (or change {self.config_key}.api_key_env in the config)" if self.config_key else ""
            raise InputError(f"{self.kind} {self.name!r} ({self.backend}, model {self.model}) needs an API key: "
                             f"set the environment variable {self.api_key_env}{where}")
        return key


@dataclass
class Request:
    messages: list[dict[str, str]]
    grammar: str | None = None
    seed: int | None = None
    # A local server's private KV slot for one speaker of one conversation, and whether the request
    # may reuse what that slot holds (the speaker's previous request). The first request of a
    # conversation must not, so a conversation's numbers depend on it alone; HTTP APIs ignore both.
    slot: int | None = None
    reuse: bool = False


@dataclass
class Reply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    batch: bool = False

    def to_cache(self) -> dict[str, Any]:
        return {"text": self.text, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "batch": self.batch}


class Client:
    """One model behind one interface. ``request_body`` is what identifies a request (the reply
    cache keys on it); ``complete`` returns a well-formed reply or raises :class:`LLMError`."""

    spec: ModelSpec

    def request_body(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    async def complete(self, request: Request) -> Reply:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


class RetryingClient(Client):
    """An HTTP client: every call goes through :meth:`call` and its one retry policy."""

    def __init__(self, spec: ModelSpec, policy: RetryPolicy):
        self.spec = spec
        self.policy = policy
        self.key = spec.api_key()  # read now: a missing key stops before any work

    def scrub(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def classify(self, exc: Exception) -> Exception:
        """Map an SDK exception to :class:`Transient`, :class:`Malformed` or :class:`LLMError` (or return it)."""
        return exc

    async def call(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` under the retry policy; ``what`` names the call in the messages."""
        last = ""
        tries = self.policy.max_retries + 1
        for n in range(tries):
            try:
                return await attempt()
            except Exception as exc:  # sorted below: retried, fatal, or not ours
                err = exc if isinstance(exc, (Transient, Malformed, LLMError)) else self.classify(exc)
                if isinstance(err, LLMError):
                    raise LLMError(self.scrub(f"{self.spec.what}: {what}: {err}")) from None
                if not isinstance(err, (Transient, Malformed)):
                    raise
                last = f"malformed reply: {err}" if isinstance(err, Malformed) else str(err)
                if n + 1 < tries:
                    await asyncio.sleep(self.policy.delay(n, getattr(err, "retry_after", None)))
        hint = "lower the concurrency or try later" if "HTTP" in last else "check the endpoint or try later"
        raise LLMError(self.scrub(f"{self.spec.what}: {what}: {last} after {tries} tries; {hint} "
                                  "(replies already received stay cached)"))
