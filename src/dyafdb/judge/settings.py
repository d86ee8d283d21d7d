"""The ``judge`` config section with its defaults, and API keys read from the environment.

Keys are only ever read from the environment variable a judge names and passed to the SDK client.
A server may still quote one back, so every judge's variable is registered for scrubbing here
(:mod:`dyafdb.llm.secrets`): whatever a reply says, no key reaches a log, a result or the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dyafdb.errors import InputError
from dyafdb.llm import ModelSpec
from dyafdb.llm.secrets import register_key_env
from dyafdb.paths import results_of
from dyafdb.schema_check import fill_defaults, load_schema

# The paper's judges (Appendix D): Claude Opus-5 answers every question, Sonnet-5 answers them
# again. Model ids are config values: set the exact ids your account offers.
DEFAULT_JUDGES: dict[str, dict[str, Any]] = {
    "main": {"backend": "anthropic", "model": "claude-opus-5"},
    "second": {"backend": "anthropic", "model": "claude-sonnet-5"},
}
# With ``demo_quality: true`` (the laptop demo) and no judges configured: the local llama.cpp model.
DEMO_JUDGES: dict[str, dict[str, Any]] = {"demo": {"backend": "llamacpp"}}
# The section's own defaults are written in its schema; a raw (unvalidated) config reads the same ones.
SECTION_DEFAULTS: dict[str, Any] = fill_defaults({}, load_schema("config-judge"))
DEFAULT_BASE_URL = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    backend: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    batch: bool = False
    batch_poll_s: float = 30.0
    batch_discount: float = 0.5
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    concurrency: int = 8
    max_tokens: int = 512
    temperature: float = 0.0
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    grammar: bool = False
    model_path: str | None = None
    n_ctx: int = 8192
    threads: int = 2
    seed: int = 0
    demo_quality: bool = False

    def model_spec(self) -> ModelSpec:
        """The judge as the LLM clients see it."""
        return ModelSpec(name=self.name, backend=self.backend, model=self.model, kind="judge",
                         config_key=f"judge.judges.{self.name}", base_url=self.base_url, api_key_env=self.api_key_env,
                         max_tokens=self.max_tokens, temperature=self.temperature, extra_body=dict(self.extra_body),
                         model_path=self.model_path, n_ctx=self.n_ctx, threads=self.threads, seed=self.seed)

    def api_key(self) -> str | None:
        """The key from the environment; a missing one stops with the variable's name."""
        return self.model_spec().api_key()

    @property
    def cache_identity(self) -> str:
        """What the reply cache keys on for "the judge model": backend, endpoint and model id."""
        where = self.model_path if self.backend == "llamacpp" else self.base_url
        return f"{self.backend}|{where}|{self.model}"


@dataclass(frozen=True)
class JudgeSettings:
    judges: Mapping[str, JudgeSpec]
    run: tuple[str, ...]
    prompts_dir: Path
    cache_dir: Path
    max_retries: int = 6
    backoff_s: float = 2.0
    max_backoff_s: float = 60.0
    timeout_s: float = 120.0
    label_retries: int = 1
    probe_timeout_s: float = 10.0  # the preflight's request per judge (dyafdb.llm.probe)

    @property
    def main_judge(self) -> str | None:
        """The judge whose labels are the scores: "main" when it runs, else the first that runs."""
        return "main" if "main" in self.run else (self.run[0] if self.run else None)

    def judge(self, name: str) -> JudgeSpec:
        if name not in self.judges:
            raise InputError(f"judge {name!r} is not configured; judge.judges has: {', '.join(sorted(self.judges))}")
        return self.judges[name]


def _spec(name: str, raw: Mapping[str, Any], section: Mapping[str, Any]) -> JudgeSpec:
    backend = raw["backend"]
    values: dict[str, Any] = {
        "name": name, "backend": backend,
        "model": raw.get("model") or ("smollm2-135m-instruct" if backend == "llamacpp" else ""),
        "base_url": raw.get("base_url", DEFAULT_BASE_URL.get(backend)),
        "api_key_env": raw["api_key_env"] if "api_key_env" in raw else DEFAULT_KEY_ENV.get(backend),
        "concurrency": raw.get("concurrency", 1 if backend == "llamacpp" else section["concurrency"]),
        # A grammar-bound local model answers in a few tokens; the cap stops one that is not bound.
        "max_tokens": raw.get("max_tokens", 64 if backend == "llamacpp" else section["max_tokens"]),
        "temperature": float(raw.get("temperature", section.get("temperature", 0.0))),
        "grammar": raw.get("grammar", backend == "llamacpp"),
        "demo_quality": raw.get("demo_quality", backend == "llamacpp"),
    }
    for key in ("batch", "batch_poll_s", "batch_discount", "price_input_per_mtok", "price_output_per_mtok",
                "extra_body", "model_path", "n_ctx", "threads", "seed"):
        if key in raw:
            values[key] = raw[key]
    if backend != "llamacpp" and not values["model"]:
        raise InputError(f"config judge.judges.{name}: backend {backend} needs model (the API's model id)")
    if backend == "anthropic" and "temperature" in raw:
        raise InputError(f"config judge.judges.{name}.temperature: the Anthropic API (version 2026-10-21, sent by "
                         "the anthropic SDK 2.x) has no sampling parameters and refuses a temperature; remove it")
    if values.get("batch") and backend != "anthropic":
        raise InputError(f"config judge.judges.{name}: batch is only available with backend anthropic")
    return JudgeSpec(**values)


def judge_settings(config: Mapping[str, Any], root: Path = Path(".")) -> JudgeSettings:
    """Settings from config section ``judge`` (already schema-checked) with defaults filled in."""
    section = {**SECTION_DEFAULTS, **(config.get("judge") or {})}
    raw_judges = section.get("judges") or (DEMO_JUDGES if config.get("demo_quality") else DEFAULT_JUDGES)
    judges = {name: _spec(name, raw, section) for name, raw in raw_judges.items()}
    for spec in judges.values():
        register_key_env(spec.api_key_env)  # every judge's key is scrubbed from every reply, not only its own
    run = tuple(section.get("run") or judges)
    for name in run:
        if name not in judges:
            raise InputError(f"config judge.run lists {name!r}, which is not under judge.judges "
                             f"({', '.join(sorted(judges))})")
    cache = section.get("cache_dir")
    return JudgeSettings(
        judges=judges, run=run,
        prompts_dir=Path(root) / section["prompts_dir"],
        cache_dir=Path(root) / cache if cache else Path(results_of(config, root).judge_cache),
        max_retries=int(section["max_retries"]),
        backoff_s=float(section["backoff_s"]),
        max_backoff_s=float(section["max_backoff_s"]),
        timeout_s=float(section["timeout_s"]),
        label_retries=int(section["label_retries"]),
        probe_timeout_s=float(section["probe_timeout_s"]),
    )
