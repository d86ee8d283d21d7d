"""Finding ``@name("x")`` class declarations in a package's source without importing it.

Registries whose members pull in heavy stacks (an adapter imports torch, transformers or a
websocket client) are found by reading their modules' source: validating a config or building the
CLI must not import any model. A shared leaf, so the config validator and the stage that owns a
registry read the same declarations.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path


def _declared(path: Path, decorator: str) -> list[tuple[str, str]]:
    """(declared name, class name) for each ``@decorator("...")`` class in one source file."""
    text = path.read_text(encoding="utf-8")
    if f"@{decorator}(" not in text:  # most modules: skip the parse
        return []
    found = []
    for node in ast.parse(text, str(path)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for dec in node.decorator_list:
            if (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == decorator
                    and dec.args and isinstance(dec.args[0], ast.Constant) and isinstance(dec.args[0].value, str)):
                found.append((dec.args[0].value, node.name))
    return found


@lru_cache(maxsize=None)
def declared_classes(package: str, decorator: str) -> dict[str, str]:
    """Declared name -> ``module:Class`` for every ``@decorator("name")`` class under ``package``, in name order."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(package)
    root = Path(next(iter(spec.submodule_search_locations)))
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join((package, *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        for name, cls in _declared(path, decorator):
            if name in out:
                raise RuntimeError(f"@{decorator}({name!r}) is declared twice: {out[name]} and {module}:{cls}")
            out[name] = f"{module}:{cls}"
    return dict(sorted(out.items()))
