"""Raon adapter against a stand-in gateway process on loopback (tests/fake_raon_gateway.py).

The adapter starts the gateway itself (``gateway.command`` with ``{port}``), waits for its health
check, and runs both session-start variants through the real bridge: lockstep AUDIO exchange,
PING answered, structural tokens filtered, CLOSE at the end, and clear errors when the gateway
sends ERROR or dies mid-run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("websockets")

from dyafdb.agents.base import AgentError, Session  # noqa: E402
from dyafdb.agents.raon import RaonAgent, clean_text  # noqa: E402
from dyafdb.agents.scripted import ScriptedAgent  # noqa: E402
from dyafdb.record.bridge import run_bridge  # noqa: E402
from dyafdb.errors import InputError
from dyafdb.errors import InputError  # noqa: E402

FAKE = Path(__file__).resolve().parents[1] / "standins" / "fake_raon_gateway.py"
ROLE = "You are Blake, a hotel clerk. Keep the guest's room number private."


def raon(tmp_path: Path, variant: str, *extra: str, **params) -> tuple[RaonAgent, Path]:
    record = tmp_path / f"events-{variant}.jsonl"
    command = ["$python", str(FAKE), "--port", "$port", "--variant", variant, "--record", str(record), *extra]
    params = {"variant": variant, "step_timeout_s": 10,
              "gateway": {"command": command, "startup_timeout_s": 30, "log": str(tmp_path / "gateway-$port.log")}, **params}
    return RaonAgent(params, "raon"), record


def events(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def run(agent, ticks: int, raon_side: str = "a"):
    partner = ScriptedAgent({"script": [{"start_s": 0.0, "end_s": 10.0, "text": "hi", "amplitude": 0.05}]}, "s")
    other = "b" if raon_side == "a" else "a"
    sessions = {s: Session(conversation_id="t1-1-x", side=s, prompt=ROLE, speaker_name="Blake", seed=1,
                           is_opener=s == "a", window_ticks=ticks) for s in "ab"}
    return run_bridge({raon_side: agent, other: partner}, sessions, window_ticks=ticks, lead_in_ticks=3, opener="a")


@pytest.mark.parametrize("variant", ["demo", "realtime"])
def test_session_lockstep_text_filter_ping_and_close(tmp_path, variant):
    agent, record = raon(tmp_path, variant)
    try:
        result = run(agent, 20)
        again = run(agent, 6, raon_side="b")  # the same gateway serves the next conversation
    finally:
        agent.gateway.stop()
    frames = result.recording.audio[0].reshape(20, 1920)
    for t in range(20):  # lockstep: tick t carries the gateway's reply to the frame sent at tick t
        assert np.array_equal(frames[t], np.full(1920, 0.01 * (t + 1), dtype=np.float32))
    log = events(record)
    heard = [e for e in log if e["event"] == "audio"][:20]
    assert [e["tick"] for e in heard] == list(range(20))
    partner = result.recording.audio[1].reshape(20, 1920)
    assert heard[0]["first"] == 0.0 and all(np.isclose(heard[t]["first"], partner[t - 1][0]) for t in range(1, 20))
    texts = [(t.tick, t.text) for t in result.recording.tokens if t.channel == "a"]
    assert texts == [(3, " Hello"), (5, " there"), (7, " Nice")]
    assert [e["tick"] for e in log if e["event"] == "pong"][:4] == [1, 6, 11, 16]
    assert not [e for e in log if e["event"] in ("bad_pong", "unexpected_pong")]
    assert [e["event"] for e in log].count("client_close") == 2  # CLOSE at the end of each conversation
    starts = [e for e in log if e["event"] == "session_start"]
    if variant == "demo":
        query = starts[0]["query"]
        assert query["prompt"] == "eng:full_duplex:speak-first" and query["system_prompt_style"] == "custom"
        assert query["custom_system_prompt"] == f"You are engaging in real-time conversation. {ROLE}"
        assert query["speaker_mode"] == "default"
        assert starts[1]["query"]["prompt"] == "eng:full_duplex:listen-first"  # raon was not the opener
    else:
        session = starts[0]["payload"]["session"]
        assert session["prompt"] == f"You are engaging in real-time conversation. {ROLE}" and session["speak_first"]
        assert session["prompt_role"] == "system" and "sampling" not in session  # the gateway's defaults
        assert len([e for e in log if e["event"] == "session_finish"]) == 2
    info = result.agent_info["a"]
    assert info["extra"]["variant"] == variant and info["voice"] == "gateway default speaker"
    assert info["sampling"]["temperature"] == (0.7 if variant == "demo" else 1.1)
    assert again.ticks == 6


def test_sampling_overrides_reach_the_gateway(tmp_path):
    agent, record = raon(tmp_path, "realtime", sampling={"temperature": 0.9, "top_k": 66})
    try:
        run(agent, 3)
    finally:
        agent.gateway.stop()
    session = [e for e in events(record) if e["event"] == "session_start"][0]["payload"]["session"]
    assert session["sampling"] == {"temperature": 0.9, "top_k": 66}
    with pytest.raises(InputError, match="sil_penalty"):
        RaonAgent({"variant": "demo", "sampling": {"sil_penalty": 1.0}}, "raon")


@pytest.mark.parametrize("variant", ["demo", "realtime"])
def test_gateway_death_mid_run_is_a_clear_error(tmp_path, variant):
    agent, _ = raon(tmp_path, variant, "--die-at", "6")
    with pytest.raises(AgentError) as err:
        run(agent, 20)
    msg = str(err.value)
    assert "Raon gateway died while stepping tick 6" in msg and "exited with code 3" in msg
    agent.gateway.stop()


def test_gateway_error_frame_is_reported(tmp_path):
    agent, _ = raon(tmp_path, "demo", "--error-at", "4")
    try:
        with pytest.raises(AgentError, match="Raon gateway error while stepping tick 4: CUDA out of memory"):
            run(agent, 20)
    finally:
        agent.gateway.stop()


def test_startup_waits_for_health_and_reports_a_gateway_that_exits(tmp_path):
    agent, _ = raon(tmp_path, "realtime", "--startup-delay", "1.0")
    agent.gateway.stop()
    failing = {"variant": "realtime", "gateway": {"command": [sys.executable, "-c", "import sys; print('no GPU'); sys.exit(2)"],
                                                   "startup_timeout_s": 30}}
    with pytest.raises(AgentError, match=r"exited with code 2 before it became healthy(.|\n)*no GPU"):
        RaonAgent(failing, "raon")
    with pytest.raises(AgentError, match="not healthy after"):
        RaonAgent({"variant": "demo", "url": "http://127.0.0.1:9", "health_timeout_s": 0.5}, "raon")


def test_missing_bundle_says_how_to_make_one(tmp_path):
    with pytest.raises(InputError, match="raon.export"):
        RaonAgent({"checkpoint_dir": str(tmp_path / "bundle"), "gateway": {"command": ["true"]}}, "raon")


def test_clean_text():
    assert clean_text(" Hello") == " Hello"
    assert clean_text("<|fim_prefix|>") is None and clean_text("\n") is None
    assert clean_text(" there<|im_end|>") == " there" and clean_text("\n Nice") == " Nice"
    assert clean_text("<|audio_output_backchannel|> yeah") == " yeah"
