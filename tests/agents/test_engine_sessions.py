"""MiniCPM-o and Raon behind engines: one model load hosts the sessions of many record jobs.

Both run in an engine host process as a record job reaches it (EngineAgent over the Unix socket, the
real bridge), against the stand-ins of their upstream code (tests/standins/minicpmo_duplex.py:
OpenBMB/minicpm-o-4_5-pytorch-simple-demo @ c7e1660; tests/standins/fake_raon_gateway.py:
krafton-ai/Raon-SpeechChat-Demo @ 5b3bc6f). MiniCPM-o keeps its session state on the model, so its
engine hosts one session at a time and the other jobs wait for their turn; Raon's gateway hosts
``engine.sessions`` at once.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session, silence
from dyafdb.agents.engine.client import EngineAgent, engine_socket
from dyafdb.agents.engine.sessions import EngineFailure, SessionPool
from dyafdb.agents.scripted import ScriptedAgent
from dyafdb.record.bridge import run_bridge
from test_engine_host import sockdir, start_host, stop_host  # noqa: F401  (fixture)

ROLE = "You are Avery. You want a table for two at seven."
FAKE = Path(__file__).resolve().parents[1] / "standins" / "fake_raon_gateway.py"


def sessions_for(cid: str, ticks: int, seed: int = 3) -> dict[str, Session]:
    return {s: Session(conversation_id=cid, side=s, prompt=ROLE, speaker_name="Avery", seed=seed, is_opener=s == "a",
                       window_ticks=ticks) for s in "ab"}


def partner() -> ScriptedAgent:
    return ScriptedAgent({"script": [{"start_s": 0.0, "end_s": 60.0, "text": "go on", "amplitude": 0.05}]}, "s")


def run_group(socket_path: Path, model: str, n: int, ticks: int, self_play: bool = False) -> list:
    """``n`` record jobs at once, each joining the engine (both sides when ``self_play``)."""
    results: list = [None] * n
    errors: list = []

    def job(i: int) -> None:
        try:
            agents = {"a": EngineAgent(model, socket_path, step_timeout_s=20)}
            agents["b"] = EngineAgent(model, socket_path, step_timeout_s=20) if self_play else partner()
            try:
                results[i] = run_bridge(agents, sessions_for(f"c{i}", ticks, seed=i), ticks, 3, "a")
            finally:
                for agent in agents.values():
                    getattr(agent, "shutdown", lambda: None)()
        except Exception as exc:  # reported below with the job's number
            errors.append((i, exc))

    threads = [threading.Thread(target=job, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    return results


# -- MiniCPM-o ---------------------------------------------------------------------------------------
@pytest.fixture
def minicpmo_params(tmp_path: Path) -> dict:
    folder = tmp_path / "MiniCPM-o-4_5"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    ref = tmp_path / "ref.wav"
    sf.write(ref, (0.1 * np.sin(np.arange(24000) * 0.05)).astype(np.float32), 24000)
    return {"checkpoint_dir": str(folder), "ref_audio": str(ref), "device": "cpu",
            "stand_in": {"prefill_s": 0.0, "generate_s": 0.01}}


def test_minicpmo_engine_hosts_a_group_of_8_on_one_model_load(sockdir, minicpmo_params):
    sock = sockdir / "minicpmo.sock"
    proc = start_host(sock, "minicpmo_duplex:StandInMiniCPMOEngine", "minicpmo", minicpmo_params, sessions=8)
    try:
        results = run_group(sock, "minicpmo", 8, ticks=40)
        last = EngineAgent("minicpmo", sock).worker_info
    finally:
        log = stop_host(proc)
    infos = [r.agent_info["a"]["extra"] for r in results]
    assert {i["standin_model_loads"] for i in infos} == {1}  # the stand-in's from_pretrained ran once
    assert len({i["engine_pid"] for i in infos}) == 1 and last["model_loads"] == 1
    assert sorted(i["engine_session_number"] for i in infos) == list(range(1, 9))
    # one session at a time (upstream's state is on the model): the others waited for their turn
    assert last["concurrent"] == 1 and last["largest_batch"] == 1 and last["sessions_opened"] == 8
    # every session started from a fresh load's model state (the Whisper streaming cache emptied)
    assert [i["kv_at_first_prefill"] for i in infos] == [0] * 8, log
    assert {i["engine_model_state"] for i in infos if i["engine_session_number"] > 1} == {
        "reset as at load (set_mode STREAMING -> DUPLEX)"}
    for r in results:  # each conversation ran whole, with MiniCPM-o's chunks (first three listen), timed
        assert r.ticks == 40 and r.agent_info["a"]["extra"]["duplex"]["force_listen_count"] == 3
        assert len(r.agent_info["a"]["extra"]["chunk_compute_ms"]) >= 2
        assert all(ms >= 10 for ms in r.agent_info["a"]["extra"]["chunk_compute_ms"])  # the stand-in's 10 ms generate


def test_minicpmo_self_play_does_not_wait_for_itself(sockdir, minicpmo_params, monkeypatch):
    """The job holding the one-session engine's only turn gets no socket for its second side (it
    would wait for itself); AgentPool then starts that side's own worker."""
    sock = sockdir / "minicpmo.sock"
    proc = start_host(sock, "minicpmo_duplex:StandInMiniCPMOEngine", "minicpmo", minicpmo_params)
    monkeypatch.setenv("DYAFDB_ENGINES", str(sockdir))
    try:
        assert engine_socket("minicpmo") == sock
        first = EngineAgent("minicpmo", sock)
        assert engine_socket("minicpmo") is None
        first.shutdown()
        assert engine_socket("minicpmo") == sock
    finally:
        stop_host(proc)


def test_a_failed_minicpmo_chunk_fails_the_engine(sockdir, minicpmo_params):
    sock = sockdir / "minicpmo.sock"
    minicpmo_params["stand_in"]["fail_at"] = 1
    proc = start_host(sock, "minicpmo_duplex:StandInMiniCPMOEngine", "minicpmo", minicpmo_params)
    try:
        agent = EngineAgent("minicpmo", sock, step_timeout_s=20)
        with pytest.raises(AgentError, match="illegal memory access|engine died|engine error"):
            run_bridge({"a": agent, "b": partner()}, sessions_for("x", 60), 60, 3, "a")
        assert proc.wait(timeout=20) == 1  # the model's state is unknown: the engine exits
    finally:
        stop_host(proc)


# -- Raon ----------------------------------------------------------------------------------------------
def raon_params(tmp_path: Path, record: Path, voice: Path) -> dict:
    """The demo gateway stand-in, started as the engine's service (its worker's sessions from FD_MAX_SESSIONS_PER_GPU)."""
    return {"variant": "demo", "step_timeout_s": 10, "speaker_audio": str(voice),
            "gateway": {"command": ["$python", str(FAKE), "--port", "$port", "--variant", "demo", "--record", str(record)],
                        "startup_timeout_s": 30, "log": str(tmp_path / "gateway.log"), "unchecked": True}}


@pytest.fixture
def raon_setup(tmp_path, monkeypatch):
    pytest.importorskip("websockets")
    from test_adapter_raon import ecapa_cache, write_wav

    monkeypatch.setenv("SPEECHBRAIN_ECAPA_SAVEDIR", str(ecapa_cache(tmp_path / "ecapa")))
    record = tmp_path / "events.jsonl"
    return raon_params(tmp_path, record, write_wav(tmp_path / "raon.wav")), record


def events(record: Path, name: str) -> list[dict]:
    return [e for e in map(json.loads, record.read_text().splitlines()) if e["event"] == name]


def test_raon_engine_hosts_a_group_of_8_on_one_gateway(sockdir, raon_setup):
    params, record = raon_setup
    sock = sockdir / "raon.sock"
    proc = start_host(sock, "raon", "raon", params, sessions=8)
    try:
        results = run_group(sock, "raon", 8, ticks=12)
        selfplay = run_group(sock, "raon", 1, ticks=12, self_play=True)[0]  # raon+raon: two sessions, one Ray head
        last = EngineAgent("raon", sock).worker_info
    finally:
        stop_host(proc)
    assert len(events(record, "worker_start")) == 1  # the gateway (the model load) started once
    assert len(events(record, "session_applied")) == 10 and not events(record, "no_workers")
    infos = [r.agent_info["a"]["extra"] for r in results] + [selfplay.agent_info[s]["extra"] for s in "ab"]
    assert len({i["engine_pid"] for i in infos}) == 1 and last["model_loads"] == 1 and last["concurrent"] == 2
    assert all(i["voice_applied"] is True and i["recoverable_errors"] == 0 for i in infos)  # the close report came back
    assert last["largest_batch"] == 2  # two at once (the worker's default), each its own gateway session
    for r in [*results, selfplay]:
        assert np.abs(r.recording.audio[0]).max() > 0  # the opener spoke through the shared gateway
    assert [e["applied"]["speak_first"] for e in events(record, "session_applied")].count(True) == 9


def test_raon_sessions_at_once_are_the_gateways(raon_setup):
    from dyafdb.agents.engine.models import concurrent_sessions
    from dyafdb.agents.raon import gateway_sessions

    params, _ = raon_setup
    assert gateway_sessions(params, "raon", 8) == 2  # launch_worker.py's default FD_MAX_SESSIONS_PER_GPU
    assert gateway_sessions({**params, "variant": "realtime"}, "raon", 8) == 1  # one active session per process
    params["gateway"]["command"] += ["--max-sessions-per-gpu", "4"]
    assert gateway_sessions(params, "raon", 8) == 4 and gateway_sessions(params, "raon", 3) == 3
    params["gateway"]["env"] = {"FD_MAX_SESSIONS_PER_GPU": "6"}
    assert gateway_sessions(params, "raon", 8) == 4  # the flag wins over the variable, as in launch_worker.py
    assert concurrent_sessions({"adapter": "raon", "params": params, "engine": {"sessions": 8}}) == 4
    assert concurrent_sessions({"adapter": "minicpmo", "engine": {"sessions": 8}}) == 1
    assert concurrent_sessions({"adapter": "moshi", "engine": {"sessions": 8}}) == 8


# -- the session pool ------------------------------------------------------------------------------------
class Echo:
    lockstep, capacity = False, 4

    def __init__(self, concurrent: int = 1, fail_on: int | None = None):
        self.concurrent, self.fail_on, self.steps = concurrent, fail_on, 0

    def open(self, session):
        return 0, AgentInfo(adapter="echo", adapter_version="0", model="echo")

    def step_one(self, slot, heard):
        self.steps += 1
        if self.steps == self.fail_on:
            raise EngineFailure("CUDA error")
        return Frame(silence())

    def close(self, slot):
        return {"closed": slot}


def test_turns_are_handed_out_in_arrival_order():
    pool = SessionPool(Echo(concurrent=1))
    assert pool.acquire_turn()
    order: list[int] = []

    def waiter(i: int) -> None:
        assert pool.acquire_turn()
        order.append(i)
        pool.release_turn()

    threads = []
    for i in range(3):
        threads.append(threading.Thread(target=waiter, args=(i,)))
        threads[-1].start()
        while pool.waiting < i + 1:
            time.sleep(0.01)
    assert order == []  # all wait while the turn is held
    pool.release_turn()
    for t in threads:
        t.join(timeout=10)
    assert order == [0, 1, 2]
    assert pool.acquire_turn(timeout_s=0.0) and not pool.acquire_turn(timeout_s=0.1)  # one turn, now held


def test_an_engine_failure_fails_every_session_of_the_pool():
    pool = SessionPool(Echo(concurrent=2, fail_on=2))
    h1, _ = pool.open(sessions_for("c", 5)["a"])
    h2, _ = pool.open(sessions_for("c", 5)["b"])
    pool.step(h1, silence())
    with pytest.raises(EngineFailure):
        pool.step(h2, silence())
    with pytest.raises(AgentError, match="engine failed: CUDA error"):
        pool.step(h1, silence())
    with pytest.raises(AgentError, match="engine failed"):
        pool.acquire_turn()


# -- node groups and the plan --------------------------------------------------------------------------
def test_node_groups_take_turns_at_a_one_session_engine():
    from types import SimpleNamespace

    from dyafdb.record.engine_groups import EngineGroups

    models = {"minicpmo": {"adapter": "minicpmo", "engine": {"sessions": 8}, "resources": {"gpus": 1, "runtime_min": 5}},
              "raon": {"adapter": "raon", "engine": {"sessions": 8}, "resources": {"gpus": 1, "runtime_min": 5}}}
    rows = {f"{a}-{b}-{i}": SimpleNamespace(model_a=a, model_b=b)
            for a, b in (("minicpmo", "raon"), ("minicpmo", "minicpmo"), ("raon", "raon")) for i in range(8)}
    groups = EngineGroups({"models": models}, rows, group_name=lambda: "engine_node", cores=lambda: 64, local=lambda: False)
    group_of, pairs = groups.groups()
    assert not any(cid.startswith("minicpmo-minicpmo") for cid in group_of)  # it would wait for its own turn
    cross = {g for cid, g in group_of.items() if cid.startswith("minicpmo-raon")}
    selfplay = {g for cid, g in group_of.items() if cid.startswith("raon-raon")}
    assert len(cross) == 1 and len(selfplay) == 2  # 8 of one turn each; raon's 8 sessions hold 4 self-play conversations
    group = next(iter(cross))
    assert groups.waves(group) == 8 and groups.waves(next(iter(selfplay))) == 4  # raon: 2 sessions at once
    wildcards = SimpleNamespace(group=group, conversation="minicpmo-raon-0")
    assert groups.engine_runtime(wildcards) == 5 * 9  # eight conversations one after another, plus the load
    assert "DYAFDB_ENGINE_TURN_WAIT_S=2400" in groups.record_env(wildcards)


def test_plan_prints_engine_gpu_hours_for_all_three_models(tmp_path):
    """`dyafdb plan` on the paper's config: one line per engine model, PersonaPlex's prompt steps
    counted in its ticks, MiniCPM-o one session at a time, Raon its gateway's sessions at once."""
    from dyafdb.commands.plan import build_plan
    from dyafdb.config import load_config
    from dyafdb.suite.plan import FRAME_SECONDS, format_plan

    root = Path(__file__).resolve().parents[2]
    config = load_config(root / "config" / "config.yaml")
    rows, plan = build_plan(config, root, None)
    eng = plan["engines"]
    assert set(eng["gpu_hours_by_model"]) == {"personaplex", "minicpmo", "raon"}
    assert eng["session_models"] == {"minicpmo": {"at_once": 1, "per_load": 16}, "raon": {"at_once": 2, "per_load": 16}}
    text = format_plan(plan)
    for model in ("personaplex", "minicpmo", "raon"):
        assert f"engine {model}: " in text
    assert "prompt steps per join riding in the ticks" in text
    # the prompt steps cost their share of a tick each: 250 more steps per PersonaPlex side
    config["plan"]["engine_prompt_steps"] = 0
    _, without = build_plan(config, root, None)
    sides = sum((r.model_a == "personaplex") + (r.model_b == "personaplex") for r in rows)
    extra = sides * 250 * eng["tick_ms"] / 1000 / eng["sessions"] / 3600
    assert plan["engines"]["gpu_hours_by_model"]["personaplex"] - without["engines"]["gpu_hours_by_model"]["personaplex"] \
        == pytest.approx(extra)
    # MiniCPM-o: each side's recording time on its own GPU turn, plus a sixteenth of a load
    mini = sum((r.window_s + config["bridge"]["lead_in_s"]) + config["plan"]["startup_s"] / 16
               for r in rows for m in (r.model_a, r.model_b) if m == "minicpmo") / 3600
    assert plan["engines"]["gpu_hours_by_model"]["minicpmo"] == pytest.approx(mini)
    assert FRAME_SECONDS == 0.08


def test_a_silent_session_loses_its_turn_to_the_next_job(sockdir, minicpmo_params):
    """A job that holds MiniCPM-o's one turn and then sends nothing past the step timeout is dropped,
    and the job waiting behind it gets the turn (the engine goes on)."""
    sock = sockdir / "minicpmo.sock"
    proc = start_host(sock, "minicpmo_duplex:StandInMiniCPMOEngine", "minicpmo", minicpmo_params, step_timeout_s=1.5)
    try:
        hung = EngineAgent("minicpmo", sock, step_timeout_s=10)
        hung.open(sessions_for("hung", 20)["a"])
        hung.step(np.zeros(1920, np.float32))
        t0 = time.monotonic()
        waiting = EngineAgent("minicpmo", sock, step_timeout_s=10)  # READY only once the silent one is dropped
        assert 1.0 < time.monotonic() - t0 < 10
        result = run_bridge({"a": waiting, "b": partner()}, sessions_for("next", 20), 20, 3, "a")
        assert result.ticks == 20 and result.agent_info["a"]["extra"]["engine_session_number"] == 2
        with pytest.raises(AgentError):
            hung.step(np.zeros(1920, np.float32))
    finally:
        log = stop_host(proc)
    assert "dropped a session silent for 1.5 s" in log
