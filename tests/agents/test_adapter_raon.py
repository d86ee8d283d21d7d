"""Raon adapter against stand-ins of both upstream gateways (tests/standins/fake_raon_gateway.py).

The stand-ins reproduce what each gateway really does with a session (the realtime one ignores
speak_first, never PINGs, sends ERROR then silence for a recoverable decode error and closes after
three in a row; the demo one honours speak-first, has a per-worker default speaker, PINGs with an
empty payload). The adapter starts the gateway itself and runs through the real bridge.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import wave
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


ECAPA = "speechbrain_spkrec-ecapa-voxceleb"


def ecapa_cache(root: Path, complete: bool = True) -> Path:
    """SpeechBrain's ECAPA snapshot where Raon-SpeechChat-Demo's _load_backend looks for it."""
    (root / ECAPA).mkdir(parents=True, exist_ok=True)
    if complete:
        for name in ("hyperparams.yaml", "embedding_model.ckpt"):
            (root / ECAPA / name).write_text("x")
        (root / f"{ECAPA}.done").write_text("done")
    return root


@pytest.fixture(autouse=True)
def ecapa_on_disk(tmp_path, monkeypatch):
    """The demo gateway's speaker encoder on local disk (tests of it being missing override this)."""
    root = ecapa_cache(tmp_path / "ecapa-cache")
    monkeypatch.setenv("SPEECHBRAIN_ECAPA_SAVEDIR", str(root))
    return root


def write_wav(path: Path, seconds: float = 1.0) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(24000)
        w.writeframes((np.sin(np.arange(int(24000 * seconds)) * 0.05) * 3000).astype("<i2").tobytes())
    return path


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
    voice = write_wav(tmp_path / "voice.wav")
    demo, drecord = raon(tmp_path, "demo", speaker_audio=str(voice))
    try:
        dresult = run(demo, 3)
    finally:
        demo.gateway.stop()
    # no DEFAULT_SPEAKER_LABEL: upstream reports the label as the source even when no embedding was made
    assert events(drecord, "worker_start")[0]["default_speaker"] == f"audio:{voice}"
    assert events(drecord, "session_applied")[0]["applied"]["speaker"] == f"audio:{voice}"
    info = dresult.agent_info["a"]
    assert info["voice"] == "voice.wav" and info["extra"]["voice_applied"] is True
    assert "no speaker-failure line" in info["extra"]["voice_evidence"]
    rt, _ = raon(tmp_path, "realtime", speaker_audio=str(tmp_path / "missing.wav"))
    try:
        rresult = run(rt, 3)
    finally:
        rt.gateway.stop()
    extra = rresult.agent_info["a"]["extra"]
    assert extra["voice_applied"] is False and extra["gateway_applied"]["speaker_audio"] is None


def test_missing_ecapa_stops_the_worker_before_the_gateway_loads(tmp_path, monkeypatch):
    """Upstream would download ECAPA at run time, and on an offline node run with no speaker: refused up front."""
    empty = ecapa_cache(tmp_path / "offline-cache", complete=False)
    monkeypatch.setenv("SPEECHBRAIN_ECAPA_SAVEDIR", str(empty))
    params, record = gateway_params(tmp_path, "demo", speaker_audio=str(write_wav(tmp_path / "voice.wav")))
    with pytest.raises(InputError) as err:
        RaonAgent(params, "raon")
    message = str(err.value)
    assert "\n" not in message and str(empty / ECAPA) in message and "SPEECHBRAIN_ECAPA_SAVEDIR" in message
    assert "huggingface-cli download speechbrain/spkrec-ecapa-voxceleb" in message and f"{ECAPA}.done" in message
    assert not record.exists()  # no gateway was started


def test_offline_ecapa_fallback_is_marked_when_the_config_allows(tmp_path, monkeypatch):
    """voice_check: mark records what upstream did (no speaker, only logged) instead of failing."""
    empty = ecapa_cache(tmp_path / "offline-cache", complete=False)
    monkeypatch.setenv("SPEECHBRAIN_ECAPA_SAVEDIR", str(empty))
    agent, record = raon(tmp_path, "demo", speaker_audio=str(write_wav(tmp_path / "voice.wav")), voice_check="mark")
    try:
        result = run(agent, 4)
    finally:
        agent.gateway.stop()
    assert events(record, "worker_start")[0]["has_default_speaker"] is False
    assert events(record, "session_applied")[0]["applied"]["speaker"] is None  # upstream: no speaker, only a log line
    info = result.agent_info["a"]
    assert info["voice"].startswith("none") and info["extra"]["voice_applied"] is False
    assert "failed to compute default speaker embedding from audio" in info["extra"]["voice_problem"]


def test_a_voice_the_gateway_could_not_embed_fails_the_recording_with_its_log_line(tmp_path):
    """ECAPA is there but the wav cannot be decoded: upstream falls back to a silence embedding and only logs it."""
    broken = tmp_path / "voice.wav"
    broken.write_bytes(b"RIFF")
    agent, record = raon(tmp_path, "demo", speaker_audio=str(broken))
    try:
        with pytest.raises(AgentError) as err:
            run(agent, 4)
    finally:
        agent.gateway.stop()
    assert events(record, "worker_start")[0]["default_speaker"] == "silence-fallback"
    message = str(err.value)
    assert "voice.wav" in message and "failed to compute default speaker embedding from audio" in message
    assert "voice_check: mark" in message


def test_raon_self_play_shares_one_gateway_on_one_node(tmp_path):
    """Both sides of raon+raon are sessions of one hand-started demo gateway (one Ray head, two sessions per GPU)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    record, log = tmp_path / "events.jsonl", tmp_path / "gateway.log"
    voice = write_wav(tmp_path / "voice.wav")
    env = {**__import__("os").environ, "DEFAULT_SPEAKER_AUDIO_PATH": str(voice), "FD_MAX_SESSIONS_PER_GPU": "2"}
    with open(log, "wb") as out:
        gateway = subprocess.Popen([sys.executable, str(FAKE), "--port", str(port), "--variant", "demo", "--record", str(record)],
                                   env=env, stdout=out, stderr=subprocess.STDOUT)
    params = {"variant": "demo", "url": f"http://127.0.0.1:{port}", "gateway_log": str(log), "speaker_audio": str(voice),
              "step_timeout_s": 10, "health_timeout_s": 30}
    try:
        sides = {"a": RaonAgent(params, "raon"), "b": RaonAgent(params, "raon")}
        sessions = {s: Session(conversation_id="t1-1-self", side=s, prompt=ROLE, speaker_name="Blake", seed=1,
                               is_opener=s == "a", window_ticks=12) for s in "ab"}
        result = run_bridge(sides, sessions, window_ticks=12, lead_in_ticks=LEAD_IN, opener="a")
    finally:
        gateway.terminate()
        gateway.wait()
    assert result.ticks == 12 and not events(record, "no_workers")
    assert [e["applied"]["speaker"] for e in events(record, "session_applied")] == [f"audio:{voice}"] * 2
    audio = result.recording.audio.reshape(2, 12, 1920)
    assert np.abs(audio[0]).max() > 0 and np.abs(audio[1]).max() > 0  # the opener spoke, the other answered it
    assert all(result.agent_info[s]["extra"]["voice_applied"] is True for s in "ab")


def test_preflight_checks_the_raon_voice_encoder_and_refuses_two_ray_heads_on_a_node(tmp_path, monkeypatch):
    from dyafdb.commands._preflight import model_checks

    config = load_config(ROOT / "config" / "config.yaml")
    config["bridge"]["in_process"] = True  # worker commands are not what this test is about
    raon_spec = config["models"]["raon"]
    raon_spec["params"] = {**raon_spec["params"], "checkpoint_dir": str(tmp_path / "bundle")}
    (tmp_path / "bundle").mkdir()
    checks = {c.name: c for c in model_checks(config, ["raon"])}
    assert checks["model raon voice"].ok, checks["model raon voice"]
    self_play = checks["model raon self-play"]
    assert not self_play.ok and "suites main" in self_play.detail and "Ray head" in self_play.detail
    assert "FD_MAX_SESSIONS_PER_GPU=2" in self_play.fix and "params.url" in self_play.fix and "gateway_log" in self_play.fix

    monkeypatch.setenv("SPEECHBRAIN_ECAPA_SAVEDIR", str(ecapa_cache(tmp_path / "empty", complete=False)))
    voice = {c.name: c for c in model_checks(config, ["raon"])}["model raon voice"]
    assert not voice.ok and str(tmp_path / "empty" / ECAPA) in voice.detail
    assert "huggingface-cli download speechbrain/spkrec-ecapa-voxceleb" in voice.fix
    shared = ecapa_cache(tmp_path / "shared")  # the env var the gateway is given wins over the worker's own
    raon_spec["params"]["gateway"] = {**raon_spec["params"]["gateway"], "env": {"SPEECHBRAIN_ECAPA_SAVEDIR": str(shared)}}
    assert {c.name: c for c in model_checks(config, ["raon"])}["model raon voice"].ok

    raon_spec["params"] = {k: v for k, v in raon_spec["params"].items() if k != "gateway"}
    raon_spec["params"].update(url="http://127.0.0.1:8080", gateway_log=str(tmp_path / "gateway.log"))
    assert {c.name: c for c in model_checks(config, ["raon"])}["model raon self-play"].ok  # one shared gateway


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
