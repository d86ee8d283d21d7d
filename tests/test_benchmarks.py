"""The benchmarks run, and the figure tables they write into the docs are what they print.

Every bench/*.py runs at its smallest size (``--quick``), so a script that no longer runs against the
tree (a renamed command, a moved helper) fails here rather than in a reader's hands. Each script
declares the blocks it fills (``BENCH = Bench(...)``, bench/_figures.py); it must print exactly those,
each marked once in the docs, with the same rows (what, unit, target) the block shows: the numbers
are measured and differ run to run, what is measured must not. Every marked block belongs to a script.
The scripts that declare ``slow`` (the CPU agent's, Whisper's or DNSMOS's models) are marked slow;
CI runs them too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from run_once import built_once

BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))
import run as bench_run
from _figures import Bench, declaration, order, parse
from _figures import scripts as declared_scripts

DECLARED = declared_scripts(BENCH)
SCRIPTS = sorted(DECLARED)
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_TORCH_COMPILE": "1"}


def _marked() -> dict[str, tuple[Path, str]]:
    """Every marked block by name; a block the README repeats from BENCHMARKS.md must be the same text."""
    found: dict[str, tuple[Path, str]] = {}
    for doc in bench_run.DOCS:
        text = doc.read_text(encoding="utf-8")
        for name, block in bench_run.blocks(text).items():
            assert text.count(bench_run.begin_marker(name)) == 1, f"{doc.name} marks block {name} twice"
            if name in found:
                assert block == found[name][1], (f"block {name} differs between {found[name][0].name} and {doc.name}: "
                                                 "run `python bench/run.py --quick` to rewrite both")
            else:
                found[name] = (doc, block)
    return found


def _quick(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / f"{name}.py"), "--quick", *args], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory) -> tuple[Path, str]:
    """One demo conversation recorded and scored, the folder bench_reuse.py reads, and what bench_demo.py
    printed. Session-scoped and built once for all workers, behind a lock in their common temporary
    folder: a module-scoped fixture would keep this file's scripts on one worker (tests/conftest.py),
    a minute and a half of them in a row."""
    def build(folder: Path) -> None:
        done = _quick("bench_demo", *(a.replace("{demo}", str(folder / "demo")) for a in DECLARED["bench_demo"].args))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        (folder / "stdout.txt").write_text(done.stdout, encoding="utf-8")

    shared = built_once(tmp_path_factory, "quick-demo", build)
    folder, printed = shared / "demo", shared / "stdout.txt"
    return folder, printed.read_text(encoding="utf-8")


def _check_printed(name: str, stdout: str) -> None:
    """The blocks a script printed are the ones it declares, each marked in the docs with the rows it printed."""
    printed = parse(stdout)
    assert set(printed) == set(DECLARED[name].blocks), (
        f"bench/{name}.py declares blocks {sorted(DECLARED[name].blocks)} but printed {sorted(printed)}")
    marked = _marked()
    for block, rows in printed.items():
        assert block in marked, f"bench/{name}.py prints block {block}, which no document marks"
        doc, text = marked[block]
        header, shown = bench_run.parse_block(text)
        assert header["command"].split()[1] == f"bench/{name}.py", f"{doc.name} block {block} names another script"
        assert [(r["what"], r["unit"], r["target"]) for r in shown] == [(r["what"], r["unit"], r["target"]) for r in rows], (
            f"{doc.name} block {block} shows other rows than `python bench/{name}.py --quick` prints: "
            "run `python bench/run.py --quick` to rewrite it")
        assert all(r["values"] for r in rows)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if DECLARED[n].slow else n for n in SCRIPTS])
def test_every_benchmark_runs_at_its_smallest_size(name, request):
    if name == "bench_demo":  # the fixture runs it, with the folder bench_reuse reads
        _check_printed(name, request.getfixturevalue("quick_demo")[1])
        return
    demo = str(request.getfixturevalue("quick_demo")[0]) if any("{demo}" in a for a in DECLARED[name].args) else ""
    done = _quick(name, *(a.replace("{demo}", demo) for a in DECLARED[name].args))
    assert done.returncode == 0, f"python bench/{name}.py --quick failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    _check_printed(name, done.stdout)


def test_every_marked_block_has_the_shape_run_writes_and_a_script_that_fills_it():
    marked = _marked()
    assert {"bridge", "scoring", "plan"} <= set(marked)  # the blocks BENCHMARKS.md carries today
    owners: dict[str, str] = {}
    for script, bench in DECLARED.items():
        for block in bench.blocks:
            assert block not in owners, f"block {block} is declared by {owners[block]}.py and {script}.py"
            owners[block] = script
    assert set(owners) <= set(marked), f"declared but marked in no document: {sorted(set(owners) - set(marked))}"
    for name, (doc, block) in marked.items():
        header, rows = bench_run.parse_block(block)  # raises on anything render() would not write
        assert name in owners, f"{doc.name} marks block {name}, which no bench script declares"
        assert header["command"].split()[1] == f"bench/{owners[name]}.py", f"{doc.name} block {name} names another script"
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


def test_run_finds_every_script_from_its_declaration_in_order(tmp_path):
    assert set(SCRIPTS) == {p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_") and p.stem != "run"}
    ran = [name for name, _ in bench_run.scripts(True, tmp_path / "demo")]
    assert sorted(ran) == SCRIPTS and ran.index("bench_demo") < ran.index("bench_reuse")
    argv = dict(bench_run.scripts(True, tmp_path / "demo"))
    assert argv["bench_reuse"] == ["--quick", str(tmp_path / "demo")] and argv["bench_bridge"] == ["--quick"]
    # a new script is found by its declaration alone; one without a declaration, or a cycle, is refused by name
    (tmp_path / "bench_new.py").write_text('from _figures import Bench\nBENCH = Bench(blocks=("new",), after=("bench_old",))\n')
    (tmp_path / "bench_old.py").write_text('from _figures import Bench\nBENCH = Bench(slow=True)\n')
    found = declared_scripts(tmp_path)
    assert found == {"bench_new": Bench(blocks=("new",), after=("bench_old",)), "bench_old": Bench(slow=True)}
    assert order(found) == ["bench_old", "bench_new"]
    (tmp_path / "bench_old.py").write_text('from _figures import Bench\nBENCH = Bench(after=["bench_new"])\n')
    with pytest.raises(ValueError, match="wait on each other"):
        order(declared_scripts(tmp_path))
    (tmp_path / "bench_bare.py").write_text("print(1)\n")
    with pytest.raises(ValueError, match="bench_bare.py: no `BENCH = Bench"):
        declaration(tmp_path / "bench_bare.py")
    (tmp_path / "bench_bare.py").write_text('BENCH = Bench(block=("x",))\n')
    with pytest.raises(ValueError, match="bench_bare.py: Bench has no field 'block'"):
        declaration(tmp_path / "bench_bare.py")
