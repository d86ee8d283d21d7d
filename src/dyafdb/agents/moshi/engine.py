"""Many Moshi-architecture sessions stepped together: one loaded model, one batched forward per tick.

Mimi and the LM enter streaming once with ``capacity`` slots (moshi 0.2.13's batched streaming
state). A session takes a free slot (``join``) and leaves it (``leave``) between ticks; joining
resets only that slot (``reset_streaming(mask)``). On each tick only the slots that brought a frame
execute: the library's exec mask leaves every other slot's state (conv buffers, KV cache offsets,
the LM's delay cache) exactly as it was, so a session that waits a tick resumes unchanged.

Reproducible per conversation: moshi samples by the exponential-race trick (top-k probabilities
divided by Exp(1) noise, then argmax). The noise is the only randomness, so the engine draws it for
every slot from that session's own ``torch.Generator`` (seeded from its conversation) on the CPU,
in the same order each tick, and hands it to the sampler through static buffers (which also keeps
the sampler usable inside moshi's CUDA graphs). A session's draws therefore do not depend on which
sessions share its batch, nor on the device.

What is bit-exact and what is not: the noise, and hence the sampling given the logits, is exact
everywhere. The logits themselves come from matrix products whose kernels may differ with the batch
size (oneDNN/MKL on CPU choose blockings by shape; cuBLAS picks different algorithms per batch on
GPU, and bf16 accumulations differ), so activations may differ in the last bits between batch 1
and batch 8. On CPU in float32 such differences are ~1e-7 relative and have not flipped a sampled
token in the tests (tests/agents/test_engine_moshi.py checks text and audio tokens equal, audio
within 1e-4); on GPU in bf16 tokens may diverge after a while, so a conversation is reproducible
for a given batch composition, not across batch sizes.

Warm-up frames: a slot's first ``max_delay`` ticks return no tokens (moshi's acoustic delay); the
batched LMGen runs with ``support_out_of_sync`` so it returns the ungenerated id (-1) for those
slots, and the engine gives them silence, as the single-session loop does when ``step`` is None.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from dyafdb.agents.base import AgentError, Frame, silence
from dyafdb.agents.moshi.stack import AGENT_CODEBOOKS, text_piece
from dyafdb.agents.registry import engine
from dyafdb.clock import FRAME_SAMPLES

_PATCH_LOCK = threading.Lock()
_ACTIVE = threading.local()


def _install_sampler() -> None:
    """Route moshi's ``sample_token`` through :func:`_sample_token` (once per process).

    LMGen calls the module-level name for the text token and for each depformer codebook; when no
    engine is stepping on this thread the original runs unchanged, so single-session adapters in
    the same process keep upstream behaviour.
    """
    from moshi.models import lm as lm_module

    with _PATCH_LOCK:
        if getattr(lm_module.sample_token, "_dyafdb_engine", False):
            return
        original = lm_module.sample_token

        def sample_token(logits, use_sampling=False, temp=1.0, top_k=0, top_p=0.0):
            sampler = getattr(_ACTIVE, "sampler", None)
            if sampler is None:
                return original(logits, use_sampling, temp, top_k, top_p)
            return sampler.sample(logits, use_sampling, temp, top_k, top_p)

        sample_token._dyafdb_engine = True  # type: ignore[attr-defined]
        sample_token._dyafdb_original = original  # type: ignore[attr-defined]
        lm_module.sample_token = sample_token


class _RowNoiseSampler:
    """moshi's top-k exponential race with per-row noise from static buffers.

    Call 0 of a tick is the text token, calls 1..dep_q the depformer's codebooks, as LMGen orders them.
    """

    def __init__(self, text_noise: Any, audio_noise: Any, forced: Any = None, forced_mask: Any = None):
        self.text_noise = text_noise  # (B, k_text)
        self.audio_noise = audio_noise  # (B, dep_q, k_audio)
        # Optional (B, 1 + dep_q) tokens that win over the sample where forced_mask is set: the
        # PersonaPlex fork's provided tokens, which also condition the depformer's next codebook.
        self.forced, self.forced_mask = forced, forced_mask
        self.calls = 0

    def _force(self, index: int, sampled: Any) -> Any:
        import torch

        if self.forced is None:
            return sampled
        shape = (sampled.shape[0],) + (1,) * (sampled.dim() - 1)
        return torch.where(self.forced_mask[:, index].view(shape), self.forced[:, index].view(shape), sampled)

    def sample(self, logits: Any, use_sampling: bool, temp: float, top_k: int, top_p: float) -> Any:
        import torch

        index = self.calls
        self.calls += 1
        if not (use_sampling and temp > 0.0):
            return self._force(index, torch.argmax(logits, dim=-1))
        if top_p > 0.0 or top_k <= 0:
            raise AgentError("the batched Moshi engine samples with top-k only (moshi's defaults); "
                             "set sampling.top_k / top_k_text > 0")
        probs = torch.softmax(logits / temp, dim=-1)
        k = min(top_k, probs.shape[-1])
        top, indices = torch.topk(probs, k, dim=-1)
        noise = self.text_noise if index == 0 else self.audio_noise[:, index - 1]
        noise = noise[:, :k].reshape(top.shape[0], *([1] * (top.dim() - 2)), k).to(top.dtype)
        choice = (top / noise).argmax(dim=-1, keepdim=True)
        return self._force(index, indices.gather(-1, choice)[..., 0])


@dataclass
class _Slot:
    seed: int
    generator: Any
    skip_first_frame: bool
    frames: int = 0


class BatchedMoshi:
    """A loaded Mimi + LM hosting up to ``capacity`` sessions, stepped together."""

    def __init__(self, mimi: Any, lm: Any, tokenizer: Any, capacity: int, sampling: dict[str, Any],
                 device: Any = "cpu"):
        import torch
        from moshi.models import LMGen

        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        _install_sampler()
        self.capacity = capacity
        self.device = torch.device(device)
        self.mimi, self.tokenizer = mimi, tokenizer
        self.sampling = dict(sampling)
        self.lm_gen = LMGen(lm, support_out_of_sync=True, **self.sampling)
        self.dep_q = lm.dep_q
        self.k_text = min(int(self.sampling["top_k_text"]), lm.text_card) if self.sampling["top_k_text"] > 0 else 0
        self.k_audio = min(int(self.sampling["top_k"]), lm.card) if self.sampling["top_k"] > 0 else 0
        # Kept so close() can leave streaming and the models can host a new engine (tests, benchmarks).
        self._streams = [self.mimi.streaming(capacity), self.lm_gen.streaming(capacity)]
        self._slots: dict[int, _Slot] = {}
        # Noise is drawn on the CPU (the same numbers on every device) into staging rows, then copied
        # in one transfer into static device buffers that the sampler (and a CUDA graph) reads.
        self._text_noise_cpu = torch.ones(capacity, max(self.k_text, 1))
        self._audio_noise_cpu = torch.ones(capacity, self.dep_q, max(self.k_audio, 1))
        self._text_noise = self._text_noise_cpu.to(self.device)
        self._audio_noise = self._audio_noise_cpu.to(self.device)
        self._sampler = _RowNoiseSampler(self._text_noise, self._audio_noise)
        self._input_cpu = np.zeros((capacity, 1, FRAME_SAMPLES), dtype=np.float32)
        self._input = torch.zeros(capacity, 1, FRAME_SAMPLES, device=self.device)

    def close(self) -> None:
        for stack in self._streams:
            stack.close()
        self._streams = []
        self._slots.clear()

    # -- sessions ---------------------------------------------------------------------------------
    @property
    def free_slots(self) -> int:
        return self.capacity - len(self._slots)

    def join(self, seed: int, skip_first_frame: bool = False) -> int:
        """Take a free slot for a new session and reset that slot's streaming state only."""
        import torch

        free = [i for i in range(self.capacity) if i not in self._slots]
        if not free:
            raise AgentError(f"engine full: all {self.capacity} slots hold sessions")
        slot = free[0]
        generator = torch.Generator(device="cpu")
        generator.manual_seed(int(seed) & 0x7FFFFFFF)
        mask = torch.zeros(self.capacity, dtype=torch.bool, device=self.device)
        mask[slot] = True
        self.mimi.reset_streaming(mask)
        self.lm_gen.reset_streaming(mask)
        self._slots[slot] = _Slot(seed=int(seed), generator=generator, skip_first_frame=skip_first_frame)
        return slot

    def leave(self, slot: int) -> None:
        self._slots.pop(slot, None)

    # -- one tick ---------------------------------------------------------------------------------
    def _draw_noise(self, slots: list[int]) -> None:
        """Each stepping slot's noise for this tick from its own generator, in a fixed order."""
        import torch

        for slot in slots:
            gen = self._slots[slot].generator
            if self.k_text:
                self._text_noise_cpu[slot].exponential_(1, generator=gen)
            if self.k_audio:
                self._audio_noise_cpu[slot].exponential_(1, generator=gen)
        if self._text_noise.data_ptr() != self._text_noise_cpu.data_ptr():
            self._text_noise.copy_(self._text_noise_cpu, non_blocking=False)
            self._audio_noise.copy_(self._audio_noise_cpu, non_blocking=False)

    def _run_lm(self, slots: list[int], call: Any) -> Any:
        """``call()`` steps the LM with only ``slots`` executing, each sampling from its own noise."""
        import torch

        exec_mask = torch.zeros(self.capacity, dtype=torch.bool)
        exec_mask[slots] = True
        self._draw_noise(slots)
        self.lm_gen.set_exec_mask(exec_mask.to(self.device))
        self._sampler.calls = 0
        _ACTIVE.sampler = self._sampler
        try:
            return call()
        finally:
            _ACTIVE.sampler = None

    def _lm_step(self, slots: list[int], codes: Any) -> Any:
        """The LM's step for the heard codes ``[B, n_q, 1]``: ``[B, 1 + dep_q, 1]``, -1 where none."""
        return self._run_lm(slots, lambda: self.lm_gen.step(codes))

    def step(self, heard: dict[int, np.ndarray]) -> dict[int, Frame]:
        """Advance the given slots by one frame in one batched pass; other slots keep their state."""
        import torch

        slots = sorted(heard)
        unknown = [s for s in slots if s not in self._slots]
        if unknown:
            raise AgentError(f"engine: step for slot(s) {unknown} that hold no session")
        if not slots:
            return {}
        with torch.no_grad():
            exec_mask = torch.zeros(self.capacity, dtype=torch.bool)
            exec_mask[slots] = True
            exec_dev = exec_mask.to(self.device)
            self._input_cpu.fill(0.0)
            for slot in slots:
                self._input_cpu[slot, 0] = heard[slot]
            self._input.copy_(torch.from_numpy(self._input_cpu))
            self.mimi.set_exec_mask(exec_dev)
            codes = self.mimi.encode(self._input)
            first = [s for s in slots if self._slots[s].skip_first_frame and self._slots[s].frames == 0]
            if first:  # stock Moshi's server: re-apply the encoder's left padding after the first frame
                reset = torch.zeros(self.capacity, dtype=torch.bool, device=self.device)
                reset[first] = True
                self.mimi.reset_streaming(reset)
            for slot in slots:
                self._slots[slot].frames += 1
            tokens = self._lm_step(slots, codes[:, :, 0:1])
            generated = exec_dev & (tokens[:, 0, 0] >= 0)
            pcm = None
            if bool(generated.any()):
                self.mimi.set_exec_mask(generated)
                # Rows that do not decode this tick still run through the codebooks: give them code 0
                # (a joining PersonaPlex slot's prompt step returns the initial token, one past the last code).
                codes_out = torch.where(generated[:, None, None], tokens[:, 1:1 + AGENT_CODEBOOKS], 0)
                pcm = self.mimi.decode(codes_out.clamp(min=0))
            all_tokens = tokens[:, :, 0].cpu().numpy()
            tokens_cpu = all_tokens[:, 0]
            gen_cpu = generated.cpu().numpy()
            pcm_cpu = pcm[:, 0].float().cpu().numpy() if pcm is not None else None
        out: dict[int, Frame] = {}
        for slot in slots:
            if not gen_cpu[slot]:
                out[slot] = Frame(silence())
                continue
            piece = text_piece(self.tokenizer, int(tokens_cpu[slot]))
            out[slot] = Frame(np.ascontiguousarray(pcm_cpu[slot], dtype=np.float32), [piece] if piece else [])
        self.last_tokens = {slot: all_tokens[slot].copy() for slot in slots}
        return out


@engine("moshi")
class MoshiEngine:
    """Stock Moshi behind an engine: the checkpoint loads once, sessions share :class:`BatchedMoshi`.

    Takes the ``moshi`` adapter's params (checkpoint, device, dtype, sampling) and behaves per
    session as the adapter does (first input frame skipped, no prompt), seeded per session.
    """

    def __init__(self, params: dict[str, Any], model_name: str = "moshi", capacity: int = 16):
        from dyafdb.agents.moshi.agent import load_moshi

        models, sampling = load_moshi(params, model_name)
        self.model_name, self.sampling = model_name, sampling
        self.extra = dict(models.extra)
        lm = models.lm_gen.lm_model
        self.batched = BatchedMoshi(models.mimi, lm, models.tokenizer, capacity,
                                    {k: sampling[k] for k in ("use_sampling", "temp", "temp_text", "top_k", "top_k_text")},
                                    device=models.device)
        self.capacity = capacity

    def open(self, session: Any) -> tuple[int, Any]:
        from dyafdb import __version__
        from dyafdb.agents.base import AgentInfo

        slot = self.batched.join(session.seed, skip_first_frame=True)
        return slot, AgentInfo(
            adapter="moshi", adapter_version=__version__, model=self.model_name, voice="built-in", sampling=self.sampling,
            extra={**self.extra, "seed": session.seed, "device": str(self.batched.device), "engine": True,
                   "engine_capacity": self.capacity, "prompt": "not used: Moshi takes no system prompt"})

    def close(self, slot: int) -> None:
        self.batched.leave(slot)

    def step(self, heard: dict[int, np.ndarray]) -> dict[int, Frame]:
        return self.batched.step(heard)
