"""The bridge's own cost per tick (two null agents, in and out of process).

    python bench/bench_bridge.py [--ticks 3000]

Targets (issue 2): < 100 us per tick in process, < 1 ms out of process. The full suite's planning
time is bench/bench_dryrun.py.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--ticks", type=int, default=3000)
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


if __name__ == "__main__":
    main()
