"""The frame loop shared by the Moshi-architecture adapters (stock Moshi and PersonaPlex).

Per tick: encode the heard 80 ms frame with Mimi, step the LM once, decode the agent's own
codebooks back to 1,920 samples, and turn the text token into a piece (padding dropped). Mimi's
frame is exactly the bridge's frame, so no buffering is needed. Everything runs under
``torch.no_grad`` in streaming mode for batch size 1, the way the official servers run it.

Imports of torch are deferred so the module can be imported (and its helpers tested) anywhere.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dyafdb.agents.base import AgentError, Frame, silence
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError

# Moshi's text vocabulary reserves these ids: 0 = end of padding (EPAD), 3 = padding (PAD); the
# official servers never send them as text. 1/2 (BOS/EOS) are SentencePiece controls, not words.
PADDING_TEXT_IDS = frozenset({0, 3})
AGENT_CODEBOOKS = 8

# The official samplers' defaults (moshi LMGen, PersonaPlex offline/server CLI): audio temperature
# 0.8 with top-k 250, text temperature 0.7 with top-k 25.
DEFAULT_SAMPLING = {"use_sampling": True, "temp": 0.8, "temp_text": 0.7, "top_k": 250, "top_k_text": 25}


def seed_everything(seed: int) -> None:
    """Seed every RNG the model may draw from; the LM samples from torch's global generator.

    Global RNGs are per process, which is why each model runs in its own worker process.
    """
    import torch

    seed = int(seed) & 0x7FFFFFFF
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def sampling_params(params: dict[str, Any], model: str) -> dict[str, Any]:
    """Official defaults, overridden key by key by ``params.sampling``; unknown keys are an error."""
    given = params.get("sampling") or {}
    if not isinstance(given, dict):
        raise InputError(f"models.{model}.params.sampling must be a mapping with keys {', '.join(DEFAULT_SAMPLING)}")
    unknown = sorted(set(given) - set(DEFAULT_SAMPLING))
    if unknown:
        raise InputError(f"models.{model}.params.sampling: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(DEFAULT_SAMPLING)}")
    return {**DEFAULT_SAMPLING, **given}


def torch_device(params: dict[str, Any], model: str) -> Any:
    import torch

    name = str(params.get("device", "cuda"))
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise AgentError(f"model {model}: params.device is {name!r} but no CUDA device is visible to this worker "
                         f"(CUDA_VISIBLE_DEVICES={__import__('os').environ.get('CUDA_VISIBLE_DEVICES')!r}); "
                         "run it on a GPU node or set device: cpu")
    return device


def torch_dtype(params: dict[str, Any], model: str) -> Any:
    import torch

    name = str(params.get("dtype", "bfloat16"))
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise InputError(f"models.{model}.params.dtype = {name!r} is not a torch dtype; use bfloat16, float16 or float32")
    return dtype


def text_piece(tokenizer: Any, token_id: int) -> str | None:
    """The text a token stands for, or None for padding and control tokens."""
    if token_id in PADDING_TEXT_IDS:
        return None
    for check in ("is_control", "is_unknown"):
        fn = getattr(tokenizer, check, None)
        if fn is not None and fn(token_id):
            return None
    piece = tokenizer.id_to_piece(token_id).replace("\u2581", " ")
    return piece or None


@dataclass
class MoshiModels:
    """What the frame loop needs, however it was loaded (real checkpoint or tiny test model)."""

    mimi: Any
    lm_gen: Any
    tokenizer: Any
    device: Any
    extra: dict[str, Any] = field(default_factory=dict)


class MoshiFrameLoop:
    """One heard frame in, one spoken frame plus text out.

    ``skip_first_frame`` reproduces stock Moshi's server: the first input frame is encoded, then
    Mimi's streaming state is reset so the encoder's left padding applies again on the next frame
    (the LM still steps on it; its first step returns nothing anyway).
    """

    def __init__(self, models: MoshiModels, skip_first_frame: bool = False):
        self.models = models
        self.skip_first_frame = skip_first_frame
        self.frame_index = 0

    def start_streaming(self) -> None:
        """Enter streaming for good (batch 1), as the official servers do, so CUDA graphs persist."""
        self.models.mimi.streaming_forever(1)
        self.models.lm_gen.streaming_forever(1)

    def warmup(self, frames: int = 4) -> None:
        """Run a few silent frames so CUDA graphs and caches exist before the first conversation."""
        import torch

        with torch.no_grad():
            for _ in range(frames):
                self._model_step(np.zeros(FRAME_SAMPLES, dtype=np.float32))
            if getattr(self.models.device, "type", "") == "cuda":
                torch.cuda.synchronize()
        self.reset()

    def reset(self) -> None:
        self.models.mimi.reset_streaming()
        self.models.lm_gen.reset_streaming()
        self.frame_index = 0

    def _model_step(self, heard: np.ndarray) -> Any:
        import torch

        mimi, lm_gen = self.models.mimi, self.models.lm_gen
        x = torch.from_numpy(np.ascontiguousarray(heard, dtype=np.float32)).to(self.models.device).view(1, 1, FRAME_SAMPLES)
        codes = mimi.encode(x)
        if self.skip_first_frame and self.frame_index == 0:
            mimi.reset_streaming()
        self.frame_index += 1
        tokens = lm_gen.step(codes[:, :, 0:1])
        if tokens is None:
            return None
        pcm = mimi.decode(tokens[:, 1:1 + AGENT_CODEBOOKS])
        return tokens, pcm

    def step(self, heard: np.ndarray) -> Frame:
        import torch

        with torch.no_grad():
            out = self._model_step(heard)
        if out is None:  # the LM's delay warm-up: nothing generated yet
            return Frame(silence())
        tokens, pcm = out
        audio = pcm[0, 0].detach().float().cpu().numpy().astype(np.float32)
        piece = text_piece(self.models.tokenizer, int(tokens[0, 0, 0].item()))
        return Frame(audio, [piece] if piece else [])
