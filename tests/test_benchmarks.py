"""The benchmarks run, and the figure tables they write into the docs are what they print.

Every bench/*.py runs at its smallest size (``--quick``), so a script that no longer runs against the
tree (a renamed command, a moved helper) fails here rather than in a reader's hands. A script that
prints ``BENCH-FIGURES`` rows for a block the docs mark must print the same rows (what, unit, target)
the block shows: the numbers are measured and differ run to run, what is measured must not.
The scripts that load the CPU agent's, Whisper's or DNSMOS's models are marked slow; CI runs them too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))
import run as bench_run
from _figures import parse

SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_") and p.stem != "run")
SLOW = {"bench_agent", "bench_local_llm", "bench_demo", "bench_reuse", "bench_health", "bench_scoring",
        "bench_analysis"}
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_TORCH_COMPILE": "1"}


def _marked() -> dict[str, tuple[Path, str]]:
    found = {}
    for doc in bench_run.DOCS:
        for name, block in bench_run.blocks(doc.read_text(encoding="utf-8")).items():
            assert name not in found, f"block {name} is marked twice"
            found[name] = (doc, block)
    return found


def _quick(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--quick", *args], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory) -> Path:
    """One demo conversation recorded and scored, the folder bench_reuse.py reads."""
    folder = tmp_path_factory.mktemp("demo")
    done = _quick("bench_demo", "--keep", str(folder))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return folder


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in SCRIPTS])
def test_every_benchmark_runs_at_its_smallest_size(name, request):
    args = [str(request.getfixturevalue("quick_demo"))] if name == "bench_reuse" else []
    done = _quick(name, *args) if name != "bench_demo" else None
    if done is None:  # the fixture ran it
        request.getfixturevalue("quick_demo")
        return
    assert done.returncode == 0, f"python bench/{name}.py --quick failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    marked = _marked()
    for block, rows in parse(done.stdout).items():
        if block not in marked:
            continue
        doc, text = marked[block]
        header, shown = bench_run.parse_block(text)
        assert header["command"].split()[1] == f"bench/{name}.py", f"{doc.name} block {block} names another script"
        printed = [(r["what"], r["unit"], r["target"]) for r in rows]
        assert [(r["what"], r["unit"], r["target"]) for r in shown] == printed, (
            f"{doc.name} block {block} shows other rows than `python bench/{name}.py --quick` prints: "
            "run `python bench/run.py --quick` to rewrite it")
        assert all(r["values"] for r in rows)


def test_every_marked_block_has_the_shape_run_writes_and_a_script_that_fills_it():
    marked = _marked()
    assert {"bridge", "scoring", "plan"} <= set(marked)  # the blocks BENCHMARKS.md carries today
    emitted = {m for p in BENCH.glob("bench_*.py") for m in re.findall(r'emit\("([\w-]+)"', p.read_text())}
    for name, (doc, block) in marked.items():
        header, rows = bench_run.parse_block(block)  # raises on anything render() would not write
        assert name in emitted, f"{doc.name} marks block {name}, which no bench script prints"
        assert int(header["cores"]) >= 1 and header["cpu"]
        assert all(r["min"] <= r["median"] <= r["max"] for r in rows)


def test_a_block_is_rewritten_from_the_run_and_nothing_around_it_changes():
    machine = {"command": "python bench/bench_bridge.py --quick", "commit": "abc1234", "date": "2026-01-02",
               "cores": 2, "cpu": "Some CPU", "before": 0.5, "after": 1.25, "quick": True}
    old = bench_run.render("bridge", [{"what": "x", "values": [1.0], "unit": "us", "target": "< 2 us"}], machine)
    doc = f"# Title\n\nbefore\n{old}\nafter\n"
    rows = [{"what": "in process | inline", "values": [30.0, 10.0, 20.0, 12.5], "unit": "us/tick", "target": ""}]
    new = bench_run.replace_block(doc, "bridge", bench_run.render("bridge", rows, machine))
    assert new.startswith("# Title\n\nbefore\n<!-- bench bridge: begin") and new.endswith("<!-- bench bridge: end -->\nafter\n")
    header, parsed = bench_run.parse_block(bench_run.blocks(new)["bridge"])
    assert header["quick"] and header["before"] == "0.50" and header["cpu"] == "Some CPU"
    assert parsed == [{"what": "in process | inline", "min": 10.0, "median": 16.2, "max": 30.0, "n": 4,
                       "unit": "us/tick", "target": ""}]
    with pytest.raises(ValueError):  # a hand-typed figure outside the rendered shape is refused
        bench_run.parse_block(bench_run.blocks(new)["bridge"].replace("| 4 |", "| four |"))
    with pytest.raises(ValueError):
        bench_run.parse_block(bench_run.blocks(new)["bridge"].replace("| 10.0 |", "| 99.0 |"))
