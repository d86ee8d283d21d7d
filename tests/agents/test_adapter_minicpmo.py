"""MiniCPM-o adapter with stand-ins of the upstream duplex code: chunking, output FIFO, backpressure,
text stamping, and the settings the official demo uses.

The stand-ins (tests/standins/minicpmo_duplex.py) mirror OpenBMB/minicpm-o-4_5-pytorch-simple-demo @
c7e1660: the unified code's init_unified / DuplexCapability (force_listen_count, listen = 24,000 zeros
with is_listen true, finalize_unit before the next prefill, length_penalty) and MiniCPMODuplex.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import minicpmo_duplex
from minicpmo_duplex import HubMiniCPMO, UnifiedMiniCPMO
from dyafdb.agents.base import AgentError, Session
from dyafdb.agents.minicpmo import DEFAULT_SAMPLING, MiniCPMOAgent
from dyafdb.agents.resample import resample_whole
from dyafdb.agents.scripted import ScriptedAgent
from dyafdb.record.bridge import run_bridge
from dyafdb.errors import InputError

ROLE = "You are Avery. You want a table for two at seven."


chunk_value = minicpmo_duplex.chunk_value


class StandInAgent(MiniCPMOAgent):
    """The real adapter around a stand-in base model; it also records the backlog after every step."""

    stand_in_kwargs: dict = {}
    base_cls = UnifiedMiniCPMO

    def _load_base(self, folder):
        return self.base_cls(**self.stand_in_kwargs)

    def step(self, heard):
        frame = super().step(heard)
        self.backlog.append(self._submitted - self._completed)
        return frame

    def open(self, session):
        self.backlog = []
        return super().open(session)


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    folder = tmp_path / "MiniCPM-o-4_5"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


@pytest.fixture
def ref_wav(tmp_path: Path) -> Path:
    path = tmp_path / "ref.wav"
    sf.write(path, (0.1 * np.sin(np.arange(24000) * 0.05)).astype(np.float32), 24000)
    return path


def run(agent: MiniCPMOAgent, ticks: int, partner_amp: float = 0.05):
    partner = ScriptedAgent({"script": [{"start_s": 0.0, "end_s": ticks * 0.08, "text": "go on", "amplitude": partner_amp}]}, "s")
    sessions = {s: Session(conversation_id="c", side=s, prompt=ROLE, speaker_name="Avery", seed=3, is_opener=s == "a",
                           window_ticks=ticks) for s in "ab"}
    return run_bridge({"a": agent, "b": partner}, sessions, window_ticks=ticks, lead_in_ticks=19, opener="a")


def test_chunks_fifo_backpressure_and_text(ref_wav, ckpt):
    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav)}, "minicpmo")
    ticks = 160
    t0 = time.perf_counter()
    result = run(agent, ticks)
    wall = time.perf_counter() - t0
    model = agent.model

    # prompt: role text inside the framing, inside the demo's duplex system-prompt format; the shipped voice
    prefix = model.prepared["prefix"]
    assert prefix.startswith("<|im_start|>system\n") and prefix.endswith("\n<|audio_start|>") and ROLE in prefix
    assert "not something to read aloud" in prefix
    assert model.prepared["suffix"] == "<|audio_end|><|im_end|>"
    assert model.prepared["prompt_wav_path"] == str(ref_wav)
    assert len(model.prepared["ref_audio"]) == 16000  # the 1 s 24 kHz reference, resampled to 16 kHz
    assert all(kw == {"prompt_wav_path": None, **{k: DEFAULT_SAMPLING[k] for k in (  # as the demo: voice set at prepare
        "decode_mode", "temperature", "top_k", "top_p", "length_penalty", "max_new_speak_tokens_per_chunk")}}
        for kw in model.generate_kwargs)

    # chunk boundaries: 16,000 samples (1 s) of one continuous 16 kHz stream each, the first too (the demo
    # client, capture-processor.js; the model left-pads the first to 1,035 ms), cut the tick it completes
    heard = np.concatenate([np.zeros(1920, np.float32), result.recording.audio[1][:-1920]])
    stream = resample_whole(heard)
    sizes = [len(c) for c in model.received]
    n = len(sizes)
    assert agent._chunks == ticks * 1280 // 16000  # every chunk completed by the last tick was cut
    assert sizes == [16000] * n and n >= agent._chunks - 2  # the rest were in flight at close
    assert np.array_equal(np.concatenate(model.received), stream[: sum(sizes)])
    last_ticks = [e["ticks"][1] for e in agent.events]
    assert last_ticks == [math.ceil(16000 * (k + 1) / 1280) - 1 for k in range(len(last_ticks))]
    spans = np.diff([-1] + last_ticks)
    assert set(spans) <= {12, 13}

    # backpressure: never more than two chunks outstanding when a step returns, and the bridge waited
    assert max(agent.backlog) == 2
    per_chunk = model.prefill_s + model.generate_s
    assert wall >= (n - 2) * per_chunk

    # output FIFO: the model's audio, in order, nothing dropped or repeated; silence only in between
    played = result.recording.audio[0]
    voiced = played[played != 0]
    produced = np.concatenate([o for o in model.outputs if o is not None])
    assert len(voiced) > 3 * 24000 and np.array_equal(voiced, produced[: len(voiced)])
    frames = played.reshape(ticks, 1920)
    for f in frames:  # model audio is contiguous within a frame
        nz = np.flatnonzero(f)
        assert len(nz) == 0 or nz[-1] - nz[0] == len(nz) - 1

    # text: each chunk's words on the ticks its own audio plays (chunk 7 had none: next tick)
    tokens = [t for t in result.recording.tokens if t.channel == "a"]
    spoken = [k for k, r in enumerate(model.results) if not r["is_listen"]]
    assert [t.text for t in tokens] == [f"w{k}{x}" for k in spoken for x in "abc"][: len(tokens)]
    for t in tokens:
        k = int(t.text[1:-1])
        if model.outputs[k] is not None:
            codes = np.floor((frames[t.tick][frames[t.tick] != 0] - 0.25) / 0.01 + 1e-3).astype(int)
            assert k in set(codes.tolist()), (t, set(codes.tolist()))
    assert len({t.tick for t in tokens if t.text.startswith("w7")}) == 1


def test_a_failing_chunk_stops_the_run_with_the_reason(ref_wav, ckpt):
    StandInAgent.stand_in_kwargs = {"fail_at": 2}
    try:
        agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav)}, "minicpmo")
        with pytest.raises(AgentError, match="illegal memory access"):
            run(agent, 80)
    finally:
        StandInAgent.stand_in_kwargs = {}
    assert agent._thread is None  # closed by the bridge


def test_a_stuck_model_fails_after_chunk_timeout(ref_wav, ckpt):
    StandInAgent.stand_in_kwargs = {"prefill_s": 0.0, "generate_s": 0.3}
    try:
        agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "chunk_timeout_s": 0.1}, "minicpmo")
        with pytest.raises(AgentError, match="fell behind by 3 chunks"):
            run(agent, 60)
    finally:
        StandInAgent.stand_in_kwargs = {}


def test_bad_params_and_missing_files(ref_wav, ckpt, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="sampling: unknown key.*temp\\b"):
        StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "sampling": {"temp": 0.5}}, "minicpmo")
    with pytest.raises(InputError, match="ref_audio.*does not exist"):
        StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(tmp_path / "none.wav")}, "minicpmo")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(InputError, match="huggingface-cli download openbmb/MiniCPM-o-4_5"):
        MiniCPMOAgent({"checkpoint_dir": str(tmp_path / "m"), "hf_repo": "openbmb/MiniCPM-o-4_5"}, "minicpmo")


def test_official_demo_settings_listen_first_and_finalize(ref_wav, ckpt):
    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav)}, "minicpmo")
    result = run(agent, 80)
    model = agent.model
    assert model.kwargs == {"force_listen_count": 3}  # init_unified(duplex_config=...) as the demo passes it
    listen = model.results[:3]
    assert all(r["is_listen"] and r["text"] == "" and np.array_equal(r["audio_waveform"], np.zeros(24000)) for r in listen)
    assert not model.results[3]["is_listen"]
    assert model.finalized >= len(model.results) - 1  # finalize_unit after every generate, before the next prefill
    assert {kw["length_penalty"] for kw in model.generate_kwargs} == {1.1}
    info = result.agent_info["a"]
    assert info["sampling"]["length_penalty"] == 1.1 and info["extra"]["duplex"]["force_listen_count"] == 3
    assert info["extra"]["speak_first"] is False and info["extra"]["system_prompt_wrapped_by"] == "adapter"
    first_voiced = int(np.flatnonzero(result.recording.audio[0])[0]) / 1920
    assert first_voiced > 3 * 12.5  # three listening chunks (about 3 s of input) before any speech


def test_listening_chunks_queue_no_playback_as_the_demo_client(ref_wav, ckpt):
    """duplex-session.js _handleResult plays a result's audio only when it is not a listen: the 1 s of
    zeros a listening chunk returns must not hold back the speech computed right after it."""
    from dyafdb.agents.minicpmo import Chunk

    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav)}, "minicpmo")
    agent.open(Session(conversation_id="c", side="a", prompt=ROLE, speaker_name="Avery", seed=3, is_opener=True,
                       window_ticks=10))
    try:
        # a listen and a speak land together (the model caught up on a backlog)
        agent._deliver(Chunk(0, np.zeros(16000, np.float32), 0, 0, 12),
                       {"is_listen": True, "text": "", "audio_waveform": np.zeros(24000, np.float32)})
        agent._deliver(Chunk(1, np.zeros(16000, np.float32), 16000, 12, 25),
                       {"is_listen": False, "text": "hello", "audio_waveform": np.full(24000, 0.3, np.float32)})
        audio, words = agent._pop_frame()
    finally:
        agent.close()
    assert audio.min() == np.float32(0.3) and words == ["hello"]  # speech on the next tick, not 12.5 ticks of zeros later

    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav)}, "minicpmo")
    played = run(agent, 80).recording.audio[0]
    speaks = next(e for e in agent.events if not e["is_listen"])
    assert int(np.flatnonzero(played)[0]) // 1920 <= speaks["delivered_tick"] + 1  # plays the tick it is computed
    produced = np.concatenate([o for o in agent.model.outputs if o is not None])
    assert np.array_equal(played[played != 0], produced[: np.count_nonzero(played)])
def test_duplex_mode_is_set_with_the_processor_mode_enum(ref_wav, ckpt):
    """modeling_minicpmo_unified.py set_mode compares with ProcessorMode: the string "duplex" would skip the
    duplex reset (upstream raises nothing), so the adapter passes ProcessorMode.DUPLEX as the demo server does."""
    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav)}, "minicpmo")
    base = agent.model.model
    assert base._current_mode is minicpmo_duplex.ProcessorMode.DUPLEX
    assert agent.model.streaming_state_resets == 1 and base.session_resets == 2  # STREAMING at init, then DUPLEX


def test_length_penalty_is_sent_only_where_the_code_takes_it(ref_wav, ckpt):
    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "sampling": {"length_penalty": 1.3}}, "minicpmo")
    run(agent, 30)
    assert {kw["length_penalty"] for kw in agent.model.generate_kwargs} == {1.3}

    class HubAgent(StandInAgent):
        base_cls = HubMiniCPMO  # MiniCPMODuplex: streaming_generate has no length_penalty

    hub = HubAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "code": "hub"}, "minicpmo")
    assert "length_penalty" not in hub.sampling and hub.model.force_listen_count == 3
    run(hub, 30)  # nothing it cannot take reaches streaming_generate
    with pytest.raises(InputError, match="takes no length_penalty"):
        HubAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "code": "hub", "sampling": {"length_penalty": 1.2}},
                 "minicpmo")


def test_role_prompt_is_never_wrapped_twice(ref_wav, ckpt):
    class WrappingAgent(StandInAgent):
        base_cls = HubMiniCPMO
        stand_in_kwargs = {"flavour": "wraps"}

    agent = WrappingAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "code": "hub"}, "minicpmo")
    info = agent.open(Session(conversation_id="c", side="a", prompt=ROLE, speaker_name="Avery", seed=3, is_opener=True,
                              window_ticks=10))
    agent.close()
    prefix = agent.model.prepared["prefix"]
    assert prefix.count("<|im_start|>system") == 1 and ROLE in prefix
    assert info.extra["system_prompt_wrapped_by"] == "model"


def test_checkpoint_revision_and_code_commit_are_pinned_and_recorded(ref_wav, ckpt, tmp_path):
    from dyafdb.agents.minicpmo import PINNED_CODE_COMMIT, check_code_checkout

    meta = ckpt / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True)
    (meta / "config.json.metadata").write_text("a" * 40 + "\netag\n1.0\n")
    agent = StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "revision": "a" * 40}, "minicpmo")
    info = agent.open(Session(conversation_id="c", side="a", prompt=ROLE, speaker_name="Avery", seed=3, is_opener=True,
                              window_ticks=10))
    agent.close()
    assert info.extra["checkpoint_revision"] == "a" * 40
    with pytest.raises(InputError, match="pins bbbb"):
        StandInAgent({"checkpoint_dir": str(ckpt), "ref_audio": str(ref_wav), "revision": "b" * 40}, "minicpmo")

    code = tmp_path / "simple-demo"
    (code / "MiniCPMO45").mkdir(parents=True)
    (code / "MiniCPMO45" / "modeling_minicpmo_unified.py").write_text("")
    (code / ".git" / "refs" / "heads").mkdir(parents=True)
    (code / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (code / ".git" / "refs" / "heads" / "main").write_text("c" * 40 + "\n")
    with pytest.raises(InputError, match="checked against OpenBMB/minicpm-o-4_5-pytorch-simple-demo @ c7e1660"):
        check_code_checkout(code, {}, "minicpmo")
    assert check_code_checkout(code, {"allow_other_code": True}, "minicpmo")["code_commit"] == "c" * 40
    (code / ".git" / "refs" / "heads" / "main").write_text(PINNED_CODE_COMMIT + "\n")
    assert check_code_checkout(code, {}, "minicpmo")["code_commit"] == PINNED_CODE_COMMIT
