"""A thin stand-in for NVIDIA PersonaPlex's moshi fork, layered over stock moshi 0.2.13 from PyPI.

The fork (NVIDIA/personaplex, ``moshi/``) is not on PyPI and pins torch < 2.5, so CI cannot install
it. ``ForkLMGen`` gives stock moshi's ``LMGen`` the fork's interface and token bookkeeping, so the
PersonaPlex adapter runs here unchanged against a tiny random model (n_q 16, dep_q 16, as the fork).

Same as the fork (moshi/moshi/models/lm.py at 3428dfd9):
- ``LMGen(lm_model, device, use_sampling, temp, temp_text, top_k, top_k_text, check, report_loss,
  return_logits, audio_silence_frame_cnt, text_prompt_tokens, save_voice_prompt_embeddings,
  sample_rate, frame_rate)``.
- ``step(input_tokens=None, moshi_tokens=None, text_token=None, return_embeddings=False)``: tokens
  given on call n are written at position n + delay of their stream and override what the model
  samples there (user stream = 8 codebooks after the agent's 8); call 0 only primes; outputs
  ``[B, 1 + dep_q, 1]`` from call max_delay + 1 on.
- ``load_voice_prompt(wav)``, ``load_voice_prompt_embeddings(pt)``, ``text_prompt_tokens`` and
  ``step_system_prompts(mimi)`` (lm.py ~L1010-1127: ``_step_voice_prompt_core``,
  ``_step_audio_silence_core``, ``_step_text_prompt_core``, which iterates ``text_prompt_tokens``
  as given, so None raises; the fork's own offline.py/server.py set None for an empty prompt): voice phase (agent = voice codes, text = PAD 3, user = sine),
  ``audio_silence_frame_cnt`` silent frames (agent = silence codes, text = 3, user = sine), one
  frame per text-prompt token (agent = silence, text forced, user = sine), silence again; a .pt
  voice is replayed through ``step_embeddings`` and its saved cache copied back, as in the fork.

Different, documented:
- Forced tokens are written into the cache right after stock moshi samples a position, so the
  depformer's within-step codebook chain is conditioned on its own samples rather than on the forced
  tokens (the fork feeds the forced ones). Every later step reads the forced tokens, as in the fork.
- The fork's SILENCE/SINE constants are codes of the real Mimi (values up to 2008) and do not fit a
  tiny 256-entry codebook; here they are the tiny Mimi's own codes for a zero and a 440 Hz frame.
- Wav voice prompts are RMS-normalised to -24 dBFS instead of -24 LUFS (pyloudnorm).
- Stock moshi's ring buffer is one position shorter (max_delay + 2), which is all the bookkeeping
  above needs; the saved .pt cache has that shape.
- ``calls`` logs every prompt phase, step and reset so tests can check the call sequence.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch
from moshi.models.lm import LMGen as StockLMGen

AUDIO_TOKENS_PER_STREAM = 8


class ForkLMGen(StockLMGen):
    silence_tokens: torch.Tensor  # [1, 8, 1], set by build_fork_stack
    sine_tokens: torch.Tensor

    def __init__(self, lm_model: Any, device: Any, use_sampling: bool = True, temp: float = 0.8, temp_text: float = 0.7,
                 top_k: int = 250, top_k_text: int = 25, check: bool = False, report_loss: bool = False,
                 return_logits: bool = False, audio_silence_frame_cnt: int = 1, text_prompt_tokens: Optional[list] = None,
                 save_voice_prompt_embeddings: bool = False, sample_rate: int = 32000, frame_rate: float = 12.5):
        super().__init__(lm_model, use_sampling=use_sampling, temp=temp, temp_text=temp_text, top_k=top_k,
                         top_k_text=top_k_text, check=check)
        assert lm_model.dep_q == 2 * AUDIO_TOKENS_PER_STREAM, "the fork's depformer predicts agent and user codebooks"
        self.calls: list[tuple] = []
        self._text_prompt_tokens = text_prompt_tokens
        self.audio_silence_frame_cnt = audio_silence_frame_cnt
        self.zero_text_code = 3
        self._sample_rate = sample_rate
        self._frame_size = int(sample_rate / frame_rate)
        self.save_voice_prompt_embeddings = save_voice_prompt_embeddings
        self.voice_prompt: Optional[str] = None
        self.voice_prompt_audio: Optional[np.ndarray] = None
        self.voice_prompt_embeddings: Optional[torch.Tensor] = None
        self.voice_prompt_cache: Optional[torch.Tensor] = None
        self._forced: dict[int, dict[int, int]] = {}
        self._fork_offset = 0

    # -- prompt state ----------------------------------------------------------------------------
    @property
    def text_prompt_tokens(self):
        return self._text_prompt_tokens

    @text_prompt_tokens.setter
    def text_prompt_tokens(self, tokens):
        self.calls.append(("set_text_prompt", None if tokens is None else list(tokens)))
        self._text_prompt_tokens = tokens

    def reset_streaming(self, *args, **kwargs):
        self.calls.append(("reset_lm",))
        self._forced.clear()
        self._fork_offset = 0
        return super().reset_streaming(*args, **kwargs)

    def load_voice_prompt(self, voice_prompt: str) -> None:
        import soundfile as sf
        from scipy.signal import resample_poly

        self.calls.append(("load_voice_prompt", voice_prompt))
        audio, sr = sf.read(voice_prompt, dtype="float32", always_2d=True)
        audio = audio.mean(axis=1)
        if sr != self._sample_rate:
            audio = resample_poly(audio, self._sample_rate, sr).astype(np.float32)
        rms = float(np.sqrt(np.mean(audio ** 2))) or 1.0
        self.voice_prompt = voice_prompt
        self.voice_prompt_audio = (audio * (10 ** (-24 / 20) / rms)).astype(np.float32)
        self.voice_prompt_embeddings = self.voice_prompt_cache = None

    def load_voice_prompt_embeddings(self, path: str) -> None:
        self.calls.append(("load_voice_prompt_embeddings", path))
        state = torch.load(path)
        self.voice_prompt = path
        self.voice_prompt_audio = None
        self.voice_prompt_embeddings = state["embeddings"].to(self.lm_model.device)
        self.voice_prompt_cache = state["cache"].to(self.lm_model.device)

    # -- the fork's step -------------------------------------------------------------------------
    def _force(self, position: int, k: int, value: int) -> None:
        self._forced.setdefault(position, {})[k] = int(value)

    def _register(self, input_tokens, moshi_tokens, text_token) -> None:
        o, delays = self._fork_offset, self.lm_model.delays
        if text_token is not None:
            self._force(o + delays[0], 0, int(text_token))
        if moshi_tokens is not None:
            for q in range(AUDIO_TOKENS_PER_STREAM):
                self._force(o + delays[1 + q], 1 + q, moshi_tokens[0, q, 0].item())
        if input_tokens is not None:
            assert input_tokens.shape[1] == AUDIO_TOKENS_PER_STREAM, input_tokens.shape
            for q in range(AUDIO_TOKENS_PER_STREAM):
                k = 1 + AUDIO_TOKENS_PER_STREAM + q
                self._force(o + delays[k], k, input_tokens[0, q, 0].item())

    def _current_input(self) -> torch.Tensor:
        """The tokens stock moshi is about to feed the transformer (initial tokens where delayed)."""
        state = self._streaming_state
        ct = state.cache.shape[2]
        positions = (state.offsets % ct)[:, None, None].expand(-1, state.cache.shape[1], 1)
        current = state.cache.gather(dim=2, index=positions)
        is_init = state.offsets[:, None, None] <= self.delays_cuda[:, None]
        return torch.where(is_init, state.initial, current)

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        lm = self.lm_model
        x = lm.text_emb(tokens[:, 0])
        for cb in range(lm.num_audio_codebooks):
            x = x + lm.emb[cb](tokens[:, cb + lm.audio_offset])
        return x

    def _advance(self, embeddings: Optional[torch.Tensor] = None) -> Optional[torch.Tensor]:
        """One stock step at fork offset o >= 1, then the forced tokens of position o win."""
        state = self._streaming_state
        o = self._fork_offset
        if embeddings is not None:
            original = state.graphed_main
            state.graphed_main = lambda *_: self._forward_embeddings(embeddings)
        try:
            super()._step(torch.zeros(1, 0, 1, dtype=torch.long, device=self.lm_model.device))
        finally:
            if embeddings is not None:
                state.graphed_main = original
        ct = state.cache.shape[2]
        for k, value in self._forced.pop(o, {}).items():
            state.cache[:, k, o % ct] = value
        self._fork_offset += 1
        if o <= self.max_delay:
            return None
        gen = self.delays_cuda[: self.lm_model.dep_q + 1]
        index = ((o - self.max_delay + gen) % ct).view(1, -1, 1).expand(state.cache.shape[0], -1, 1)
        return state.cache.gather(dim=2, index=index)

    def _forward_embeddings(self, embeddings: torch.Tensor):
        lm = self.lm_model
        out = lm.transformer(embeddings)
        if lm.out_norm:
            out = lm.out_norm(out)
        return out, lm.text_linear(out)[:, None]

    @torch.no_grad()
    def step(self, input_tokens=None, moshi_tokens=None, text_token=None, return_embeddings: bool = False):
        self.calls.append(("step", input_tokens is not None, moshi_tokens is not None,
                           None if text_token is None else int(text_token)))
        self._register(input_tokens, moshi_tokens, text_token)
        if self._fork_offset == 0:  # the fork's first call only primes the cache
            self._fork_offset += 1
            return (None, None) if return_embeddings else None
        embeddings = self._embed(self._current_input()) if return_embeddings else None
        out = self._advance()
        return (out, embeddings) if return_embeddings else out

    @torch.no_grad()
    def step_embeddings(self, embeddings: torch.Tensor):
        self.calls.append(("step_embeddings",))
        initial = self.lm_model._get_initial_token()
        while True:
            self._register(initial[:, 1 + AUDIO_TOKENS_PER_STREAM:], initial[:, 1:1 + AUDIO_TOKENS_PER_STREAM], self.zero_text_code)
            if self._fork_offset == 0:
                self._fork_offset += 1
                continue
            return self._advance(embeddings)

    # -- the fork's prompt phases ----------------------------------------------------------------
    def _voice_frames(self, mimi):
        audio = self.voice_prompt_audio
        n = -(-len(audio) // self._frame_size) * self._frame_size
        padded = np.zeros(n, dtype=np.float32)
        padded[: len(audio)] = audio
        for i in range(0, n, self._frame_size):
            frame = torch.from_numpy(padded[i:i + self._frame_size]).to(self.lm_model.device).view(1, 1, -1)
            yield mimi.encode(frame)

    @torch.no_grad()
    def step_system_prompts(self, mimi) -> None:
        self.calls.append(("phase", "voice"))
        if self.voice_prompt_embeddings is not None:
            for embedding in self.voice_prompt_embeddings:
                self.step_embeddings(embedding)
            self._streaming_state.cache.copy_(self.voice_prompt_cache)
        elif self.voice_prompt_audio is not None:
            saved = []
            for codes in self._voice_frames(mimi):
                out = self.step(moshi_tokens=codes, text_token=self.zero_text_code, input_tokens=self.sine_tokens,
                                return_embeddings=self.save_voice_prompt_embeddings)
                if self.save_voice_prompt_embeddings and out[1] is not None:
                    saved.append(out[1])
            if self.save_voice_prompt_embeddings:
                torch.save({"embeddings": torch.stack(saved, dim=0).cpu(), "cache": self._streaming_state.cache.clone().cpu()},
                           str(self.voice_prompt).rsplit(".", 1)[0] + ".pt")
        for phase in ("silence", "text", "silence"):
            self.calls.append(("phase", phase))
            # _step_text_prompt_core iterates text_prompt_tokens as is: None raises TypeError there, as in the fork
            tokens = self._text_prompt_tokens if phase == "text" else [self.zero_text_code] * self.audio_silence_frame_cnt
            for token in tokens:
                self.step(moshi_tokens=self.silence_tokens, text_token=token, input_tokens=self.sine_tokens)


def build_fork_stack(proto: bytes, device: str = "cpu"):
    """Tiny Mimi + PersonaPlex-shaped LM (dep_q 16) + tokenizer, with the fork's silence/sine codes."""
    import moshi_tiny

    tok = moshi_tiny.tokenizer(proto)
    mimi = moshi_tiny.build_mimi(device)
    lm = moshi_tiny.build_lm(tok.vocab_size(), dep_q=16, device=device)
    lm.eval()
    with torch.no_grad():
        t = np.arange(1920) / 24000.0
        sine = torch.tensor(0.5 * np.sin(2 * np.pi * 440 * t), dtype=torch.float32).view(1, 1, -1)
        ForkLMGen.silence_tokens = mimi.encode(torch.zeros(1, 1, 1920))[:, :, :1].clone()
        ForkLMGen.sine_tokens = mimi.encode(sine)[:, :, :1].clone()
    return mimi, lm, tok
