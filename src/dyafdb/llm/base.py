"""What every LLM client shares: the model's settings, a request and its reply, the errors, one retry policy.

The retry policy is the same for every HTTP backend and caller: rate limits (429), lock and request
timeouts (408, 409), server errors and overload (5xx, 529), timeouts and connection errors, and
HTTP-200 replies that are not a well-formed API object (invalid JSON, an HTML page, a message
without content, a batch without id) are retried with exponential backoff and jitter (a
``Retry-After`` header wins, capped at ``max_backoff_s``); after ``max_retries`` retries the call
fails with :class:`LLMError` naming the model, the call, the endpoint and what was wrong. Any other
HTTP status fails at once. The SDKs' own retries are switched off so that this is the only policy.

``timeout_s`` is a deadline on the whole of one try, from connecting to the last byte of the reply.
The SDKs hand it to httpx, whose timeouts bound each connect, write and read on its own: a gateway
trickling a byte a second never lets a read wait long and held a call for a minute under
``timeout_s: 3``. So :meth:`RetryingClient.call` runs each try under ``asyncio.timeout``, whose
cancellation closes the connection wherever the SDK is (headers, body, a batch's results).

:meth:`RetryingClient.probe` is the preflight's one cheap request (:mod:`dyafdb.llm.probe`): the
backend's model lookup, once, under the same kind of deadline, answered as a :class:`Probe`.

API keys come from the environment variable a model names and nowhere else (never from SDK
profiles or files); they go to the SDK client. Replies and errors scrub every configured key from
their text when made (:mod:`dyafdb.llm.secrets`), so nothing downstream ever holds one.
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, TypeVar

from dyafdb.errors import InputError
from dyafdb.llm.secrets import guard_sdk_logs, public_endpoint, register_key, register_key_env, scrub
from dyafdb.schema_check import load_schema, schema_default


def judge_default(key: str) -> Any:
    """A client's default is the judge's (the text pairing passes its own): the section's, else a judge entry's."""
    schema = load_schema("config-judge")
    if "default" in schema["properties"].get(key, {}):
        return schema_default("config-judge", key)
    return schema["$defs"]["judge"]["properties"][key]["default"]

T = TypeVar("T")

BACKENDS = ("anthropic", "openai", "llamacpp")


class LLMError(RuntimeError):
    """An LLM call failed for good (after its retries, or with a status that retrying cannot fix).
    Its message may quote a server, so it is scrubbed of every configured key when made."""

    def __init__(self, message: str = ""):
        super().__init__(scrub(str(message)))


class Malformed(Exception):
    """An HTTP-200 reply that is not the API object asked for; retried like a server error."""


class Transient(Exception):
    """A failure worth retrying (rate limit, server error, timeout, lost connection)."""

    def __init__(self, reason: str, retry_after: str | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = judge_default("max_retries")
    backoff_s: float = float(judge_default("backoff_s"))
    max_backoff_s: float = float(judge_default("max_backoff_s"))
    timeout_s: float = float(judge_default("timeout_s"))  # the deadline on one whole try (see the module's docstring)
    timeout_key: str = ""  # the config key that sets timeout_s, named when a try runs out of time

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
    max_tokens: int = judge_default("max_tokens")
    temperature: float = float(judge_default("temperature"))
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    model_path: str | None = None
    n_ctx: int = judge_default("n_ctx")
    threads: int = judge_default("threads")
    seed: int | None = None
    prompt_cache: bool = True  # llama.cpp: a request may start from any earlier prompt's prefix (dyafdb.localmodels.llama_server)
    slots: int = 1  # llama.cpp: private KV caches of n_ctx tokens each (Request.slot)

    @property
    def what(self) -> str:
        return f"{self.kind} {self.name} ({self.backend}, {self.model})"

    def api_key(self) -> str | None:
        """The key from the environment; a missing one stops with the variable's name."""
        if self.backend == "llamacpp" or self.api_key_env is None:
            return None
        register_key_env(self.api_key_env)
        key = os.environ.get(self.api_key_env, "").strip()
        register_key(key)
        if not key:
            where = f" (or change {self.config_key}.api_key_env in the config)" if self.config_key else ""
            raise InputError(f"{self.kind} {self.name!r} ({self.backend}, model {self.model}) needs an API key: "
                             f"set the environment variable {self.api_key_env}{where}")
        return key


@dataclass(frozen=True)
class Probe:
    """What the far side said to the preflight's request: ``ok``, what was found, and the fix.
    Its text may quote a server, so it is scrubbed of every configured key when made."""

    ok: bool
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", scrub(self.detail))
        object.__setattr__(self, "fix", scrub(self.fix))


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
    """What a model said. Every reply, from a server, a batch, a local model or the cache, is made
    here, so its text is scrubbed of every configured key here, once, for every consumer."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    batch: bool = False

    def __post_init__(self) -> None:
        self.text = scrub(self.text or "")

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
        self.endpoint = public_endpoint(spec.base_url)
        guard_sdk_logs()  # the subclass has imported its SDK: its loggers exist now

    def classify(self, exc: Exception) -> Exception:
        """Map an SDK exception to :class:`Transient`, :class:`Malformed` or :class:`LLMError` (or return it)."""
        return exc

    async def lookup(self) -> Probe:
        """The backend's cheapest request that proves endpoint, key and model (its SDK's model lookup)."""
        raise NotImplementedError

    def probe_failure(self, exc: Exception) -> Probe | None:
        """An exception of :meth:`lookup` as a failed :class:`Probe` (None: not the far side's doing)."""
        return None

    async def probe(self, timeout_key: str = "") -> Probe:
        """:meth:`lookup` once, no retry, the whole of it (every request it makes) under one deadline
        of ``policy.timeout_s``, as each try of :meth:`call` is; ``timeout_key`` names the setting."""
        deadline = asyncio.timeout(self.policy.timeout_s)
        try:
            async with deadline:
                return await self.lookup()
        except Exception as exc:  # the far side's failures become a Probe; others are bugs and propagate
            if deadline.expired():
                setting = f"raise {timeout_key} if it is this slow, " if timeout_key else ""
                return Probe(False, f"{self.endpoint} gave no complete reply within {self.policy.timeout_s:g} s",
                             f"{setting}check {self.spec.config_key}.base_url and the network, or pass --offline")
            failure = self.probe_failure(exc)
            if failure is None:
                raise
            return failure

    async def call(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` under the retry policy, each try under the deadline; ``what`` names the call."""
        last = ""
        tries = self.policy.max_retries + 1
        where = f"{what} at {self.endpoint}"
        for n in range(tries):
            deadline = asyncio.timeout(self.policy.timeout_s)
            try:
                async with deadline:
                    return await attempt()
            except Exception as exc:  # sorted below: retried, fatal, or not ours
                if deadline.expired():
                    err: Exception = Transient(f"no complete reply within {self.policy.timeout_s:g} s")
                else:
                    err = exc if isinstance(exc, (Transient, Malformed, LLMError)) else self.classify(exc)
                if isinstance(err, LLMError):
                    raise LLMError(f"{self.spec.what}: {where}: {err}") from None
                if not isinstance(err, (Transient, Malformed)):
                    raise
                last = f"malformed reply: {err}" if isinstance(err, Malformed) else str(err)
                if n + 1 < tries:
                    await asyncio.sleep(self.policy.delay(n, getattr(err, "retry_after", None)))
        if "HTTP" in last:
            hint = "lower the concurrency or try later"
        elif last.startswith("no complete reply"):
            setting = f"raise {self.policy.timeout_key} if replies are this slow, " if self.policy.timeout_key else ""
            hint = f"{setting}check the endpoint or try later"
        else:
            hint = "check the endpoint or try later"
        raise LLMError(f"{self.spec.what}: {where}: {last} after {tries} tries; {hint} "
                       "(replies already received stay cached)")
