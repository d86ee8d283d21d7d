"""One form for the figures a benchmark measured, so `bench/run.py` can write them into BENCHMARKS.md.

A script prints its figures as prose for a reader, and, for each table BENCHMARKS.md keeps between
markers, one line ``BENCH-FIGURES {json}`` with the raw measurements of every row. The table is
rendered from those values only (min, median, max and n), so no figure in a marked block was typed.
"""

from __future__ import annotations

import json
import os

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
