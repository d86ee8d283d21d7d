"""Wall time of the run-planning commands on the paper's suite (config/config.yaml, 7,560 conversations):
`dyafdb plan`, `dyafdb plan --check`, `dyafdb status` and `dyafdb summary` (over an empty results
folder, so every file lookup misses, as at the start of a run).

    python bench/bench_plan.py [--repeat 3]
    python bench/bench_plan.py --quick                    # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/bench_plan.py --baseline /tmp/base --repeat 3   # paired: an older checkout's sources vs this tree's

Prints the median and range of each, in seconds, each run a fresh process as a user would start it.
With --baseline (e.g. `git worktree add --detach /tmp/base <commit>`), the old tree's package (on
PYTHONPATH) and this tree's run alternately and the ratio of medians is printed, wall and CPU: on a
shared machine the load drifts, a paired ratio does not.
"""

from __future__ import annotations

from _figures import Bench  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("plan",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import emit, row  # noqa: E402


def timed(argv: list[str], src: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process (the package from ``src`` when given)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)  # --check exits 1 without keys or weights
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=None, help="runs of each command (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="one run of each command (CI)")
    parser.add_argument("--baseline", type=Path, help="an older checkout whose src/ runs alternately with this tree's")
    args = parser.parse_args()
    args.repeat = args.repeat or (1 if args.quick else 3)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        empty = json.dumps({"results_dir": str(Path(scratch) / "results")})
        dyafdb = [sys.executable, "-m", "dyafdb"]
        commands = {
            "dyafdb plan": dyafdb + ["plan", "--benchmarks", str(Path(scratch) / "none")],
            "dyafdb plan --check": dyafdb + ["plan", "--check", "--override-json", empty],
            "dyafdb status": dyafdb + ["status", "--override-json", empty],
            "dyafdb summary": dyafdb + ["summary", "--quiet", "--override-json", empty],
        }
        trees = {"this tree": REPO / "src"}
        if args.baseline:
            trees = {"baseline": args.baseline.resolve() / "src", **trees}
        for name, argv in commands.items():
            runs: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
            for _ in range(args.repeat):
                for tree, src in trees.items():
                    runs[tree].append(timed(argv, src))
            for tree, got in runs.items():
                walls, cpus = [w for w, _ in got], [c for _, c in got]
                if tree == "this tree":
                    rows.append(row(f"`{name}`", walls, "s wall"))
                print(f"{name:24s} {tree:9s} median {statistics.median(walls):5.2f} s (min {min(walls):.2f}, max "
                      f"{max(walls):.2f}), CPU median {statistics.median(cpus):5.2f} s; {args.repeat} runs, 7,560 conversations")
            if args.baseline:
                med = {t: (statistics.median(w for w, _ in g), statistics.median(c for _, c in g)) for t, g in runs.items()}
                print(f"{name:24s} ratio this/baseline: wall {med['this tree'][0] / med['baseline'][0]:.2f}, "
                      f"CPU {med['this tree'][1] / med['baseline'][1]:.2f}")
    emit("plan", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
