"""Run every benchmark and rewrite the figure tables BENCHMARKS.md and README.md keep between markers.

    python bench/run.py [--quick] [--only bench_bridge bench_scoring ...] [--no-write]

Each script runs as its own process, one after another (a benchmark sharing the cores with another
would measure both). `--quick` runs each at its smallest size: what CI runs, seconds to a minute
each on 2 cores. Which scripts run, in which order, with which arguments and which blocks they
fill is what each script declares (``BENCH = Bench(...)``, bench/_figures.py): a new script is found
without editing this file. A script that prints ``BENCH-FIGURES`` lines has its rows rendered into
the block of that name:

    <!-- bench NAME: begin (...) -->
    ...
    <!-- bench NAME: end -->

A block is rewritten only from the output of the run that just happened, with the command, the
commit, the machine (cores, CPU model) and its load average before and after; a block whose script
failed or printed no figures is left as it was and named. Figures from --quick are fewer
repetitions of the same measurement (small n), and the header says so.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from _figures import cores, cpu_model, order, parse
from _figures import scripts as declared_scripts

DOCS = [REPO / "BENCHMARKS.md", REPO / "README.md"]
DEMO_DIR = Path("/tmp/dyafdb-bench-demo")  # the demo bench_demo.py keeps for bench_reuse.py; replaced each run


def scripts(quick: bool, demo_dir: Path) -> list[tuple[str, list[str]]]:
    """Every bench script with its arguments, in the order they run, from each script's ``BENCH`` declaration."""
    declared = declared_scripts(BENCH)
    return [(name, [*(["--quick"] if quick else []), *(a.replace("{demo}", str(demo_dir)) for a in declared[name].args)])
            for name in order(declared)]


HEADER = re.compile(r"^`(?P<command>python bench/\S+\.py[^`]*)` at (?P<commit>[0-9a-f]{7,40}|unknown), (?P<date>\d{4}-\d\d-\d\d): "
                    r"(?P<cores>\d+) cores? \((?P<cpu>[^)]*)\), load average (?P<before>[\d.]+) before, "
                    r"(?P<after>[\d.]+) after(?P<quick>, --quick: few repetitions)?$")
TABLE_HEAD = ["| what | min | median | max | n | unit | target |", "|---|---|---|---|---|---|---|"]


def begin_marker(name: str) -> str:
    return f"<!-- bench {name}: begin (bench/run.py writes this block from a run; tests/test_benchmarks.py checks it) -->"


def end_marker(name: str) -> str:
    return f"<!-- bench {name}: end -->"


BLOCK = re.compile(r"<!-- bench (?P<name>[\w-]+): begin [^\n]*-->\n(?P<body>.*?)<!-- bench (?P=name): end -->", re.DOTALL)


def number(v: float, whole: bool = False) -> str:
    """Three significant figures, thousands separated: the spread of a run is wider than that.
    ``whole``: every value of the row is a whole number (a count), written without decimals."""
    a = abs(v)
    if whole or a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def render(name: str, rows: list[dict], machine: dict) -> str:
    """The block's text between its markers, markers included."""
    head = (f"`{machine['command']}` at {machine['commit']}, {machine['date']}: {machine['cores']} "
            f"{'core' if machine['cores'] == 1 else 'cores'} ({machine['cpu']}), load average {machine['before']:.2f} "
            f"before, {machine['after']:.2f} after{', --quick: few repetitions' if machine['quick'] else ''}")
    lines = [begin_marker(name), head, *TABLE_HEAD]
    for r in rows:
        v = r["values"]
        whole = all(float(x).is_integer() for x in v) and float(statistics.median(v)).is_integer()
        cells = [r["what"], *(number(x, whole) for x in (min(v), statistics.median(v), max(v))), str(len(v)), r["unit"],
                 r["target"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines + [end_marker(name)])


def blocks(text: str) -> dict[str, str]:
    """Every marked block of a document by name, markers included."""
    return {m["name"]: m.group(0) for m in BLOCK.finditer(text)}


def parse_block(block: str) -> tuple[dict, list[dict]]:
    """A block's header fields and rows (numbers as written); ValueError when it is not what render() writes."""
    lines = block.splitlines()
    m = BLOCK.fullmatch(block)
    if not m or len(lines) < 5:
        raise ValueError("not a marked block")
    head = HEADER.match(lines[1])
    if not head:
        raise ValueError(f"header line is not the machine line bench/run.py writes: {lines[1]!r}")
    if lines[2:4] != TABLE_HEAD:
        raise ValueError(f"table head differs: {lines[2:4]}")
    rows = []
    for line in lines[4:-1]:
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 7:
            raise ValueError(f"row has {len(cells)} cells, not 7: {line!r}")
        what, lo, med, hi, n, unit, target = cells
        values = [float(x.replace(",", "")) for x in (lo, med, hi)]
        if not values[0] <= values[1] <= values[2] or int(n) < 1:
            raise ValueError(f"min <= median <= max and n >= 1 do not hold: {line!r}")
        rows.append({"what": what, "min": values[0], "median": values[1], "max": values[2], "n": int(n),
                     "unit": unit, "target": target})
    if not rows:
        raise ValueError("no rows")
    return head.groupdict(), rows


def replace_block(text: str, name: str, new: str) -> str:
    found = [m for m in BLOCK.finditer(text) if m["name"] == name]
    if len(found) != 1:
        raise ValueError(f"{len(found)} blocks named {name}")
    return text[:found[0].start()] + new + text[found[0].end():]


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every script at its smallest size")
    parser.add_argument("--only", nargs="*", help="these scripts (names without .py)")
    parser.add_argument("--no-write", action="store_true", help="print the blocks, edit no file")
    parser.add_argument("--demo-dir", type=Path, default=DEMO_DIR)
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_TORCH_COMPILE": "1"}
    docs = {p: p.read_text(encoding="utf-8") for p in DOCS}
    marked = {name for text in docs.values() for name in blocks(text)}
    failed, written, measured = [], [], {}
    for name, argv in scripts(args.quick, args.demo_dir):
        if args.only and name not in args.only:
            continue
        command = " ".join(["python", f"bench/{name}.py", *[a if a != str(args.demo_dir) else "DIR" for a in argv]])
        print(f"== {command}", flush=True)
        before = os.getloadavg()[0]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *argv], cwd=REPO, env=env,
                              capture_output=True, text=True)
        after = os.getloadavg()[0]
        sys.stdout.write(done.stdout)
        print(f"   ({time.perf_counter() - start:.1f} s, exit {done.returncode})", flush=True)
        if done.returncode:
            sys.stderr.write(done.stderr[-3000:])
            failed.append(name)
            continue
        machine = {"command": command, "commit": commit(), "date": datetime.date.today().isoformat(),
                   "cores": cores(), "cpu": cpu_model().replace("(", "[").replace(")", "]"),
                   "before": before, "after": after, "quick": args.quick}
        for block, rows in parse(done.stdout).items():
            measured[block] = render(block, rows, machine)
    for path in docs:
        # read again: the scripts ran for minutes, and a document edited meanwhile keeps those edits
        text = path.read_text(encoding="utf-8")
        new = text
        for name, block in measured.items():
            if name in blocks(new):
                new = replace_block(new, name, block)
                written.append(f"{path.name}: {name}")
        if new != text and not args.no_write:
            path.write_text(new, encoding="utf-8")
    for name, block in measured.items():
        if name not in marked or args.no_write:
            print(f"\n{block}\n")
    print(f"rewritten: {', '.join(written) or 'none'}" + (" (--no-write: not saved)" if args.no_write else ""))
    missing = sorted(marked - set(measured))
    if missing and not args.only:
        print(f"marked but not measured in this run: {', '.join(missing)}")
    unmarked = sorted(set(measured) - marked)
    if unmarked:
        print(f"measured but marked in no document (add its markers to BENCHMARKS.md): {', '.join(unmarked)}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
