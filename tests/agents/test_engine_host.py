"""Engine host: one process loads a model once and hosts many sessions over its Unix socket.

Conversations reach it through the record job's AgentPool (DYAFDB_ENGINES) and the real bridge.
Faults: an engine that dies fails its conversations; a hung session is dropped after its step
timeout without stalling the others; a failing model step fails every hosted session and stops.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import conftest
from dyafdb.agents.base import AgentError, Session, silence
from dyafdb.agents.engine.batcher import TickBatcher
from dyafdb.agents.engine.client import EngineAgent
from dyafdb.agents.engine.models import NullEngine
from dyafdb.record.bridge import run_bridge
from dyafdb.record.conversation import AgentPool


def session(cid: str, side: str, seed: int = 1, window: int = 20) -> Session:
    return Session(conversation_id=cid, side=side, prompt="p", speaker_name=side, seed=seed, is_opener=side == "a",
                   window_ticks=window)


def start_host(sock: Path, adapter: str, model: str, params: dict | None = None, **opts) -> subprocess.Popen:
    argv = [sys.executable, "-m", "dyafdb.agents.engine.host", "--socket", str(sock), "--adapter", adapter,
            "--model", model, "--params", json.dumps(params or {})]
    for key, value in opts.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "PYTHONPATH": conftest.TEST_PATH, "OMP_NUM_THREADS": "1", "NO_TORCH_COMPILE": "1"}
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"engine did not start: {proc.stderr.read()}")
        time.sleep(0.05)
    return proc


def stop_host(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.stderr.read()


@pytest.fixture
def sockdir(tmp_path_factory):
    # AF_UNIX paths are limited to ~107 bytes; pytest's tmp paths can be longer
    import tempfile

    with tempfile.TemporaryDirectory(prefix="eng", dir="/tmp") as d:
        yield Path(d)


def test_a_group_of_conversations_shares_one_model_load(sockdir, monkeypatch):
    proc = start_host(sockdir / "quiet.sock", "null", "quiet", sessions=16)
    monkeypatch.setenv("DYAFDB_ENGINES", str(sockdir))
    config = {"bridge": {"in_process": False}, "models": {"quiet": {"adapter": "null"}}}
    try:
        infos = []
        for i in range(8):  # 8 record jobs, self-play: 16 sessions
            with AgentPool(config) as pool:
                agents = dict(zip("ab", pool.get_all([("quiet", 0), ("quiet", 1)])))
                assert all(isinstance(a, EngineAgent) for a in agents.values())
                result = run_bridge(agents, {s: session(f"c{i}", s) for s in "ab"}, 5, 0, "a")
                assert result.ticks == 5 and result.agent_info["a"]["extra"]["engine"] is True
                infos.append(agents["a"].worker_info)
        last = EngineAgent("quiet", sockdir / "quiet.sock").worker_info
        assert last["model_loads"] == 1 and last["sessions_opened"] == 16
        assert len({info["pid"] for info in infos}) == 1  # every job reached the same process
    finally:
        stop_host(proc)
    assert not (sockdir / "quiet.sock").exists()  # removed on SIGTERM


def test_without_an_engine_the_job_starts_its_own_workers(sockdir, monkeypatch):
    monkeypatch.setenv("DYAFDB_ENGINES", str(sockdir))  # folder given, but no engine for this model
    with AgentPool({"bridge": {"in_process": False}, "models": {"quiet": {"adapter": "null"}}}) as pool:
        agent = pool.get("quiet", 0)
        assert not isinstance(agent, EngineAgent) and agent.proc.poll() is None


def test_engine_death_fails_its_conversations(sockdir):
    proc = start_host(sockdir / "m.sock", "null", "m")
    agents = {s: EngineAgent("m", sockdir / "m.sock", step_timeout_s=10) for s in "ab"}

    class KillAt:
        """Side b's agent: kills the engine at tick 3, then steps through it."""

        def __init__(self, inner):
            self.inner, self.t = inner, 0

        def open(self, s):
            return self.inner.open(s)

        def step(self, heard):
            self.t += 1
            if self.t == 3:
                proc.kill()
                proc.wait()
            return self.inner.step(heard)

        def close(self):
            self.inner.close()

    with pytest.raises(AgentError, match="engine died|connection lost"):
        run_bridge({"a": agents["a"], "b": KillAt(agents["b"])}, {s: session("x", s) for s in "ab"}, 10, 0, "a")
    stop_host(proc)


def test_engine_exits_when_idle(sockdir):
    proc = start_host(sockdir / "m.sock", "null", "m", idle_exit_s=0.5)
    assert proc.wait(timeout=20) == 0
    assert not (sockdir / "m.sock").exists()
    proc.stderr.read()


# -- the batcher, in process -------------------------------------------------------------------------
def stepping(batcher: TickBatcher, handle: int, ticks: int, out: list, pause_after: int | None = None) -> None:
    for t in range(ticks):
        if pause_after is not None and t == pause_after:
            return
        try:
            batcher.step(handle, silence())
            out.append(time.monotonic())
        except AgentError as exc:
            out.append(exc)
            return


def test_a_hung_session_is_dropped_after_its_step_timeout():
    batcher = TickBatcher(NullEngine({}, capacity=4), max_wait_s=0.05, step_timeout_s=0.6)
    try:
        healthy, hung = batcher.open(session("h", "a"))[0], batcher.open(session("g", "a"))[0]
        hung_out: list = []
        stepping(batcher, hung, 1, hung_out)  # one frame, then silence from it
        t0 = time.monotonic()
        healthy_out: list = []
        stepping(batcher, healthy, 30, healthy_out)
        assert all(isinstance(t, float) for t in healthy_out), healthy_out
        # the healthy session waited at most max_wait per tick for the hung one, never for its timeout
        assert time.monotonic() - t0 < 30 * 0.05 + 1.0
        time.sleep(0.8)
        with pytest.raises(AgentError, match="dropped this session.*step timeout"):
            batcher.step(hung, silence())
        assert batcher.failure is None
        nxt = batcher.open(session("n", "a"))[0]  # the dropped session's slot is free again
        assert nxt not in (healthy, hung)
    finally:
        batcher.stop()


def test_sessions_arriving_together_share_a_tick():
    batcher = TickBatcher(NullEngine({}, capacity=8), max_wait_s=0.5, step_timeout_s=30)
    try:
        handles = [batcher.open(session(f"c{i}", "a"))[0] for i in range(8)]
        outs = [[] for _ in handles]
        threads = [threading.Thread(target=stepping, args=(batcher, h, 5, o)) for h, o in zip(handles, outs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert batcher.batch_sizes == [8] * 5
    finally:
        batcher.stop()


class FailsAtTick3(NullEngine):
    def __init__(self):
        super().__init__({}, capacity=4)
        self.ticks = 0

    def step(self, heard):
        self.ticks += 1
        if self.ticks == 3:
            raise RuntimeError("CUDA error: an illegal memory access")
        return super().step(heard)


def test_a_failing_model_step_fails_every_hosted_session():
    batcher = TickBatcher(FailsAtTick3(), max_wait_s=0.2, step_timeout_s=30)
    try:
        handles = [batcher.open(session(f"c{i}", "a"))[0] for i in range(3)]
        outs = [[] for _ in handles]
        threads = [threading.Thread(target=stepping, args=(batcher, h, 10, o)) for h, o in zip(handles, outs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        for out in outs:
            assert isinstance(out[-1], AgentError) and "illegal memory access" in str(out[-1])
            assert len(out) == 3  # two frames, then the failure: no frame from a broken state
        with pytest.raises(AgentError, match="engine failed"):
            batcher.open(session("late", "a"))
    finally:
        batcher.stop()


def test_after_an_engine_died_jobs_fall_back_to_their_own_workers(sockdir, monkeypatch):
    proc = start_host(sockdir / "quiet.sock", "null", "quiet")
    proc.kill()
    proc.wait()
    proc.stderr.read()
    assert (sockdir / "quiet.sock").exists()  # SIGKILL leaves the socket file behind
    monkeypatch.setenv("DYAFDB_ENGINES", str(sockdir))
    with AgentPool({"bridge": {"in_process": False}, "models": {"quiet": {"adapter": "null"}}}) as pool:
        agent = pool.get("quiet", 0)
        assert not isinstance(agent, EngineAgent)
        result = run_bridge({"a": agent, "b": pool.get("quiet", 1)}, {s: session("rerun", s) for s in "ab"}, 3, 0, "a")
        assert result.ticks == 3


def test_engine_settings_are_checked_and_commands_derived():
    from dyafdb.agents.engine.launch import engine_models, host_command
    from dyafdb.errors import InputError

    config = {"models": {"m": {"adapter": "moshi", "engine": {}}, "w": {"adapter": "moshi"},
                         "c": {"adapter": "cascade", "engine": {"sessions": 4}}}}
    assert engine_models(config, ["m", "w"]) == ["m"]
    with pytest.raises(InputError, match=r"models\.c\.engine is set but adapter 'cascade' has no engine"):
        engine_models(config, ["m", "c"])
    conda = ["conda", "run", "-n", "moshi", "python", "-m", "dyafdb.agents.worker"]
    assert host_command({"worker": {"command": conda}})[-1] == "dyafdb.agents.engine.host"
    with pytest.raises(AgentError, match="cannot derive an engine command"):
        host_command({"worker": {"command": ["my-server", "--port", "1"]}})
    # PersonaPlex: workers in the fork's environment, the engine in kyutai's moshi environment
    fork = ["conda", "run", "-n", "dyafdb-personaplex", "python", "-m", "dyafdb.agents.worker"]
    stock = ["conda", "run", "-n", "dyafdb-moshi", "python", "-m", "dyafdb.agents.engine.host"]
    assert host_command({"worker": {"command": fork}, "engine": {"command": stock}}) == stock
    with pytest.raises(AgentError, match=r"engine.command .* does not run -m dyafdb.agents.engine.host"):
        host_command({"worker": {"command": fork}, "engine": {"command": ["python", "-m", "dyafdb.agents.worker"]}})
