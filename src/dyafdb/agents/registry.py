"""Adapter name -> agent class, imported lazily so a worker only imports its own model's stack."""

from __future__ import annotations

import importlib
from typing import Any

from dyafdb.agents.base import Agent
from dyafdb.errors import InputError

ADAPTERS: dict[str, str] = {
    "null": "dyafdb.agents.null:NullAgent",
    "scripted": "dyafdb.agents.scripted:ScriptedAgent",
    "cascade": "dyafdb.agents.cascade.agent:CascadeAgent",
    "personaplex": "dyafdb.agents.moshi.personaplex:PersonaPlexAgent",
    "moshi": "dyafdb.agents.moshi.agent:MoshiAgent",
    "minicpmo": "dyafdb.agents.minicpmo:MiniCPMOAgent",
    "raon": "dyafdb.agents.raon:RaonAgent",
}


def make_agent(adapter: str, params: dict[str, Any] | None = None, model_name: str = "") -> Agent:
    """Build an agent; each class takes ``(params, model_name)`` and loads its model in ``__init__``."""
    target = ADAPTERS.get(adapter, adapter if ":" in adapter else None)
    if target is None:
        raise InputError(f"unknown adapter {adapter!r}; use one of {', '.join(sorted(ADAPTERS))} or 'package.module:ClassName'")
    module_name, class_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise InputError(f"adapter {adapter!r}: cannot import {module_name} ({exc}); install that adapter's environment (see envs/)") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise InputError(f"adapter {adapter!r}: {module_name} has no class {class_name}")
    return cls(params or {}, model_name or adapter)
