"""Adapters: each class says its name where it is defined (``@adapter("raon")``); this module finds them.

The registry is found by reading the adapter modules' source, not by importing them: a worker
imports only its own model's stack (torch, transformers, websockets ...), and validating a config
must not need any of them. So the config schema's adapter names, the CLI and the error messages
all come from the ``@adapter`` lines, and a new adapter is its module plus a config entry.
"""

from __future__ import annotations

import ast
import importlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, TypeVar

from dyafdb.agents.base import Agent
from dyafdb.errors import InputError

T = TypeVar("T")
PACKAGE = "dyafdb.agents"


def adapter(name: str) -> Callable[[T], T]:
    """Register the decorated class as built-in adapter ``name`` (``adapter: name`` in config)."""

    def mark(cls: T) -> T:
        cls.adapter_name = name  # type: ignore[attr-defined]
        return cls

    return mark


def _declared(path: Path) -> list[tuple[str, str]]:
    """(adapter name, class name) for each ``@adapter("...")`` class in one source file."""
    text = path.read_text(encoding="utf-8")
    if "@adapter(" not in text:  # most modules: skip the parse
        return []
    found = []
    for node in ast.parse(text, str(path)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for dec in node.decorator_list:
            if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "adapter"
                    and dec.args and isinstance(dec.args[0], ast.Constant) and isinstance(dec.args[0].value, str)):
                found.append((dec.args[0].value, node.name))
    return found


@lru_cache(maxsize=1)
def adapters() -> dict[str, str]:
    """Built-in adapter name -> ``module:Class``, in name order."""
    root = Path(__file__).parent
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join((PACKAGE, *path.relative_to(root).with_suffix("").parts))
        for name, cls in _declared(path):
            if name in out:
                raise RuntimeError(f"adapter {name!r} is declared twice: {out[name]} and {module}:{cls}")
            out[name] = f"{module}:{cls}"
    return dict(sorted(out.items()))


def adapter_names() -> list[str]:
    return list(adapters())


def make_agent(adapter: str, params: dict[str, Any] | None = None, model_name: str = "") -> Agent:
    """Build an agent; each class takes ``(params, model_name)`` and loads its model in ``__init__``."""
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
    return cls(params or {}, model_name or adapter)
