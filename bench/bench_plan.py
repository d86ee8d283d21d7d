"""Wall time of the run-planning commands on the paper's suite (config/config.yaml, 7,560 conversations):
`dyafdb plan`, `dyafdb plan --check`, `dyafdb status` and `dyafdb summary` (over an empty results
folder, so every file lookup misses, as at the start of a run).

    python bench/bench_plan.py [--repeat 3]

Prints the median and range of each, in seconds, each run a fresh process as a user would start it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, capture_output=True, text=True)  # --check exits 1 without keys or weights
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        empty = json.dumps({"results_dir": str(Path(scratch) / "results")})
        dyafdb = [sys.executable, "-m", "dyafdb"]
        commands = {
            "dyafdb plan": dyafdb + ["plan", "--benchmarks", str(Path(scratch) / "none")],
            "dyafdb plan --check": dyafdb + ["plan", "--check", "--override-json", empty],
            "dyafdb status": dyafdb + ["status", "--override-json", empty],
            "dyafdb summary": dyafdb + ["summary", "--quiet", "--override-json", empty],
        }
        for name, argv in commands.items():
            times = [timed(argv) for _ in range(args.repeat)]
            print(f"{name:24s} median {statistics.median(times):5.2f} s  (min {min(times):.2f}, max {max(times):.2f}, "
                  f"{args.repeat} runs, 7,560 conversations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
