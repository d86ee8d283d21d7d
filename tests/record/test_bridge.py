"""The lockstep bridge: t-1 coupling, lead-in, ending, concurrency."""

from __future__ import annotations


import numpy as np
import pytest

from agents_for_tests import ProbeAgent, probe_audio
from dyafdb.agents.base import AgentError, Session
from dyafdb.agents.remote import RemoteAgent
from dyafdb.record.bridge import run_bridge
from dyafdb.clock import FRAME_SAMPLES, seconds_to_ticks
from conftest import TEST_PATH, TESTS_DIR


def sessions(window: int, opener: str = "a") -> dict[str, Session]:
    return {s: Session(conversation_id="c", side=s, prompt=f"prompt {s}", speaker_name=s.upper(), seed=1,
                       is_opener=(s == opener), window_ticks=window) for s in "ab"}


def test_partner_hears_exactly_what_was_emitted_one_tick_earlier():
    a, b = ProbeAgent({}), ProbeAgent({})
    res = run_bridge({"a": a, "b": b}, sessions(30), window_ticks=30, lead_in_ticks=0, opener="a")
    audio = res.recording.audio
    assert audio.shape == (2, 30 * FRAME_SAMPLES)
    assert np.array_equal(a.heard[0], np.zeros(FRAME_SAMPLES, np.float32))
    for t in range(29):
        emitted_a = audio[0, t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES]
        emitted_b = audio[1, t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES]
        assert np.array_equal(emitted_a, probe_audio("a", t))
        assert np.array_equal(b.heard[t + 1], emitted_a)  # sample-exact, one tick later
        assert np.array_equal(a.heard[t + 1], emitted_b)


def test_lead_in_suppresses_the_partner_but_steps_it_and_lets_it_hear():
    lead = seconds_to_ticks(1.5)
    assert lead == 19
    a, b = ProbeAgent({}), ProbeAgent({})
    res = run_bridge({"a": a, "b": b}, sessions(40, opener="b"), window_ticks=40, lead_in_ticks=lead, opener="b")
    audio = res.recording.audio
    assert len(a.heard) == 40  # the partner was stepped every tick
    assert not np.any(audio[0, : lead * FRAME_SAMPLES])  # ... but emitted silence during the lead-in
    assert np.array_equal(audio[0, lead * FRAME_SAMPLES:(lead + 1) * FRAME_SAMPLES], probe_audio("a", lead))
    assert np.array_equal(a.heard[1], probe_audio("b", 0))  # it heard the opener from the start
    assert np.array_equal(b.heard[lead], np.zeros(FRAME_SAMPLES, np.float32))  # the opener heard the silence
    texts_a = [t for t in res.recording.tokens if t.channel == "a"]
    assert min(t.tick for t in texts_a) == lead
    assert len(res.suppressed_text["a"]) == lead


def test_ends_at_the_window():
    res = run_bridge({"a": ProbeAgent({}), "b": ProbeAgent({})}, sessions(25), 25, 0, "a")
    assert res.end_reason == "window" and res.ticks == 25


def test_ends_on_finished_after_that_tick():
    res = run_bridge({"a": ProbeAgent({}), "b": ProbeAgent({"finish_at": 7})}, sessions(25), 25, 0, "a")
    assert res.end_reason == "finished:b"
    assert res.ticks == 8 and res.recording.audio.shape[1] == 8 * FRAME_SAMPLES


def test_both_steps_run_concurrently():
    delay, ticks = 0.03, 10
    res = run_bridge({"a": ProbeAgent({"sleep_s": delay}), "b": ProbeAgent({"sleep_s": delay})}, sessions(ticks), ticks, 0, "a")
    assert res.wall_time_s < ticks * delay * 1.6  # serial stepping would take 2 x delay per tick


def _remote(params: dict, name: str = "probe") -> RemoteAgent:
    import os

    env = {"PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    return RemoteAgent(name, "agents_for_tests:ProbeAgent", params, env=env, startup_timeout_s=60, step_timeout_s=2)


def test_out_of_process_agents_are_coupled_the_same_and_overlap():
    a, b = _remote({"sleep_s": 0.03}, "left"), _remote({"sleep_s": 0.03}, "right")
    try:
        res = run_bridge({"a": a, "b": b}, sessions(10), 10, 0, "a")
    finally:
        a.shutdown(), b.shutdown()
    audio = res.recording.audio
    for t in range(10):
        assert np.array_equal(audio[0, t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES], probe_audio("a", t))
    assert res.wall_time_s < 10 * 0.03 * 1.6


@pytest.mark.parametrize("params, reason", [
    ({"crash_at": 3}, "RuntimeError: boom"),
    ({"exit_at": 3}, "worker crashed while stepping (exit code 17)"),
    ({"hang_at": 3}, "worker hung: no reply within 2 s while stepping"),
    ({"bad_shape_at": 3}, "returned audio of shape (100,)"),
])
def test_worker_failures_name_the_agent_and_the_reason(params, reason):
    bad, good = _remote(params, "flaky_model"), _remote({}, "steady")
    try:
        with pytest.raises(AgentError) as err:
            run_bridge({"a": good, "b": bad}, sessions(10), 10, 0, "a")
    finally:
        bad.kill(), good.shutdown()
    assert "flaky_model" in str(err.value) and reason in str(err.value)


def test_malformed_message_from_worker_is_reported():
    script = "import sys,os; os.write(1, b'\\xff' * 64); sys.stdin.read()"
    import sys

    with pytest.raises(AgentError, match=r"agent garbler: malformed message from worker while starting"):
        RemoteAgent("garbler", "null", command=[sys.executable, "-c", script], startup_timeout_s=5)


def test_worker_that_cannot_start_names_the_command():
    with pytest.raises(AgentError, match=r"agent ghost: cannot start worker"):
        RemoteAgent("ghost", "null", command=["/nonexistent/python"])


def test_in_process_failure_names_the_agent():
    with pytest.raises(AgentError, match=r"agent pp \(side b\) failed at tick 2: RuntimeError: boom"):
        run_bridge({"a": ProbeAgent({}), "b": ProbeAgent({"crash_at": 2})}, sessions(10), 10, 0, "a", names={"a": "x", "b": "pp"})
