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
from dyafdb.schema_check import fill_defaults, load_schema, schema_default

# The judges when the config names none (the schema's judges: x-default, the paper's Claude Opus-5
# and Sonnet-5 of Appendix D; x-demo-default with demo_quality: true, the local llama.cpp model).
DEFAULT_JUDGES: dict[str, dict[str, Any]] = load_schema("config-judge")["properties"]["judges"]["x-default"]
DEMO_JUDGES: dict[str, dict[str, Any]] = load_schema("config-judge")["properties"]["judges"]["x-demo-default"]
# The section's own defaults are written in its schema; a raw (unvalidated) config reads the same ones,
# and so does a judge: its schema's defaults, then those of its backend (x-backend-defaults there).
SECTION_DEFAULTS: dict[str, Any] = fill_defaults({}, load_schema("config-judge"))
JUDGE_DEFAULTS: dict[str, Any] = fill_defaults({}, load_schema("config-judge")["$defs"]["judge"])
BACKEND_DEFAULTS: dict[str, dict[str, Any]] = load_schema("config-judge")["$defs"]["judge"]["x-backend-defaults"]


def _default(key: str) -> Any:
    return schema_default("config-judge", key)


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    backend: str
    model: str
    base_url: str | None
    api_key_env: str | None
    # every other setting is given by judge_settings (_spec), from the schema's defaults
    batch: bool
    batch_poll_s: float
    batch_discount: float
    concurrency: int
    max_tokens: int
    temperature: float
    grammar: bool
    n_ctx: int
    threads: int
    seed: int
    demo_quality: bool
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    model_path: str | None = None

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
    max_retries: int = _default("max_retries")
    backoff_s: float = float(_default("backoff_s"))
    max_backoff_s: float = float(_default("max_backoff_s"))
    timeout_s: float = float(_default("timeout_s"))
    label_retries: int = _default("label_retries")
    probe_timeout_s: float = float(_default("probe_timeout_s"))  # the preflight's request per judge (dyafdb.llm.probe)

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
    # the section's request settings, the judge's schema defaults, its backend's (a grammar-bound
    # local model answers in a few tokens, one request at a time), then what the config says
    given = {"concurrency": section["concurrency"], "max_tokens": section["max_tokens"],
             "temperature": section["temperature"], **JUDGE_DEFAULTS, **BACKEND_DEFAULTS[backend], **raw}
    values: dict[str, Any] = {k: given[k] for k in JudgeSpec.__dataclass_fields__ if k in given}
    values.update(name=name, model=given.get("model") or "", temperature=float(given["temperature"]),
                  batch_poll_s=float(given["batch_poll_s"]), batch_discount=float(given["batch_discount"]))
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
    section = {**SECTION_DEFAULTS, **(config.get("judge") or {})}  # a raw config reads the schema's defaults too
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
