"""The bridge's own cost per tick (two null agents, in and out of process).

    python bench/bench_bridge.py [--ticks 3000]
    python bench/bench_bridge.py --quick                  # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)

Targets (issue 2): < 100 us per tick in process, < 1 ms out of process. The full suite's planning
time is bench/bench_dryrun.py.
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("bridge",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import statistics
from pathlib import Path

from dyafdb.agents.base import Session
from dyafdb.agents.null import NullAgent
from dyafdb.agents.remote import RemoteAgent
from dyafdb.record.bridge import run_bridge




def sessions(ticks: int) -> dict[str, Session]:
    return {s: Session("bench", s, "prompt", s, 1, s == "a", ticks) for s in "ab"}


def per_tick(agents: dict, ticks: int) -> float:
    res = run_bridge(agents, sessions(ticks), ticks, 19, "a")
    return res.wall_time_s / ticks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=None, help="ticks per run (default 3000; 300 with --quick)")
    parser.add_argument("--runs", type=int, default=None, help="runs of each setup (default 5; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="the smallest size that still times every setup (CI)")
    args = parser.parse_args()
    ticks = args.ticks or (300 if args.quick else 3000)
    runs = args.runs or (3 if args.quick else 5)

    def inline():
        return {"a": NullAgent({}), "b": NullAgent({})}

    def threaded():
        agent = NullAgent({})
        agent.concurrent_step = True  # what a real in-process model pays: one thread handoff per tick
        return {"a": agent, "b": NullAgent({})}

    def remote_cost() -> float:
        remote = {s: RemoteAgent(f"null-{s}", "null") for s in "ab"}
        try:
            return per_tick(remote, ticks)
        finally:
            for agent in remote.values():
                agent.shutdown()

    inline_us = [per_tick(inline(), ticks) * 1e6 for _ in range(runs)]
    threaded_us = [per_tick(threaded(), ticks) * 1e6 for _ in range(runs)]
    remote_us = [remote_cost() * 1e6 for _ in range(runs)]
    print(f"bridge, two null agents in process:     {statistics.median(inline_us):8.1f} us/tick (median of {runs} runs of {ticks} ticks)")
    print(f"  ... with side a stepped on its thread: {statistics.median(threaded_us):8.1f} us/tick")
    print(f"bridge, two null agents out of process: {statistics.median(remote_us):8.1f} us/tick  "
          f"({statistics.median(remote_us) * 750 / 1e6:.3f} s of overhead per 60 s run)")
    emit("bridge", [
        row("two null agents in process, both stepped inline", inline_us, "us/tick", "< 100 us"),
        row("... side a stepped on its own thread, as a real in-process model is", threaded_us, "us/tick", "< 100 us"),
        row("two null agents out of process (`python -m dyafdb.agents.worker`, pipes)", remote_us, "us/tick", "< 1 ms"),
    ])


if __name__ == "__main__":
    main()
