"""Moshi adapter on a tiny random checkpoint written in moshi's own layout and loaded by its loaders.

The checkpoint folder (config.json naming the files, safetensors weights, a SentencePiece model) goes
through the same loading path as kyutai/moshiko-pytorch-bf16, so the test covers loading, the
streaming frame loop through the real bridge, and the worker process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("moshi")
pytest.importorskip("sentencepiece")
pytest.importorskip("torch")

import moshi_tiny  # noqa: E402

from dyafdb.agents.base import Session  # noqa: E402
from dyafdb.agents.moshi.agent import MoshiAgent  # noqa: E402
from dyafdb.agents.remote import RemoteAgent  # noqa: E402
from dyafdb.agents.scripted import ScriptedAgent  # noqa: E402
from dyafdb.record.bridge import run_bridge  # noqa: E402
from dyafdb.errors import InputError
from dyafdb.errors import InputError  # noqa: E402

@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with moshi_tiny.one_torch_thread():
        yield


PARTNER = {"script": [{"start_s": 0.0, "end_s": 2.0, "text": "hello there my friend", "amplitude": 0.05}]}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return moshi_tiny.write_moshi_checkpoint(tmp_path_factory.mktemp("moshiko-tiny"))


def params(checkpoint: Path, **extra) -> dict:
    return {"checkpoint_dir": str(checkpoint), "device": "cpu", "dtype": "float32", "warmup_frames": 2, **extra}


def sessions(seed: int, window: int) -> dict[str, Session]:
    return {side: Session(conversation_id="c", side=side, prompt="You are Avery.", speaker_name="Avery", seed=seed + i,
                          is_opener=side == "a", window_ticks=window) for i, side in enumerate("ab")}


def record(agent_a, seed: int, window: int = 30):
    return run_bridge({"a": agent_a, "b": ScriptedAgent(PARTNER, "scripted")}, sessions(seed, window),
                      window_ticks=window, lead_in_ticks=19, opener="a")


def test_frame_loop_through_the_bridge(checkpoint):
    agent = MoshiAgent(params(checkpoint), "moshi")
    first = record(agent, seed=5)
    again = record(agent, seed=5)  # the same agent object, reused for a second conversation
    other = record(agent, seed=6)
    audio = first.recording.audio[0]
    assert first.ticks == 30
    frames = audio.reshape(30, 1920)
    assert not frames[0].any()  # the LM's one-step delay: nothing to decode on the first tick
    assert all(np.abs(f).max() > 0 for f in frames[1:])
    assert np.array_equal(audio, again.recording.audio[0])
    assert not np.array_equal(audio, other.recording.audio[0])
    text = [t for t in first.recording.tokens if t.channel == "a"]
    assert text and all(t.text for t in text)  # "▁" alone is a word boundary and stays, as " "
    assert len({t.tick for t in text}) == len(text)
    tok = moshi_tiny.tokenizer((checkpoint / "tiny_spm.model").read_bytes())
    assert not {t.text for t in text} & {tok.id_to_piece(i) for i in range(4)}
    info = first.agent_info["a"]
    assert info["adapter"] == "moshi" and info["extra"]["checkpoint"] == str(checkpoint)
    assert info["sampling"]["temp"] == 0.8 and info["sampling"]["top_k_text"] == 25


def test_first_heard_frame_resets_mimi_like_the_official_server(checkpoint):
    agent = MoshiAgent(params(checkpoint), "moshi")
    resets = []
    original = agent.models.mimi.reset_streaming
    agent.models.mimi.reset_streaming = lambda *a, **k: (resets.append(agent.loop.frame_index), original(*a, **k))[1]
    agent.open(sessions(1, 10)["a"])
    resets.clear()
    for _ in range(3):
        agent.step(np.zeros(1920, dtype=np.float32))
    assert resets == [0]  # once, right after encoding the first frame


def test_sampling_overrides_are_checked(checkpoint):
    with pytest.raises(InputError, match="unknown key.*temperature"):
        MoshiAgent(params(checkpoint, sampling={"temperature": 0.5}), "moshi")
    agent = MoshiAgent(params(checkpoint, sampling={"temp": 0.6}), "moshi")
    assert agent.sampling["temp"] == 0.6 and agent.models.lm_gen.temp == 0.6


def test_missing_weights_say_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(InputError) as err:
        MoshiAgent({"checkpoint_dir": str(tmp_path / "moshiko"), "hf_repo": "kyutai/moshiko-pytorch-bf16"}, "moshi")
    assert "huggingface-cli download kyutai/moshiko-pytorch-bf16" in str(err.value)
    (tmp_path / "partial").mkdir()
    with pytest.raises(InputError, match="lacks .*model.safetensors"):
        MoshiAgent({"checkpoint_dir": str(tmp_path / "partial")}, "moshi")


def test_runs_as_an_out_of_process_worker(checkpoint, tmp_path):
    log = tmp_path / "worker.log"
    remote = RemoteAgent("moshi", "moshi", params(checkpoint), command=[sys.executable, "-m", "dyafdb.agents.worker"],
                         env={"NO_TORCH_COMPILE": "1", "OMP_NUM_THREADS": "1"}, startup_timeout_s=120, step_timeout_s=30, log_path=str(log))
    try:
        result = record(remote, seed=5, window=12)
        local = record(MoshiAgent(params(checkpoint), "moshi"), seed=5, window=12)
    finally:
        remote.shutdown()
    assert result.ticks == 12
    assert np.allclose(result.recording.audio[0], local.recording.audio[0], atol=1e-5)


def test_production_layout_without_config_json(tmp_path):
    """kyutai/moshiko-pytorch-bf16 has no config.json: default file names and moshi's 7B defaults (here tiny)."""
    folder = moshi_tiny.write_moshi_checkpoint(tmp_path / "moshiko", with_config=False)
    assert not (folder / "config.json").exists()
    vocab = moshi_tiny.tokenizer((folder / "tokenizer_spm_32k_3.model").read_bytes()).vocab_size()
    with moshi_tiny.as_default_architecture(vocab):
        agent = MoshiAgent(params(folder), "moshi")
        result = record(agent, seed=5, window=12)
    assert result.ticks == 12 and np.abs(result.recording.audio[0]).max() > 0
    extra = result.agent_info["a"]["extra"]
    assert extra["config"].startswith("none") and extra["checkpoint"] == str(folder)


def test_incomplete_checkpoint_dir_falls_back_to_the_hub_cache(checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    snapshot = moshi_tiny.write_hub_cache(tmp_path / "hf", "kyutai/moshiko-pytorch-bf16", checkpoint, revision="ab" * 20)
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.json").write_text((checkpoint / "config.json").read_text())  # names files it does not hold
    agent = MoshiAgent(params(partial, hf_repo="kyutai/moshiko-pytorch-bf16"), "moshi")
    info = agent.open(sessions(1, 5)["a"])
    assert info.extra["checkpoint"] == str(snapshot) and info.extra["checkpoint_revision"] == "ab" * 20
    with pytest.raises(InputError, match=r"partial lacks .*tiny_lm\.safetensors.*hf_repo kyutai/moshika-pytorch-bf16 is not in "
                                         r"the local Hugging Face cache"):
        MoshiAgent(params(partial, hf_repo="kyutai/moshika-pytorch-bf16"), "moshi")
