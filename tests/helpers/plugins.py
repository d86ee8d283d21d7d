"""A throw-away installed distribution for the declaration tests: a module and a ``.dist-info``
folder with its entry points, on ``sys.path``, as ``pip install`` of a lab's own package leaves them.
The registries (dyafdb.declarations) read it as they read the package's own declarations."""

from __future__ import annotations

import sys
from pathlib import Path

from dyafdb import declarations


def install(root: Path, monkeypatch, name: str, modules: dict[str, str], entry_points: dict[str, dict[str, str]]) -> Path:
    """Write ``modules`` (module name -> source) and ``<name>-0.1.dist-info`` declaring ``entry_points``
    (group -> {entry name: value}) under ``root``, put ``root`` on sys.path and forget what the
    registries had read (the monkeypatch puts sys.path back; call :func:`forget` after the test)."""
    root.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source, encoding="utf-8")
        monkeypatch.delitem(sys.modules, module, raising=False)  # another test's module of that name
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) + "\n"
                for group, entries in entry_points.items()), encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    declarations.clear()
    return root


def forget() -> None:
    declarations.clear()
