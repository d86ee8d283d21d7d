"""MiniCPM-o adapter with a stand-in model: chunking, output FIFO, backpressure, text stamping.

The stand-in has MiniCPMODuplex's method signatures (prepare / streaming_prefill /
streaming_generate / set_session_stop, and its chunk-size attributes), buffers audio the way the
real ``streaming_prefill`` does, takes realistic compute time per chunk, and returns output whose
sample values say which chunk and which sample they are, so any dropped or duplicated sample shows.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from dyafdb.agents.base import AgentError, Session
from dyafdb.agents.minicpmo import DEFAULT_SAMPLING, MiniCPMOAgent
from dyafdb.agents.resample import resample_whole
from dyafdb.agents.scripted import ScriptedAgent
from dyafdb.record.bridge import run_bridge
from dyafdb.errors import InputError

ROLE = "You are Avery. You want a table for two at seven."


def chunk_value(k: int, i: np.ndarray) -> np.ndarray:
    """Never zero; encodes chunk k and sample i exactly in float32."""
    return (0.25 + 0.01 * k + (i % 4096) * 2.0 ** -20).astype(np.float32)


class StandInDuplex:
    """MiniCPMODuplex's duplex surface with the real signatures; compute is time.sleep."""

    CHUNK_MS = 1000
    FIRST_CHUNK_MS = 1035
    SAMPLE_RATE = 16000

    def __init__(self, prefill_s: float = 0.02, generate_s: float = 0.06, fail_at: int | None = None):
        self.prefill_s, self.generate_s, self.fail_at = prefill_s, generate_s, fail_at
        self.prepared: dict = {}
        self.received: list[np.ndarray] = []
        self.generate_kwargs: list[dict] = []
        self.outputs: list[np.ndarray | None] = []
        self.busy = threading.Lock()
        self.stopped = False

    def prepare(self, prefix_system_prompt=None, suffix_system_prompt=None, ref_audio=None, prompt_wav_path=None,
                context_previous_marker="\n\nprevious: "):
        self.prepared = dict(prefix=prefix_system_prompt, suffix=suffix_system_prompt, ref_audio=ref_audio,
                             prompt_wav_path=prompt_wav_path)
        self.buffer = np.zeros(0, dtype=np.float32)
        self.chunk_idx = 0
        self.stopped = False
        return (prefix_system_prompt or "") + "[audio embedding]" + (suffix_system_prompt or "")

    def streaming_prefill(self, audio_waveform=None, frame_list=None, text_list=None, max_slice_nums=1,
                          batch_vision_feed=False):
        assert self.busy.acquire(blocking=False), "prefill while another chunk is being computed"
        try:
            time.sleep(self.prefill_s)
            self.received.append(np.array(audio_waveform, copy=True))
            self.buffer = np.concatenate([self.buffer, audio_waveform])
            if self.chunk_idx == 0:  # the real model left-pads a short first chunk to 1,035 ms ...
                need_pad = self.FIRST_CHUNK_MS * 16 - len(self.buffer)
                if need_pad > 0:
                    self.buffer = np.concatenate([np.zeros(need_pad, np.float32), self.buffer])
                need = (self.FIRST_CHUNK_MS * 16 // 160) * 160  # ... and consumes a hop-aligned 16,480
            else:
                need = self.CHUNK_MS * 16
            if len(self.buffer) < need:
                return {"success": False, "reason": f"audio not enough: need {need} samples, only {len(self.buffer)}"}
            self.buffer = self.buffer[need:]
            self.chunk_idx += 1
            return {"success": True, "reason": "", "cost_all": self.prefill_s}
        finally:
            self.busy.release()

    def streaming_generate(self, prompt_wav_path=None, max_new_speak_tokens_per_chunk=20, decode_mode="sampling",
                           temperature=0.7, top_k=20, top_p=0.8, listen_prob_scale=1.0, listen_top_k=None,
                           text_repetition_penalty=1.05, text_repetition_window_size=512):
        assert self.busy.acquire(blocking=False)
        try:
            time.sleep(self.generate_s)
            k = self.chunk_idx - 1
            if k == self.fail_at:
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            self.generate_kwargs.append(dict(prompt_wav_path=prompt_wav_path, decode_mode=decode_mode, temperature=temperature,
                                             top_k=top_k, top_p=top_p))
            # 1 s of audio per chunk, like the real model; chunk 2 flushes a longer buffer, chunk 4 has no audio yet.
            n = {2: 24000 + 960, 4: 0}.get(k, 24000)
            audio = chunk_value(k, np.arange(n)) if n else None
            self.outputs.append(audio)
            return {"is_listen": False, "text": f"w{k}a w{k}b w{k}c", "audio_waveform": audio, "end_of_turn": False,
                    "current_time": k, "cost_all": self.prefill_s + self.generate_s}
        finally:
            self.busy.release()

    def set_session_stop(self):
        self.stopped = True


class StandInAgent(MiniCPMOAgent):
    """The real adapter around the stand-in; it also records the backlog after every step."""

    stand_in_kwargs: dict = {}

    def _load_model(self):
        return StandInDuplex(**self.stand_in_kwargs)

    def step(self, heard):
        frame = super().step(heard)
        self.backlog.append(self._submitted - self._completed)
        return frame

    def open(self, session):
        self.backlog = []
        return super().open(session)


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


def test_chunks_fifo_backpressure_and_text(ref_wav):
    agent = StandInAgent({"ref_audio": str(ref_wav)}, "minicpmo")
    ticks = 120
    t0 = time.perf_counter()
    result = run(agent, ticks)
    wall = time.perf_counter() - t0
    model: StandInDuplex = agent.model

    # prompt: role text inside the framing, inside the demo's duplex system-prompt format; the shipped voice
    prefix = model.prepared["prefix"]
    assert prefix.startswith("<|im_start|>system\n") and prefix.endswith("\n<|audio_start|>") and ROLE in prefix
    assert "not something to read aloud" in prefix
    assert model.prepared["suffix"] == "<|audio_end|><|im_end|>"
    assert model.prepared["prompt_wav_path"] == str(ref_wav)
    assert len(model.prepared["ref_audio"]) == 16000  # the 1 s 24 kHz reference, resampled to 16 kHz
    assert all(kw == {"prompt_wav_path": str(ref_wav), **{k: DEFAULT_SAMPLING[k] for k in ("decode_mode", "temperature", "top_k", "top_p")}}
               for kw in model.generate_kwargs)

    # chunk boundaries: 1,035 ms then 1 s of one continuous 16 kHz stream, cut the tick it completes
    heard = np.concatenate([np.zeros(1920, np.float32), result.recording.audio[1][:-1920]])
    stream = resample_whole(heard)
    sizes = [len(c) for c in model.received]
    n = len(sizes)
    assert agent._chunks == (ticks * 1280 - 16560) // 16000 + 1  # every chunk completed by the last tick was cut
    assert sizes == [16560] + [16000] * (n - 1) and n >= agent._chunks - 2  # the rest were in flight at close
    assert np.array_equal(np.concatenate(model.received), stream[: sum(sizes)])
    last_ticks = [e["ticks"][1] for e in agent.events]
    assert last_ticks == [math.ceil((16560 + 16000 * k) / 1280) - 1 for k in range(len(last_ticks))]
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
    assert len(voiced) > 5 * 24000 and np.array_equal(voiced, produced[: len(voiced)])
    frames = played.reshape(ticks, 1920)
    for f in frames:  # a frame is all model audio, or silence, or a flushed tail followed by zeros
        nz = np.flatnonzero(f)
        assert len(nz) == 0 or nz[-1] == len(nz) - 1

    # text: each chunk's words on the ticks its own audio plays (chunk 4 had none: next tick)
    tokens = [t for t in result.recording.tokens if t.channel == "a"]
    assert [t.text for t in tokens] == [f"w{k}{x}" for k in range(len(model.outputs)) for x in "abc"][: len(tokens)]
    for t in tokens:
        k = int(t.text[1:-1])
        if model.outputs[k] is not None:
            codes = np.floor((frames[t.tick][frames[t.tick] != 0] - 0.25) / 0.01 + 1e-3).astype(int)
            assert k in set(codes.tolist()), (t, set(codes.tolist()))
    assert len({t.tick for t in tokens if t.text.startswith("w4")}) == 1


def test_a_failing_chunk_stops_the_run_with_the_reason(ref_wav):
    StandInAgent.stand_in_kwargs = {"fail_at": 2}
    try:
        agent = StandInAgent({"ref_audio": str(ref_wav)}, "minicpmo")
        with pytest.raises(AgentError, match="illegal memory access"):
            run(agent, 80)
    finally:
        StandInAgent.stand_in_kwargs = {}
    assert agent._thread is None  # closed by the bridge


def test_a_stuck_model_fails_after_chunk_timeout(ref_wav):
    StandInAgent.stand_in_kwargs = {"prefill_s": 0.0, "generate_s": 0.3}
    try:
        agent = StandInAgent({"ref_audio": str(ref_wav), "chunk_timeout_s": 0.1}, "minicpmo")
        with pytest.raises(AgentError, match="fell behind by 3 chunks"):
            run(agent, 60)
    finally:
        StandInAgent.stand_in_kwargs = {}


def test_bad_params_and_missing_files(ref_wav, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="sampling: unknown key.*temp\\b"):
        StandInAgent({"ref_audio": str(ref_wav), "sampling": {"temp": 0.5}}, "minicpmo")
    with pytest.raises(InputError, match="ref_audio.*does not exist"):
        StandInAgent({"ref_audio": str(tmp_path / "none.wav")}, "minicpmo")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(InputError, match="huggingface-cli download openbmb/MiniCPM-o-4_5"):
        MiniCPMOAgent({"checkpoint_dir": str(tmp_path / "m"), "hf_repo": "openbmb/MiniCPM-o-4_5"}, "minicpmo")
