"""Which adapters can be hosted by an engine, and the trivial null engine.

Each engine class says which adapter it hosts where it is defined (``@engine("moshi")``,
dyafdb.agents.registry); ``ENGINES`` is derived from those declarations, read from the source, so
listing the engines loads no model stack.

An engine model loads once in ``__init__(params, model_name, capacity)`` and implements
:class:`dyafdb.agents.engine.batcher.BatchModel`. Adapters without one keep their per-job workers.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session, silence
from dyafdb.agents.registry import engine, engines
from dyafdb.errors import InputError
from dyafdb.schema_check import model_default


def __getattr__(name: str) -> Any:
    # ENGINES: adapter -> ``module:Class`` of its engine, from the ``@engine("name")`` declarations on the
    # engine classes (and installed packages' entry points, group dyafdb.engines), read from source
    if name == "ENGINES":
        return engines()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Adapters whose sessions an engine steps in one batched forward pass per tick (the Moshi architecture);
# `dyafdb plan` projects their GPU time with engines from the per-tick cost.
BATCHED_ADAPTERS: tuple[str, ...] = ("moshi", "personaplex")
# Adapters whose engine keeps one loaded model and steps each session on its own (the model holds
# per-session state and serialises compute itself), with how many sessions it hosts at once:
# MiniCPM-o keeps its streaming state on the model object (one session at a time, one after another
# without reloading); Raon's gateway takes as many as its worker's --max-sessions-per-gpu (None: the
# adapter reads the config, dyafdb.agents.raon.gateway_sessions). `engine.sessions` is then how
# many sessions one load hosts, taking turns. docs/engines.md says which state is per session.
SESSION_ADAPTERS: dict[str, int | None] = {"minicpmo": 1, "raon": None}


# Adapters whose sessions start with a prompt phase of LM steps in the engine (PersonaPlex: voice,
# silence and text-prompt frames), which ride in the batched ticks; `dyafdb plan` counts them.
PROMPT_ADAPTERS: tuple[str, ...] = ("personaplex",)


def session_engines(config: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """model -> (sessions at once, sessions per model load) for the models whose adapter's engine steps
    sessions on their own, as `dyafdb plan` projects them (``engine.sessions``, default 16)."""
    out = {}
    for model, spec in config["models"].items():
        if spec.get("adapter") in SESSION_ADAPTERS:
            out[model] = (concurrent_sessions(spec), int((spec.get("engine") or {}).get("sessions", model_default("engine", "sessions"))))
    return out


def concurrent_sessions(spec: dict[str, Any]) -> int:
    """How many sessions of this model's engine run at once (its turns): ``engine.sessions`` for the
    batched and gateway engines, 1 where upstream keeps the session's state on the model."""
    sessions = int((spec.get("engine") or {}).get("sessions", model_default("engine", "sessions")))
    adapter = spec.get("adapter", "")
    if adapter not in SESSION_ADAPTERS:
        return sessions
    fixed = SESSION_ADAPTERS[adapter]
    if fixed is None:  # raon: its gateway's own setting
        from dyafdb.agents.raon import gateway_sessions

        return gateway_sessions(spec.get("params") or {}, adapter, sessions)
    return min(fixed, sessions)


def make_engine(adapter: str, params: dict[str, Any], model_name: str, capacity: int) -> Any:
    known = engines()
    target = known.get(adapter, adapter if ":" in adapter else None)  # or 'package.module:Class'
    if target is None:
        raise InputError(f"model {model_name}: adapter {adapter!r} has no engine (engines exist for "
                         f"{', '.join(known)}); remove its engine settings to run it in per-job workers")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)(params, model_name, capacity)


@engine("null")
class NullEngine:
    """Silence for every session: the engine plumbing's cost with no model in the way."""

    def __init__(self, params: dict[str, Any], model_name: str = "null", capacity: int = 16):
        self.capacity, self.model_name = capacity, model_name
        self._free = list(range(capacity))

    def open(self, session: Session) -> tuple[int, AgentInfo]:
        if not self._free:
            raise AgentError(f"engine full: all {self.capacity} slots hold sessions")
        return self._free.pop(0), AgentInfo(adapter="null", adapter_version=__version__, model=self.model_name,
                                            extra={"engine": True})

    def close(self, slot: int) -> None:
        if slot not in self._free:
            self._free.append(slot)
            self._free.sort()

    def step(self, heard: dict[int, np.ndarray]) -> dict[int, Frame]:
        return {slot: Frame(silence()) for slot in heard}
