"""The test suite's wall time as the README's test command runs it (`bash scripts/test.sh`).

    python bench/bench_tests.py            # the whole suite, once (minutes)
    python bench/bench_tests.py --quick    # one small test file through the same command (CI: tests/test_benchmarks.py)

Runs `bash scripts/test.sh` (install check, then pytest with the options pyproject.toml sets, three
workers) in a fresh process and reads pytest's own summary line: tests passed, skipped and failed,
and its wall seconds; it prints pytest's 40 slowest test phases (where the time goes). A run with failures prints them and exits non-zero, writing no figures: a
suite that fails is not a time to quote. Goal (issue 24): under 8 minutes on 2 cores.
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("tests",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICK = ["tests/test_yaml_strict.py"]  # small, no models, no subprocesses of its own
SUMMARY = re.compile(r"^=*\s*(?P<counts>(?:\d+ \w+(?:, )?)+) in (?P<seconds>[\d.]+)s")


def summary(output: str) -> tuple[dict[str, int], float]:
    """pytest's last summary line as {outcome: count} and its seconds; ValueError when there is none."""
    for line in reversed(output.splitlines()):
        m = SUMMARY.match(line.strip())
        if m:
            counts = {word.rstrip("s") if word != "passed" else word: int(n)
                      for n, word in re.findall(r"(\d+) (\w+)", m["counts"])}
            return counts, float(m["seconds"])
    raise ValueError("no pytest summary line in the output")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {' '.join(QUICK)} (CI)")
    parser.add_argument("pytest_args", nargs="*", help="passed to scripts/test.sh (default: the whole suite)")
    args = parser.parse_args()
    extra = args.pytest_args or (QUICK if args.quick else [])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # a fresh run, not a worker of ours
    start = time.perf_counter()
    done = subprocess.run(["bash", "scripts/test.sh", "-p", "no:cacheprovider", "--durations=40", *extra], cwd=REPO,
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    try:
        counts, seconds = summary(done.stdout)
    except ValueError:
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        return 1
    print(f"bash scripts/test.sh {' '.join(extra)}: " + ", ".join(f"{n} {k}" for k, n in counts.items())
          + f" in {seconds:.0f} s (pytest), {wall:.0f} s wall with the install check")
    slowest = re.search(r"=+ slowest \d+ durations =+\n(.*?)(?:\n\n|\n=)", done.stdout, re.S)
    if slowest:
        print("slowest test phases (wall s, the workers side by side):\n" + slowest.group(1))
    if done.returncode or counts.get("failed") or counts.get("error"):
        print(done.stdout[-5000:], file=sys.stderr)
        return 1
    what = "the whole suite" if not extra else " ".join(extra)
    print(f"{what}: {counts.get('passed', 0)} passed, {counts.get('skipped', 0)} skipped; "
          f"{wall / 60:.1f} min [goal for the whole suite: < 8 min on 2 cores]")
    emit("tests", [
        row("tests passed (the whole suite; --quick: one small file)", [counts.get("passed", 0)], "tests"),
        row("tests skipped (a missing browser or model; none expected in CI)", [counts.get("skipped", 0)], "tests"),
        row("`bash scripts/test.sh`, install check included", [wall / 60], "min", "< 8 min"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
