"""A record job starts both sides' workers at once and waits for all (issue 19, start-up).

Each worker here is the real ``dyafdb.agents.worker`` behind a start-up delay standing for a model
load, so two sequential starts would take at least two delays; started together they take about
one. The real null workers' start-up times are printed for the record (pytest -s).
"""

from __future__ import annotations

import os
import sys
import time

import pytest

import conftest
from dyafdb.agents.base import AgentError
from dyafdb.record.conversation import AgentPool

LOAD_S = 3.0  # long beside the CPU cost of starting Python, which two starts on a busy machine share


def slow_worker(delay: float) -> list[str]:
    return [sys.executable, "-c", f"import time; time.sleep({delay}); from dyafdb.agents import worker; "
                                  "import sys; sys.exit(worker.main())"]


def config(command: list[str] | None = None, adapter: str = "null") -> dict:
    worker = {"command": command, "startup_timeout_s": 60, "step_timeout_s": 10} if command else {}
    return {"bridge": {"in_process": False},
            "models": {"m": {"adapter": adapter, "worker": {**worker, "env": {"PYTHONPATH": conftest.TEST_PATH}}},
                       "bad": {"adapter": "no-such-adapter"}}}


def timed_start(cfg: dict, keys: list[tuple[str, int]]) -> float:
    with AgentPool(cfg) as pool:
        t0 = time.perf_counter()
        agents = pool.get_all(keys)
        elapsed = time.perf_counter() - t0
        assert len({id(a) for a in agents}) == len(keys)
        assert all(a.proc.poll() is None for a in agents)
    return elapsed


def test_two_workers_start_in_about_the_time_of_one():
    cfg = config(slow_worker(LOAD_S))
    one = timed_start(cfg, [("m", 0)])
    two = timed_start(cfg, [("m", 0), ("m", 1)])
    # Sequential starts would take one + LOAD_S or more; together they add only process overhead.
    assert two < one + LOAD_S / 2, (one, two)
    null = config()
    print(f"\nnull workers: one {timed_start(null, [('m', 0)]) * 1000:.0f} ms, "
          f"two {timed_start(null, [('m', 0), ('m', 1)]) * 1000:.0f} ms")


def test_a_failed_start_raises_and_leaves_no_worker_behind():
    cfg = config(slow_worker(0.2))
    pool = AgentPool(cfg)
    with pytest.raises(Exception) as err:
        pool.get_all([("m", 0), ("bad", 1)])
    assert isinstance(err.value, AgentError) and "no-such-adapter" in str(err.value)
    started = pool.get("m", 0)  # the healthy worker finished starting and is kept by the pool
    pid = started.proc.pid
    pool.shutdown()
    assert started.proc.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
