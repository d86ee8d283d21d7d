"""A template adapter: copy this file to start your own (docs/adding-a-model.md walks through it).

It wraps a toy "model" so that it runs anywhere and CI can record it against the embedded CPU agent:
the model speaks one line of its role at a time as a buzzy tone at its own sample rate (16 kHz,
like many speech models), writes the line's words on its text channel while it speaks, and takes
the floor when its partner has been quiet for a while. Replace the ``ToyModel`` parts with your
model's calls; keep the adapter's duties, which are the same for every model:

1. ``__init__(params, model_name)``: load the weights once per worker (a worker hosts many
   conversations). Read only local files: nothing may be downloaded at run time. A missing file is
   an ``InputError`` naming the file and where to put it.
2. ``open(session)``: reset per-conversation state, condition the model on ``session.prompt`` (the
   situation, the side's role and, for the opener, the opening instruction), seed its sampling from
   ``session.seed``, and return an ``AgentInfo`` that says what the model was *really* given
   (voice, sampling, checkpoint revision, speak-first): it lands in meta.json and a reader trusts it.
3. ``step(heard)``: 1,920 float32 samples at 24 kHz in (what the partner said on the previous tick),
   exactly 1,920 samples at 24 kHz out, plus the text tokens of this tick. Resample and buffer here;
   never change the clock. A model slower than real time simply blocks here.
4. ``close()``: drop the conversation's state; keep the weights.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.agents.registry import adapter
from dyafdb.agents.resample import StreamResampler
from dyafdb.polyphase import resample
from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS, SAMPLE_RATE
from dyafdb.errors import InputError

MODEL_RATE = 16_000  # the toy model's own rate; the bridge only knows 24 kHz frames
WORD_S = 0.32  # how long the toy model takes to say one word


class ToyModel:
    """Stands for your model: a 'checkpoint' (a JSON file, or built-in defaults) and a streaming step."""

    def __init__(self, checkpoint: dict[str, Any]):
        self.pitch_hz = float(checkpoint.get("pitch_hz", 140.0))
        self.patience_s = float(checkpoint.get("patience_s", 0.8))

    def speech(self, words: int, rng: np.random.Generator) -> np.ndarray:
        """``words`` words of buzzy voiced sound at MODEL_RATE, with a syllable envelope."""
        n = int(words * WORD_S * MODEL_RATE)
        t = np.arange(n) / MODEL_RATE
        pitch = self.pitch_hz * (1 + 0.05 * rng.standard_normal())
        wave = sum(np.sin(2 * np.pi * pitch * k * t) / k for k in range(1, 6))
        envelope = 0.5 * (1 - np.cos(2 * np.pi * (t % WORD_S) / WORD_S))
        return (0.15 * wave * envelope).astype(np.float32)


@adapter("template")
class TemplateAgent:
    # The bridge may step both sides on threads at once; a real model whose step releases the GIL
    # (torch, onnxruntime) gains from that. This toy's step is microseconds, so it says no.
    concurrent_step = False

    def __init__(self, params: dict[str, Any], model_name: str = "template"):
        self.model_name = model_name
        self.params = dict(params)
        checkpoint = params.get("checkpoint")
        if checkpoint:
            path = Path(str(checkpoint)).expanduser()
            if not path.is_file():
                raise InputError(f"models.{model_name}.params.checkpoint: {path} not found; put the checkpoint "
                                 f"there or fix the path in your config")
            self.checkpoint = json.loads(path.read_text())
        else:
            self.checkpoint = {}
        self.model = ToyModel(self.checkpoint)  # loaded once, reused by every conversation
        self.from_bridge = None

    def open(self, session: Session) -> AgentInfo:
        # Conversation state lives in the adapter and is rebuilt here: nothing carries over.
        self.rng = np.random.default_rng(session.seed)
        self.lines = [line for line in session.prompt.replace("\n", " ").split(".") if line.strip()] or ["hello"]
        self.pending = np.zeros(0, dtype=np.float32)  # 24 kHz samples still to say
        self.words: list[tuple[int, str]] = []  # (tick to write it, word)
        self.tick = 0
        self.quiet_ticks = 0
        # A streaming resampler keeps its filter state across frames, so listening is sample-exact.
        self.from_bridge = StreamResampler()  # 24 kHz -> 16 kHz
        if session.is_opener:
            self._say(0)
        return AgentInfo(
            adapter="template", adapter_version=__version__, model=self.model_name,
            voice=f"toy {self.model.pitch_hz:.0f} Hz",
            sampling={"seed": session.seed},  # what sampling really used; a real model lists temperature, top_k ...
            extra={"speak_first": session.is_opener, "checkpoint": str(self.params.get("checkpoint") or "built-in")},
        )

    def _say(self, line_index: int) -> None:
        words = self.lines[line_index % len(self.lines)].split()[:12]
        # A whole utterance at once here; a streaming model resamples each chunk it emits instead.
        audio = resample(self.model.speech(len(words), self.rng), SAMPLE_RATE // 8000, MODEL_RATE // 8000)
        self.pending = np.concatenate([self.pending, audio])
        ticks_per_word = WORD_S / FRAME_SECONDS
        self.words.extend((self.tick + int(i * ticks_per_word), w) for i, w in enumerate(words))
        self.said = line_index + 1

    def step(self, heard: np.ndarray) -> Frame:
        # Listening: your model consumes the partner's audio at its own rate.
        partner = self.from_bridge.process(heard)
        loud = float(np.sqrt(np.mean(partner ** 2))) > 0.01 if partner.size else False
        self.quiet_ticks = 0 if loud else self.quiet_ticks + 1
        if not self.pending.size and self.quiet_ticks * FRAME_SECONDS >= self.model.patience_s:
            self._say(getattr(self, "said", 0))
            self.quiet_ticks = 0
        out = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        n = min(FRAME_SAMPLES, self.pending.size)
        out[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        text = [w for t, w in self.words if t == self.tick]
        self.tick += 1
        return Frame(out, text)

    def close(self) -> None:
        self.from_bridge = None
