"""PersonaPlex adapter on a tiny random PersonaPlex-shaped model (moshi's classes, the fork's API).

The fork itself is not installable here; ``personaplex_fork.ForkLMGen`` layers its interface over
stock moshi (differences documented there). What is tested is the adapter: the fork's documented
call sequence for the hybrid system prompt, the per-tick frame loop through the real bridge,
padding filtered from the text channel, and seeding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("moshi")
pytest.importorskip("sentencepiece")
torch = pytest.importorskip("torch")

import moshi_tiny  # noqa: E402
from personaplex_fork import ForkLMGen, build_fork_stack  # noqa: E402

from dyafdb.agents.base import Session  # noqa: E402
from dyafdb.agents.moshi.stack import MoshiModels  # noqa: E402
from dyafdb.agents.moshi.personaplex import PersonaPlexAgent, wrap_with_system_tags  # noqa: E402
from dyafdb.agents.scripted import ScriptedAgent  # noqa: E402
from dyafdb.record.bridge import run_bridge  # noqa: E402
from dyafdb.errors import InputError
from dyafdb.errors import InputError  # noqa: E402

@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with moshi_tiny.one_torch_thread():
        yield


PROTO = moshi_tiny.train_tokenizer()
ROLE = "You are Avery, a friendly host. You want to book the table."
SHORT_ROLE = "you enjoy a good conversation"  # few tokens of the tiny vocabulary: a short prompt phase


class TinyPersonaPlex(PersonaPlexAgent):
    """The real adapter; only the 7B checkpoint load is replaced by the tiny fork-shaped model."""

    def _load_models(self) -> MoshiModels:
        torch.manual_seed(0)
        mimi, lm, tok = build_fork_stack(PROTO)
        lm_gen = self.make_lm_gen(ForkLMGen, lm, mimi, "cpu")
        calls = lm_gen.calls
        original = mimi.reset_streaming

        def logged_reset(*args, **kwargs):
            calls.append(("reset_mimi",))
            return original(*args, **kwargs)

        mimi.reset_streaming = logged_reset
        return MoshiModels(mimi=mimi, lm_gen=lm_gen, tokenizer=tok, device=torch.device("cpu"), extra={"checkpoint": "tiny"})


@pytest.fixture(scope="module")
def voice_pt(tmp_path_factory) -> Path:
    """A released-style .pt voice, made the way the fork makes one: a wav prompt run once with saving on."""
    import soundfile as sf

    folder = tmp_path_factory.mktemp("voices")
    wav = folder / "VOICE.wav"
    t = np.arange(24000 * 0.4) / 24000
    sf.write(wav, (0.2 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), 24000)
    agent = TinyPersonaPlex({"voice_prompt": "VOICE.wav", "voice_prompt_dir": str(folder), "warmup_frames": 1}, "pp")
    agent.models.lm_gen.save_voice_prompt_embeddings = True
    agent.open(session("a", 1))
    assert (folder / "VOICE.pt").exists()
    return folder / "VOICE.pt"


def session(side: str, seed: int, prompt: str = ROLE, window: int = 30) -> Session:
    return Session(conversation_id="c1", side=side, prompt=prompt, speaker_name="Avery", seed=seed,
                   is_opener=side == "a", window_ticks=window)


def make_agent(voice: Path, **params) -> TinyPersonaPlex:
    return TinyPersonaPlex({"voice_prompt": voice.name, "voice_prompt_dir": str(voice.parent), **params}, "personaplex")


def test_prompt_phase_follows_the_forks_call_sequence(voice_pt):
    agent = make_agent(voice_pt, silence_s=0.5)
    lm_gen = agent.models.lm_gen
    n_voice = len(lm_gen.voice_prompt_embeddings)
    assert lm_gen.audio_silence_frame_cnt == 6  # int(0.5 s * 12.5 Hz), as the fork's server
    assert lm_gen._sample_rate == 24000  # Mimi's rate, not the fork's 32 kHz default
    lm_gen.calls.clear()
    info = agent.open(session("a", 7))
    expected_tokens = agent.models.tokenizer.encode(wrap_with_system_tags(ROLE))
    assert wrap_with_system_tags(ROLE) == f"<system> {ROLE} <system>"
    calls = lm_gen.calls
    assert calls[0] == ("set_text_prompt", expected_tokens)
    assert calls[1:3] == [("reset_mimi",), ("reset_lm",)]
    phases = [c[1] for c in calls if c[0] == "phase"]
    assert phases == ["voice", "silence", "text", "silence"]
    i_voice, i_sil1, i_text, i_sil2 = [i for i, c in enumerate(calls) if c[0] == "phase"]
    assert [c[0] for c in calls[i_voice + 1:i_sil1]] == ["step_embeddings"] * n_voice
    assert calls[i_sil1 + 1:i_text] == [("step", True, True, 3)] * 6
    assert calls[i_text + 1:i_sil2] == [("step", True, True, t) for t in expected_tokens]
    assert calls[i_sil2 + 1:i_sil2 + 7] == [("step", True, True, 3)] * 6
    assert calls[i_sil2 + 7:] == [("reset_mimi",)]  # Mimi reset after the prompt, before the clock
    assert info.voice == "VOICE.pt" and info.extra["text_prompt_tokens"] == len(expected_tokens)
    assert info.sampling == {"use_sampling": True, "temp": 0.8, "temp_text": 0.7, "top_k": 250, "top_k_text": 25}
    # the conversation: one user-stream step per tick, nothing forced on the agent's side
    lm_gen.calls.clear()
    frame = agent.step(np.zeros(1920, dtype=np.float32))
    assert lm_gen.calls == [("step", True, False, None)]
    assert frame.audio.shape == (1920,)  # the prompt already filled the delay: audio from tick 0


def test_wav_voice_prompt_goes_through_mimi(tmp_path):
    import soundfile as sf

    sf.write(tmp_path / "v.wav", np.full(3000, 0.1, dtype=np.float32), 16000)  # resampled to 24 kHz, 4500 samples
    agent = TinyPersonaPlex({"voice_prompt": "v.wav", "voice_prompt_dir": str(tmp_path), "warmup_frames": 1}, "pp")
    lm_gen = agent.models.lm_gen
    assert ("load_voice_prompt", str(tmp_path / "v.wav")) in lm_gen.calls
    lm_gen.calls.clear()
    info = agent.open(session("b", 3, prompt=""))  # the fork's own scripts would set None here and raise
    assert ("set_text_prompt", []) in lm_gen.calls  # no role text: an empty text phase
    assert info.extra["text_prompt_tokens"] == 0
    voice_steps = [c for c in lm_gen.calls if c[:3] == ("step", True, True) and c[3] == 3]
    assert len(voice_steps) == 3 + 6 + 6  # ceil(4500 / 1920) voice frames + two silences


def test_frame_loop_through_the_bridge_is_seeded_and_filters_padding(voice_pt):
    partner = {"script": [{"start_s": 0.0, "end_s": 1.5, "text": "hello there friend", "amplitude": 0.05}]}
    runs = []
    agent = make_agent(voice_pt)  # one model, reused for three conversations (as a worker does)
    for seed in (11, 11, 12):
        agents = {"a": agent, "b": ScriptedAgent(partner, "scripted")}
        sessions = {"a": session("a", seed, prompt=SHORT_ROLE, window=36), "b": session("b", 1, window=36)}
        runs.append(run_bridge(agents, sessions, window_ticks=36, lead_in_ticks=19, opener="a"))
    first, again, other = runs
    assert first.ticks == 36 and first.end_reason == "window"
    audio_a = first.recording.audio[0]
    assert np.all(np.isfinite(audio_a)) and np.abs(audio_a).max() > 0
    assert np.array_equal(audio_a, again.recording.audio[0])  # same seed: same conversation
    assert not np.array_equal(audio_a, other.recording.audio[0])
    tok = moshi_tiny.tokenizer(PROTO)
    pads = {"", tok.id_to_piece(0), tok.id_to_piece(3), "<pad>", "<unk>", "<s>", "</s>"}
    texts = [t.text for t in first.recording.tokens if t.channel == "a"]
    assert texts and not set(texts) & pads
    ticks = [t.tick for t in first.recording.tokens if t.channel == "a"]
    assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks)  # at most one text token per tick
    assert first.agent_info["a"]["adapter"] == "personaplex"


def test_missing_weights_say_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(InputError) as err:
        PersonaPlexAgent({"checkpoint_dir": str(tmp_path / "nope"), "hf_repo": "nvidia/personaplex-7b-v1"}, "personaplex")
    msg = str(err.value)
    assert "personaplex" in msg and "huggingface-cli download nvidia/personaplex-7b-v1" in msg
    assert str(tmp_path / "nope") in msg and "licence" in msg
