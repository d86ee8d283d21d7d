"""The bridge's own cost per tick (two null agents, in and out of process) and the full suite's dry-run time.

    python bench/bench_bridge.py [--ticks 3000] [--skip-dry-run]

Targets (issue 2): < 100 us per tick in process, < 1 ms out of process, full-suite dry-run < 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from dyafdb.agents.base import Session
from dyafdb.agents.null import NullAgent
from dyafdb.agents.remote import RemoteAgent
from dyafdb.bridge import run_bridge
from dyafdb.synthetic import write_suite

REPO = Path(__file__).resolve().parent.parent


def sessions(ticks: int) -> dict[str, Session]:
    return {s: Session("bench", s, "prompt", s, 1, s == "a", ticks) for s in "ab"}


def per_tick(agents: dict, ticks: int) -> float:
    res = run_bridge(agents, sessions(ticks), ticks, 19, "a")
    return res.wall_time_s / ticks


def dry_run_seconds(root: Path, enable_optional: bool) -> tuple[float, int]:
    scenarios = REPO / "scenarios"
    have_real = all(len(list((scenarios / a).glob("*.yaml"))) >= 20 for a in ("T1-1", "T2", "T4-2", "T4-3", "T4-4"))
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if have_real:
        cfg["scenarios_dir"] = str(scenarios)
    else:
        write_suite(root, per_archetype=20)
        cfg["scenarios_dir"] = str(root / "scenarios")
    for name in ("game_balance", "window_30", "window_120"):
        cfg["suites"][name]["enabled"] = enable_optional
    path = root / ("cfg-all.yaml" if enable_optional else "cfg-main.yaml")
    path.write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(root),
                          "--configfile", str(path), "-n", "--quiet", "rules", "--cores", "2"],
                         capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - t0
    total = next((int(line.split()[1]) for line in out.stdout.splitlines() if line.startswith("total")), -1)
    return elapsed, total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=3000)
    parser.add_argument("--skip-dry-run", action="store_true")
    args = parser.parse_args()

    print(f"bridge, two null agents in process:     {per_tick({'a': NullAgent({}), 'b': NullAgent({})}, args.ticks) * 1e6:8.1f} us/tick")
    threaded = NullAgent({})
    threaded.concurrent_step = True  # what a real in-process model pays: one thread handoff per tick
    print(f"  ... with side a stepped on its thread: {per_tick({'a': threaded, 'b': NullAgent({})}, args.ticks) * 1e6:8.1f} us/tick")
    remote = {s: RemoteAgent(f"null-{s}", "null") for s in "ab"}
    try:
        cost = per_tick(remote, args.ticks)
    finally:
        for agent in remote.values():
            agent.shutdown()
    print(f"bridge, two null agents out of process: {cost * 1e6:8.1f} us/tick  ({cost * 750:.3f} s of overhead per 60 s run)")
    if args.skip_dry_run:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for optional in (False, True):
            seconds, jobs = dry_run_seconds(Path(tmp), optional)
            label = "main + game balance + 30/120 s windows" if optional else "main suite"
            print(f"dry-run, {label}: {seconds:6.1f} s for {jobs} jobs ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
