"""One form for the figures a benchmark measured, so `bench/run.py` can write them into BENCHMARKS.md.

A script prints its figures as prose for a reader, and, for each table BENCHMARKS.md keeps between
markers, one line ``BENCH-FIGURES {json}`` with the raw measurements of every row. The table is
rendered from those values only (min, median, max and n), so no figure in a marked block was typed.

Each script also declares, once, at module level, what `bench/run.py` and tests/test_benchmarks.py
need to know about it (``BENCH = Bench(...)``, literal values only: both read it from the source
without importing the script, whose imports are heavy). A new script with its declaration, and its
block's markers in a document, is all a new figure table takes: run.py is not edited.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, fields
from pathlib import Path

DECLARATION = "BENCH"


@dataclass(frozen=True)
class Bench:
    """What a bench script fills and how run.py runs it.

    blocks: the marked blocks it prints rows for (``emit``), each in its quick and its full run.
    args: its arguments besides ``--quick``; ``{demo}`` stands for the demo folder run.py keeps for
        the run (bench_demo.py writes it, bench_reuse.py reads it).
    after: scripts that must run before it (those that fill ``{demo}``).
    slow: it loads the CPU agent's, Whisper's or DNSMOS's models (tests mark it slow).
    """

    blocks: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    slow: bool = False


def declaration(script: Path) -> Bench:
    """A script's ``BENCH = Bench(...)``, read from its source; ValueError naming the file when it has none."""
    tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [DECLARATION]
                and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "Bench"):
            if node.value.args:
                raise ValueError(f"{script.name}: {DECLARATION} = Bench(...) takes keywords only")
            known = {f.name for f in fields(Bench)}
            kw = {}
            for k in node.value.keywords:
                if k.arg not in known:
                    raise ValueError(f"{script.name}: Bench has no field {k.arg!r} (fields: {', '.join(sorted(known))})")
                value = ast.literal_eval(k.value)
                kw[k.arg] = tuple(value) if isinstance(value, (list, tuple)) else value
            return Bench(**kw)
    raise ValueError(f"{script.name}: no `{DECLARATION} = Bench(...)` at module level "
                     "(bench/_figures.py: every bench script declares its blocks)")


def scripts(bench_dir: Path) -> dict[str, Bench]:
    """Every bench script by name (bench_*.py and the other runnable scripts; not _helpers nor run.py)."""
    return {p.stem: declaration(p) for p in sorted(bench_dir.glob("*.py"))
            if not p.stem.startswith("_") and p.stem != "run"}


def order(declared: dict[str, Bench]) -> list[str]:
    """The scripts in the order they run: by name, each after the scripts it names in ``after``."""
    done: list[str] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in seen:
            raise ValueError(f"bench scripts wait on each other: {' -> '.join((*seen, name))}")
        for first in declared[name].after:
            if first not in declared:
                raise ValueError(f"{name}.py runs after {first}.py, which is not in bench/")
            visit(first, (*seen, name))
        done.append(name)

    for name in sorted(declared, key=lambda n: (bool(declared[n].after), n)):
        visit(name, ())
    return done

PREFIX = "BENCH-FIGURES "


def row(what: str, values: list[float], unit: str, target: str = "") -> dict:
    """One table row: what was measured, every measurement of it, its unit and the goal it is held to."""
    return {"what": what, "values": [float(v) for v in values], "unit": unit, "target": target}


def emit(block: str, rows: list[dict]) -> None:
    """Print one marked block's rows (flushed, so a later crash in the script keeps them)."""
    print(PREFIX + json.dumps({"block": block, "rows": rows}), flush=True)


def parse(stdout: str) -> dict[str, list[dict]]:
    """The blocks a script's output carries, by name (a later line for the same block wins)."""
    blocks: dict[str, list[dict]] = {}
    for line in stdout.splitlines():
        if line.startswith(PREFIX):
            doc = json.loads(line[len(PREFIX):])
            blocks[doc["block"]] = doc["rows"]
    return blocks


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
