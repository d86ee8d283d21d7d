"""Adapter name -> agent class, imported lazily so a worker only imports its own model's stack."""

from __future__ import annotations

import importlib
from typing import Any

from dyafdb.agents.base import Agent
from dyafdb.schema_check import InputError

ADAPTERS: dict[str, str] = {
    "null": "dyafdb.agents.null:NullAgent",
    "scripted": "dyafdb.agents.scripted:ScriptedAgent",
    "cascade": "dyafdb.agents.cascade:CascadeAgent",
    "personaplex": "dyafdb.agents.personaplex:PersonaPlexAgent",
    "moshi": "dyafdb.agents.moshi_agent:MoshiAgent",
    "minicpmo": "dyafdb.agents.minicpmo:MiniCPMOAgent",
    "raon": "dyafdb.agents.raon:RaonAgent",
}


def make_agent(adapter: str, params: dict[str, Any] | None = None, model_name: str = "") -> Agent:
    """Build an agent; each class takes ``(params, model_name)`` and loads its model in ``__init__``."""
    if adapter not in ADAPTERS:
        raise InputError(f"unknown adapter {adapter!r}; known adapters: {', '.join(sorted(ADAPTERS))}")
    module_name, class_name = ADAPTERS[adapter].split(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name)
    return cls(params or {}, model_name or adapter)
