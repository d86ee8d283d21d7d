"""The PersonaPlex engine against NVIDIA's fork itself, on the same tiny checkpoint (opt-in).

Needs the fork's source: set ``DYAFDB_PERSONAPLEX_FORK`` to the ``moshi/`` folder of a checkout of
NVIDIA/personaplex (3428dfd), e.g. ``git archive 3428dfd moshi/moshi | tar -x -C /tmp/pp``, then
``DYAFDB_PERSONAPLEX_FORK=/tmp/pp/moshi``. The fork runs in a subprocess (it installs under the same
import name, ``moshi``) with this environment's torch; skipped when the variable is unset, as in CI.

One session, greedy decoding, fixed heard frames: the fork loads the fork-layout checkpoint with its
own ``get_moshi_lm``/``get_mimi`` and runs its own prompt phase and LMGen; the engine loads it into
moshi 0.2.13 with ``personaplex_load`` and runs ``BatchedPersonaPlex``. Same text and audio tokens
every frame, audio within float tolerance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

FORK = os.environ.get("DYAFDB_PERSONAPLEX_FORK")
pytestmark = pytest.mark.skipif(not FORK, reason="DYAFDB_PERSONAPLEX_FORK (the fork's moshi/ source folder) not set")

pytest.importorskip("moshi")
pytest.importorskip("sentencepiece")
torch = pytest.importorskip("torch")

import moshi_tiny  # noqa: E402
from test_engine_personaplex_load import ROLES, params, session, tiny_fork_config, write_fork_checkpoint  # noqa: E402,F401

from dyafdb.agents.engine.models import make_engine  # noqa: E402
from dyafdb.agents.moshi import personaplex as adapter  # noqa: E402
from dyafdb.agents.moshi import personaplex_load as load  # noqa: E402
from dyafdb.agents.moshi.personaplex import wrap_with_system_tags  # noqa: E402

TICKS = 12


def test_the_engine_gives_the_forks_own_tokens(tmp_path, tiny_fork_config):
    folder = write_fork_checkpoint(tmp_path / "ckpt", seed=7)
    gen = np.random.default_rng(3)
    t = np.arange(1920 * TICKS) / 24000.0
    heard = (0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 0.7 * t))
             + 0.05 * gen.standard_normal(t.size)).astype(np.float32).reshape(TICKS, 1920)
    np.save(tmp_path / "frames.npy", heard)
    engine = make_engine("personaplex", params(folder, sampling={"use_sampling": False}, silence_s=0.24), "pp", 4)
    prompt = list(engine.batched.tokenizer.encode(wrap_with_system_tags(ROLES["a"])))
    spec = {"lm_kwargs": {**load.FORK_LM_KWARGS, "dep_q": 8, "depformer_causal": True},  # the fork's get_moshi_lm sets 16
            "mimi": moshi_tiny.tiny_mimi_config(), "silence": list(load.SILENCE_TOKENS), "sine": list(load.SINE_TOKENS),
            "moshi_path": str(folder / adapter.MOSHI_NAME), "mimi_path": str(folder / adapter.MIMI_NAME),
            "voice": str(folder / "voices" / "NATF2.pt"), "silence_frames": engine.batched.audio_silence_frame_cnt,
            "prompt_tokens": prompt, "frames": str(tmp_path / "frames.npy")}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": FORK, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("personaplex_fork_run.py")),
                           str(tmp_path / "spec.json"), str(tmp_path / "fork.npz")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    fork = np.load(tmp_path / "fork.npz")
    assert str(fork["fork"]).startswith(str(Path(FORK).resolve())) or FORK in str(fork["fork"])

    slot, info = engine.open(session("x", "a"))
    assert info.extra["text_prompt_tokens"] == len(prompt)
    tokens, audio = [], []
    try:
        for frame in heard:
            out = engine.step({slot: frame})[slot]
            tokens.append(engine.batched.last_tokens[slot])
            audio.append(out.audio)
    finally:
        engine.batched.close()
    tokens = np.stack(tokens)
    assert (fork["tokens"] >= 0).all() and len({tuple(row) for row in fork["tokens"].tolist()}) > TICKS // 2  # not degenerate
    np.testing.assert_array_equal(tokens, fork["tokens"])
    np.testing.assert_allclose(np.concatenate(audio), fork["audio"], rtol=0, atol=1e-4)


def run_fork(tmp_path: Path, spec: dict, check: bool = True) -> subprocess.CompletedProcess:
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": FORK, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("personaplex_fork_run.py")),
                           str(tmp_path / "spec.json"), str(tmp_path / "fork.npz")], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 or not check, done.stderr[-4000:]
    return done


def test_the_forks_weight_patches_are_restated_exactly(tmp_path, tiny_fork_config):
    """A Moshi-initialised 8-step depformer: without depformer_emb.7 (which the patches cannot supply)
    the fork fails too; with it, the fork's get_moshi_lm and personaplex_load leave the same weights."""
    from safetensors.torch import load_file, save_file
    from test_engine_personaplex_load import VOCAB, fused

    torch.manual_seed(4)
    state = fused(moshi_tiny.build_lm(VOCAB, dep_q=8).state_dict())
    path = tmp_path / adapter.MOSHI_NAME
    save_file(state, str(path))
    spec = {"lm_kwargs": {**load.FORK_LM_KWARGS, "depformer_causal": True}, "mimi": moshi_tiny.tiny_mimi_config(),
            "silence": list(load.SILENCE_TOKENS), "sine": list(load.SINE_TOKENS), "moshi_path": str(path),
            "dump_state": str(tmp_path / "fork_state.safetensors")}
    out = run_fork(tmp_path, {**spec, "mimi_path": None}, check=False)
    assert out.returncode != 0 and "Missing %s depformer_emb.7.weight" in out.stdout
    assert "Cannot copy out of meta tensor" in out.stderr  # the fork's model.to() after its strict=False load

    state["depformer_emb.7.weight"] = torch.randn(moshi_tiny.CARD + 1, 32)
    save_file(state, str(path))
    out = run_fork(tmp_path, {**spec, "mimi_path": None})
    assert json.loads(out.stdout.strip().splitlines()[-1])["meta"] == []
    forks = load_file(str(tmp_path / "fork_state.safetensors"))
    ours = fused(load.load_fork_lm(path, "cpu", torch.float32)[0].state_dict())
    assert set(forks) == set(ours)
    for name in forks:
        assert torch.equal(forks[name], ours[name]), name
