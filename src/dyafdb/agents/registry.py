"""Adapters: each class says its name where it is defined (``@adapter("raon")``); this module finds them.

The registry is found by reading the adapter modules' source, not by importing them
(dyafdb.declarations, the one registry mechanism): a worker imports only its own model's stack
(torch, transformers, websockets ...), and validating a config must not need any of them. So the
config schema's adapter names, the CLI and the error messages all come from the ``@adapter`` lines,
and a new adapter is its module plus a config entry. A lab's own installed package registers one
with an entry point in group ``dyafdb.adapters`` (``myagent = mylab.agent:MyAgent``), without
editing this repository.
"""

from __future__ import annotations

import importlib
from typing import Any

from dyafdb.agents.base import Agent
from dyafdb.declarations import declared_classes, decorator
from dyafdb.errors import InputError

PACKAGE = "dyafdb.agents"
# ``@adapter("name")`` on the class: ``adapter: name`` in config
adapter = decorator("adapter")
# ``@engine("name")`` on an engine model class: it hosts the sessions of adapter ``name`` in one model
# load (dyafdb.agents.engine); a lab's package adds one through entry point group ``dyafdb.engines``
engine = decorator("engine")


def adapters() -> dict[str, str]:
    """Declared adapter name (built in, or from an installed package's entry point) -> ``module:Class``, in name order."""
    return declared_classes(PACKAGE, "adapter")


def engines() -> dict[str, str]:
    """Adapter name -> ``module:Class`` of its engine (built in, or from an installed package), in name order."""
    return declared_classes(PACKAGE, "engine")


def adapter_names() -> list[str]:
    return list(adapters())


def adapter_class(adapter: str) -> type:
    """The class of a declared adapter (or a ``package.module:ClassName``), imported; nothing is loaded."""
    known = adapters()
    target = known.get(adapter, adapter if ":" in adapter else None)
    if target is None:
        raise InputError(f"unknown adapter {adapter!r}; use one of {', '.join(known)} or 'package.module:ClassName'")
    module_name, class_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise InputError(f"adapter {adapter!r}: cannot import {module_name} ({exc}); install that adapter's environment (see envs/)") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise InputError(f"adapter {adapter!r}: {module_name} has no class {class_name}")
    return cls


def make_agent(adapter: str, params: dict[str, Any] | None = None, model_name: str = "") -> Agent:
    """Build an agent; each class takes ``(params, model_name)`` and loads its model in ``__init__``."""
    return adapter_class(adapter)(params or {}, model_name or adapter)
