"""One registry mechanism: things say their name where they are defined, this module finds them.

Adapters, engines, judge questions, turn-taking metrics, analysis tables and figures each carry a
decorator with their name and literal fields (``@adapter("raon")``, ``@question("final_choice")``,
``@metric("tor_pause", label="TOR_pause", ...)``, ``@table("runs", ...)``), made by :func:`decorator`.
Everything that lists them (the registries, CLI choices, schema enums, the rules, help texts) comes
from :func:`declared`, which reads them from two places:

* the source of the package that owns the kind (``PACKAGES``), without importing it: validating a
  config or building the CLI must not load torch, transformers, pandas or matplotlib. So a
  decorator's arguments are literals;
* Python entry points in group ``dyafdb.<kind>s`` (``dyafdb.adapters``, ``dyafdb.metrics`` ...), so
  a lab's own installed package registers its adapter without editing this repository. An entry
  point ``name = module:Object`` declares ``Object`` as ``name`` (fields empty); ``name = module``
  has that module's source read for the kind's decorator, like the package's own.

A shared leaf: the config validator and the stage that owns a registry read the same declarations.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Callable, TypeVar

from dyafdb.errors import InputError

T = TypeVar("T")

# The package whose source declares each kind (its decorator has the kind's name).
PACKAGES = {
    "adapter": "dyafdb.agents", "engine": "dyafdb.agents", "metric": "dyafdb.score", "question": "dyafdb.judge",
    "table": "dyafdb.analysis", "figure": "dyafdb.analysis",
}
# Further (module prefix, folder) sources per kind, read after the package's own; a test adds its folder.
SOURCES: dict[str, list[tuple[str, Path]]] = {kind: [] for kind in PACKAGES}


@dataclass(frozen=True)
class Declaration:
    """One ``@<kind>("name", **fields)`` on a class or function ``target`` of ``module``."""

    kind: str
    name: str
    module: str
    target: str
    fields: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # file:line, for messages

    @property
    def path(self) -> str:
        """``module:Object``, as a config names its own class."""
        return f"{self.module}:{self.target}"

    def resolve(self) -> Any:
        """The declared object itself (imports its module)."""
        return getattr(importlib.import_module(self.module), self.target)


def decorator(kind: str, attribute: str | None = None) -> Callable[..., Callable[[T], T]]:
    """The decorator of one kind: ``@<kind>("name", **literal_fields)``. At run time it only marks the
    object (``<attribute>`` = the name); what it declares is read from the source by :func:`declared`."""
    attribute = attribute or f"{kind}_name"

    def declare(name: str, **fields: Any) -> Callable[[T], T]:
        def mark(obj: T) -> T:
            setattr(obj, attribute, name)
            return obj

        return mark

    declare.__name__ = kind
    declare.__doc__ = f"Declare the decorated object as {kind} ``name`` (found by dyafdb.declarations.declared)."
    return declare


def _literal(node: ast.AST, where: str) -> Any:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        raise RuntimeError(f"{where}: a declaration's arguments must be literals (name a list instead of "
                           "computing it)") from None
    return tuple(value) if isinstance(value, list) else value


_DEFINITION = re.compile(r"^(?:async +)?(def|class) +(\w+)", re.M)


def scan_file(path: Path, module: str, kind: str) -> list[Declaration]:
    """Every top-level ``@<kind>("name", ...)`` in one source file, in source order.

    Only the decorator lines above each ``def``/``class`` are parsed, not the whole module: the CLI
    reads the declarations every time it starts. Stacked decorators keep their written order."""
    text = path.read_text(encoding="utf-8")
    if f"@{kind}(" not in text:  # most modules: skip
        return []
    found = []
    start = re.compile(rf"^@{kind}\(", re.M)
    pos = 0
    while (m := start.search(text, pos)) is not None:
        d = _DEFINITION.search(text, m.start())
        if d is None:
            break
        # the block of decorators (and comments) down to the definition, parsed on its own
        snippet = text[m.start():d.start()] + ("def f(): pass\n" if d.group(1) == "def" else "class C: pass\n")
        lineno = text.count("\n", 0, m.start()) + 1
        try:
            node = ast.parse(snippet).body[0]
        except SyntaxError as exc:
            raise RuntimeError(f"{path}:{lineno}: cannot read the @{kind} declaration ({exc.msg})") from None
        for dec in node.decorator_list:  # type: ignore[attr-defined]
            if not (isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == kind and dec.args):
                continue
            where = f"{path}:{lineno + dec.lineno - 1}"
            name = _literal(dec.args[0], where)
            if not isinstance(name, str):
                raise RuntimeError(f"{where}: @{kind}'s first argument must be its name, a string")
            fields = {k.arg: _literal(k.value, where) for k in dec.keywords if k.arg}
            found.append(Declaration(kind, name, module, d.group(2), fields, where))
        pos = d.end()
    return found


def scan_folder(prefix: str, folder: Path, kind: str) -> list[Declaration]:
    """:func:`scan_file` over every module under ``folder`` (module names start with ``prefix``)."""
    out: list[Declaration] = []
    for path in sorted(Path(folder).rglob("*.py")):
        module = ".".join((prefix, *path.relative_to(folder).with_suffix("").parts)).removesuffix(".__init__")
        out += scan_file(path, module, kind)
    return out


def module_source(module: str) -> tuple[str, Path]:
    """(prefix, folder or file) of a module's source, found without importing the module itself."""
    spec = find_spec(module)
    if spec is None:
        raise ModuleNotFoundError(module)
    if spec.submodule_search_locations:
        return module, Path(next(iter(spec.submodule_search_locations)))
    if not spec.origin or not spec.origin.endswith(".py"):
        raise ModuleNotFoundError(f"{module} has no Python source to read declarations from")
    return module, Path(spec.origin)


def _scan_source(prefix: str, location: Path, kind: str) -> list[Declaration]:
    return scan_folder(prefix, location, kind) if location.is_dir() else scan_file(location, prefix, kind)


def group(kind: str) -> str:
    """The entry-point group an installed package declares this kind in (``dyafdb.adapters``)."""
    return f"dyafdb.{kind}s"


def _from_entry_points(kind: str) -> list[Declaration]:
    out: list[Declaration] = []
    for ep in sorted(entry_points(group=group(kind)), key=lambda e: e.name):
        where = f"entry point {ep.name} = {ep.value} (group {group(kind)}, package {getattr(ep.dist, 'name', '?')})"
        module, _, target = ep.value.partition(":")
        if target:
            out.append(Declaration(kind, ep.name, module.strip(), target.strip(), {}, where))
            continue
        try:
            out += _scan_source(*module_source(module.strip()), kind)
        except ModuleNotFoundError as exc:
            raise InputError(f"{where}: cannot find module {module.strip()!r} ({exc}); fix that package's "
                             "entry point or uninstall it") from None
    return out


@lru_cache(maxsize=None)
def declared(kind: str) -> dict[str, Declaration]:
    """Every declaration of ``kind``, name -> Declaration: the owning package's in source order (files
    by path), then ``SOURCES``, then the entry points'. A name declared twice is an error naming both."""
    found = _scan_source(*module_source(PACKAGES[kind]), kind)
    for prefix, folder in SOURCES[kind]:
        found += _scan_source(prefix, Path(folder), kind)
    found += _from_entry_points(kind)
    out: dict[str, Declaration] = {}
    for d in found:
        if d.name in out:
            raise InputError(f"@{kind}({d.name!r}) is declared twice: {out[d.name].where} ({out[d.name].path}) "
                             f"and {d.where} ({d.path}); rename one")
        out[d.name] = d
    return out


def names(kind: str) -> list[str]:
    """The declared names of a kind, in declaration order (schema enums, CLI choices)."""
    return list(declared(kind))


def declared_classes(package: str, kind: str) -> dict[str, str]:
    """Declared name -> ``module:Class`` of a kind, in name order (the adapter enum of the config schema)."""
    if PACKAGES.get(kind) != package:
        raise ValueError(f"{kind} is declared in {PACKAGES.get(kind)}, not {package}")
    return {name: d.path for name, d in sorted(declared(kind).items())}


F = TypeVar("F", bound=Callable[..., Any])
_DERIVED: list[Any] = []


def derived(fn: F) -> F:
    """Cache what a registry derives from the declarations (the metrics resolved, the lists a page
    reads per value) until :func:`clear`: computed once per run, not once per use."""
    cached = lru_cache(maxsize=None)(fn)
    _DERIVED.append(cached)
    return cached  # type: ignore[return-value]


def clear() -> None:
    """Forget what was read and derived (a test that adds a source or an entry point calls this)."""
    declared.cache_clear()
    for cached in _DERIVED:
        cached.cache_clear()
