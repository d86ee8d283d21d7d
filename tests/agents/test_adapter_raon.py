"""Raon adapter against stand-ins of both upstream gateways (tests/standins/fake_raon_gateway.py).

The stand-ins reproduce what each gateway really does with a session (the realtime one ignores
speak_first, never PINGs, sends ERROR then silence for a recoverable decode error and closes after
three in a row; the demo one honours speak-first, has a per-worker default speaker, PINGs with an
empty payload). The adapter starts the gateway itself and runs through the real bridge.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("websockets")

from dyafdb.agents.base import AgentError, Session  # noqa: E402
import dyafdb.agents.raon as raon_module  # noqa: E402
from dyafdb.agents.raon import RaonAgent, clean_text  # noqa: E402
from dyafdb.agents.remote import RemoteAgent  # noqa: E402
from dyafdb.agents.scripted import ScriptedAgent  # noqa: E402
from dyafdb.config import load_config  # noqa: E402
from dyafdb.errors import InputError  # noqa: E402
from dyafdb.record.bridge import run_bridge  # noqa: E402

FAKE = Path(__file__).resolve().parents[1] / "standins" / "fake_raon_gateway.py"
ROOT = Path(__file__).resolve().parents[2]
ROLE = "You are Blake, a hotel clerk. Keep the guest's room number private."
LEAD_IN = 3


def gateway_params(tmp_path: Path, variant: str, *extra: str, **params) -> tuple[dict, Path]:
    record = tmp_path / f"events-{variant}.jsonl"
    command = ["$python", str(FAKE), "--port", "$port", "--variant", variant, "--record", str(record), *extra]
    return {"variant": variant, "step_timeout_s": 10,
            "gateway": {"command": command, "startup_timeout_s": 30, "log": str(tmp_path / "gateway-$port.log"),
                        "unchecked": True}, **params}, record


def raon(tmp_path: Path, variant: str, *extra: str, **params) -> tuple[RaonAgent, Path]:
    params, record = gateway_params(tmp_path, variant, *extra, **params)
    return RaonAgent(params, "raon"), record


def events(record: Path, name: str | None = None) -> list[dict]:
    out = [json.loads(line) for line in record.read_text().splitlines()]
    return [e for e in out if name is None or e["event"] == name]


def run(agent, ticks: int, raon_side: str = "a", partner_start_s: float = 0.0):
    partner = ScriptedAgent({"script": [{"start_s": partner_start_s, "end_s": 10.0, "text": "hi", "amplitude": 0.05}]}, "s")
    other = "b" if raon_side == "a" else "a"
    sessions = {s: Session(conversation_id="t1-1-x", side=s, prompt=ROLE, speaker_name="Blake", seed=1,
                           is_opener=s == "a", window_ticks=ticks) for s in "ab"}
    return run_bridge({raon_side: agent, other: partner}, sessions, window_ticks=ticks, lead_in_ticks=LEAD_IN, opener="a")


def test_default_variant_is_the_demo_gateway_and_the_opener_really_speaks_first(tmp_path):
    params, record = gateway_params(tmp_path, "demo")
    del params["variant"]
    agent = RaonAgent(params, "raon")
    try:
        result = run(agent, 12)  # raon opens; the partner waits for the lead-in
        later = run(agent, 6, raon_side="b")  # the same gateway serves the next conversation; raon answers
    finally:
        agent.gateway.stop()
    assert agent.variant == "demo"
    applied = events(record, "session_applied")
    assert applied[0]["applied"]["speak_first"] is True and applied[1]["applied"]["speak_first"] is False
    opener = result.recording.audio[0].reshape(12, 1920)
    assert np.abs(opener[:LEAD_IN]).max() > 0  # audible within the lead-in, before it heard anything
    assert result.agent_info["a"]["extra"]["speak_first"] is True
    assert later.agent_info["b"]["extra"]["speak_first"] is False
    assert np.abs(later.recording.audio[1].reshape(6, 1920)[0]).max() == 0  # the answerer listens first
    assert applied[0]["applied"]["prompt_text"] == f"You are engaging in real-time conversation. {ROLE}"


def test_realtime_variant_reports_that_it_ignores_speak_first(tmp_path):
    agent, record = raon(tmp_path, "realtime")
    try:
        result = run(agent, 12, partner_start_s=0.48)
    finally:
        agent.gateway.stop()
    sent = events(record, "session_start")[0]["payload"]["session"]
    assert sent["speak_first"] is True  # asked for ...
    assert events(record, "session_applied")[0]["applied"]["speak_first"] is False  # ... not applied upstream
    info = result.agent_info["a"]
    assert info["extra"]["speak_first"] is False and "listens first" in info["extra"]["speak_first_ignored"]
    opener = result.recording.audio[0].reshape(12, 1920)
    assert np.abs(opener[:LEAD_IN]).max() == 0  # what the gateway really does: silent until it hears speech


@pytest.mark.parametrize("variant", ["demo", "realtime"])
def test_official_sampling_is_sent_explicitly_and_recorded(tmp_path, variant):
    agent, record = raon(tmp_path, variant)
    try:
        result = run(agent, 4)
    finally:
        agent.gateway.stop()
    applied = events(record, "session_applied")[0]["applied"]["sampling"]
    assert (applied["temperature"], applied["top_k"], applied["top_p"]) == (0.9, 66, 0.95)  # not the gateway's own defaults
    recorded = result.agent_info["a"]["sampling"]
    assert {k: recorded[k] for k in applied if k in recorded} == {k: applied[k] for k in recorded if k in applied}
    assert recorded["sil_penalty"] == 0.0 and recorded["code_top_k"] == 10


def test_sampling_overrides_reach_the_gateway_and_meta(tmp_path):
    agent, record = raon(tmp_path, "demo", sampling={"temperature": 0.7, "top_k": 50})
    try:
        result = run(agent, 3)
    finally:
        agent.gateway.stop()
    query = events(record, "session_start")[0]["query"]
    assert (query["temperature"], query["top_k"], query["top_p"]) == ("0.7", "50", str(raon_module.OFFICIAL_SAMPLING["top_p"]))
    assert result.agent_info["a"]["sampling"]["temperature"] == 0.7
    with pytest.raises(InputError, match="sil_penalty"):
        RaonAgent({"variant": "demo", "sampling": {"sil_penalty": 1.0}}, "raon")


@pytest.mark.parametrize("variant", ["demo", "realtime"])
def test_recoverable_decode_errors_are_counted_not_fatal(tmp_path, variant):
    agent, record = raon(tmp_path, variant, "--decode-errors", "5,9,10")
    try:
        result = run(agent, 16)
    finally:
        agent.gateway.stop()
    assert result.ticks == 16
    frames = result.recording.audio[0].reshape(16, 1920)
    assert np.abs(frames[5]).max() == 0 and np.abs(frames[9]).max() == 0 and np.abs(frames[6]).max() > 0
    extra = result.agent_info["a"]["extra"]
    # realtime sends ERROR for every failed frame; the demo only for the first of a streak
    assert extra["recoverable_errors"] == (3 if variant == "realtime" else 2)
    assert all("decode error" in message for _, message in extra["gateway_errors"])
    assert [t for t, _ in extra["gateway_errors"]][0] == 5


@pytest.mark.parametrize("variant", ["demo", "realtime"])
def test_three_decode_errors_in_a_row_end_the_session_as_upstream(tmp_path, variant):
    agent, _ = raon(tmp_path, variant, "--decode-errors", "4,5,6")
    try:
        with pytest.raises(AgentError, match=r"closed the session while stepping tick (6|7): internal_error.*decode error"):
            run(agent, 16)
    finally:
        agent.gateway.stop()


def test_recoverable_errors_reach_meta_through_the_worker_process(tmp_path):
    params, _ = gateway_params(tmp_path, "realtime", "--decode-errors", "3")
    remote = RemoteAgent("raon", "raon", params, command=[sys.executable, "-m", "dyafdb.agents.worker"],
                         startup_timeout_s=60, step_timeout_s=20, log_path=str(tmp_path / "worker.log"))
    try:
        result = run(remote, 8)
    finally:
        remote.shutdown()
    assert result.agent_info["a"]["extra"]["recoverable_errors"] == 1


def test_realtime_artifacts_go_to_a_scratch_folder_that_is_emptied(tmp_path):
    agent, record = raon(tmp_path, "realtime")
    try:
        run(agent, 6)
        root = Path(events(record, "session_start")[0]["payload"]["result_root"])
        assert root == agent.result_root and tmp_path not in root.parents
        written = events(record, "session_finish")[0]["output_dir"]
        assert Path(written).parent == root and not Path(written).exists()  # bundle deleted after the session
        assert list(root.iterdir()) == []
    finally:
        agent.gateway.stop()


def test_voice_in_meta_is_what_the_gateway_applied(tmp_path):
    voice = tmp_path / "voice.wav"
    voice.write_bytes(b"RIFF")
    demo, drecord = raon(tmp_path, "demo", speaker_audio=str(voice))
    try:
        dresult = run(demo, 3)
    finally:
        demo.gateway.stop()
    assert events(drecord, "worker_start")[0]["default_speaker"] == "voice.wav"  # the worker's default speaker
    assert dresult.agent_info["a"]["voice"] == "voice.wav"
    rt, _ = raon(tmp_path, "realtime", speaker_audio=str(tmp_path / "missing.wav"))
    try:
        rresult = run(rt, 3)
    finally:
        rt.gateway.stop()
    extra = rresult.agent_info["a"]["extra"]
    assert extra["voice_applied"] is False and extra["gateway_applied"]["speaker_audio"] is None


def test_demo_keepalive_pings_are_answered_while_the_bridge_waits(tmp_path):
    agent, record = raon(tmp_path, "demo", "--ping-interval", "0.3", "--ping-timeout", "0.6")
    session = Session(conversation_id="c", side="a", prompt=ROLE, speaker_name="Blake", seed=1, is_opener=True, window_ticks=5)
    try:
        agent.open(session)
        agent.step(np.zeros(1920, np.float32))
        time.sleep(1.5)  # a slow partner: the gateway PINGs in between
        agent.step(np.zeros(1920, np.float32))
        agent.close()
    finally:
        agent.gateway.stop()
    assert len(events(record, "ping")) >= 2 and len(events(record, "pong")) >= 2
    assert not events(record, "ping_timeout") and not events(record, "disconnected")


@pytest.mark.parametrize("variant", ["demo", "realtime"])
def test_gateway_death_mid_run_is_a_clear_error(tmp_path, variant):
    agent, _ = raon(tmp_path, variant, "--die-at", "6")
    with pytest.raises(AgentError) as err:
        run(agent, 20)
    msg = str(err.value)
    assert "Raon gateway died while stepping tick 6" in msg and "exited with code 3" in msg
    agent.gateway.stop()


def test_fatal_error_frame_is_reported(tmp_path):
    agent, _ = raon(tmp_path, "demo", "--fatal-at", "4")
    try:
        with pytest.raises(AgentError, match="closed the session while stepping tick 4: internal_error.*illegal memory access"):
            run(agent, 20)
    finally:
        agent.gateway.stop()


def test_lockstep_text_filter_and_close(tmp_path):
    agent, record = raon(tmp_path, "realtime")
    try:
        result = run(agent, 20, partner_start_s=0.0)
    finally:
        agent.gateway.stop()
    heard = events(record, "audio")[:20]
    partner = result.recording.audio[1].reshape(20, 1920)
    assert heard[0]["first"] == 0.0 and all(np.isclose(heard[t]["first"], partner[t - 1][0]) for t in range(1, 20))
    frames = result.recording.audio[0].reshape(20, 1920)
    speaking = next(t for t in range(20) if frames[t].any())
    texts = [(t.tick - speaking, t.text) for t in result.recording.tokens if t.channel == "a"]
    assert texts == [(3, " Hello"), (5, " there"), (7, " Nice")]
    assert len(events(record, "client_close")) == 1


def test_launch_commands_are_checked_against_each_variants_entry_points():
    with pytest.raises(InputError, match="gradio_duplex_demo.py, the entry point of the 'realtime'"):
        raon_module.check_gateway_command({"variant": "demo", "gateway": {"command": ["python", "demo/gradio_duplex_demo.py"]}}, "raon")
    with pytest.raises(InputError, match="launch_gateway.py serves HTTPS unless given --http"):
        raon_module.check_gateway_command({"variant": "demo", "gateway": {"command": [
            "bash", "-c", "python3 launch_worker.py --role head & exec python3 launch_gateway.py --port 1"]}}, "raon")
    with pytest.raises(InputError, match="does not start launch_gateway.py"):
        raon_module.check_gateway_command({"variant": "demo", "gateway": {"command": ["python3", "launch_worker.py"]}}, "raon")
    config = load_config(ROOT / "config" / "config.yaml")
    params = config["models"]["raon"]["params"]
    raon_module.check_gateway_command(params, "raon")  # the shipped config starts the upstream entry points
    assert params.get("variant", "demo") == "demo"


def test_websockets_floor_has_the_sync_client_ssl_argument():
    text = (ROOT / "pyproject.toml").read_text()
    floor = re.search(r'raon = \[[^\]]*"websockets>=(\d+)', text)
    assert floor and int(floor.group(1)) >= 13  # 12.x's websockets.sync.client.connect has no ssl=


def test_startup_waits_for_health_and_reports_a_gateway_that_exits(tmp_path):
    agent, _ = raon(tmp_path, "realtime", "--startup-delay", "1.0")
    agent.gateway.stop()
    failing = {"variant": "realtime", "gateway": {"command": [sys.executable, "-c", "import sys; print('no GPU'); sys.exit(2)"],
                                                   "startup_timeout_s": 30, "unchecked": True}}
    with pytest.raises(AgentError, match=r"exited with code 2 before it became healthy(.|\n)*no GPU"):
        RaonAgent(failing, "raon")
    with pytest.raises(AgentError, match="not healthy after"):
        RaonAgent({"variant": "demo", "url": "http://127.0.0.1:9", "health_timeout_s": 0.5}, "raon")


def test_missing_bundle_says_how_to_make_one(tmp_path):
    with pytest.raises(InputError, match="raon.export"):
        RaonAgent({"checkpoint_dir": str(tmp_path / "bundle"), "gateway": {"command": ["true"], "unchecked": True}}, "raon")


def test_clean_text():
    assert clean_text(" Hello") == " Hello"
    assert clean_text("<|fim_prefix|>") is None and clean_text("\n") is None
    assert clean_text(" there<|im_end|>") == " there" and clean_text("\n Nice") == " Nice"
    assert clean_text("<|audio_output_backchannel|> yeah") == " yeah"


def test_demo_session_starts_at_the_first_tick_so_a_slow_partner_open_cannot_expire_it(tmp_path):
    agent, record = raon(tmp_path, "demo", "--idle-timeout", "0.5", "--cleanup-interval", "0.1")
    session = Session(conversation_id="c", side="a", prompt=ROLE, speaker_name="Blake", seed=1, is_opener=True, window_ticks=5)
    try:
        agent.open(session)
        time.sleep(1.2)  # the partner loads its prompt (PersonaPlex: seconds) before the clock starts
        for _ in range(3):
            agent.step(np.zeros(1920, np.float32))
        time.sleep(1.2)  # a partner step longer than the demo's idle timeout ends the session upstream
        with pytest.raises(AgentError, match="internal_error.*idle_timeout_seconds"):
            agent.step(np.zeros(1920, np.float32))
    finally:
        agent.close()
        agent.gateway.stop()
    assert [e["tick"] for e in events(record, "idle_timeout")] == [3]


def test_gateway_checkout_is_pinned_and_its_commit_recorded(tmp_path):
    checkout = tmp_path / "Raon-SpeechChat-Demo"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "HEAD").write_text("d" * 40 + "\n")
    params = {"variant": "demo", "gateway": {"command": ["x"], "cwd": str(checkout), "unchecked": True}}
    with pytest.raises(InputError, match="checked against krafton-ai/Raon-SpeechChat-Demo @ 5b3bc6f"):
        raon_module.gateway_code(params, "raon")
    assert raon_module.gateway_code({**params, "allow_other_code": True}, "raon")["gateway_commit"] == "d" * 40
    (checkout / ".git" / "HEAD").write_text(raon_module.UPSTREAM["demo"][1] + "\n")
    gparams, _ = gateway_params(tmp_path, "demo")
    gparams["gateway"]["cwd"] = str(checkout)
    agent = RaonAgent(gparams, "raon")
    try:
        result = run(agent, 3)
    finally:
        agent.gateway.stop()
    extra = result.agent_info["a"]["extra"]
    assert extra["gateway_commit"] == raon_module.UPSTREAM["demo"][1] and extra["gateway_repo"] == "krafton-ai/Raon-SpeechChat-Demo"
