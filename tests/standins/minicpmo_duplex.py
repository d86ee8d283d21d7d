"""Stand-ins for MiniCPM-o 4.5's duplex surface, with the upstream quirks the adapter must live with.

Mirrors OpenBMB/minicpm-o-4_5-pytorch-simple-demo @ c7e1660 (the code OpenBMB's own demo server runs,
also vendored in OpenBMB/MiniCPM-o-Demo @ 28b60cf):

* ``MiniCPMO45/modeling_minicpmo_unified.py``: ``MiniCPMO.init_unified(duplex_config=..., device=...)``
  builds ``self.duplex = DuplexCapability(model=self, device=device, **duplex_config)`` and ends in
  ``set_mode(ProcessorMode.STREAMING)`` (~L306-368). ``set_mode(mode)`` (~L370) compares against the
  ``ProcessorMode`` Enum (~L88): the same mode returns at once; any other resets the session, and only
  ``mode == ProcessorMode.DUPLEX`` also resets the duplex streaming state and decoder. A string is not
  refused (there is no type check): "duplex" skips the duplex branch and becomes the current mode, so
  a later ``set_mode(ProcessorMode.DUPLEX)`` runs the duplex reset again. The demo server passes the
  Enum (MiniCPM-o-Demo @ 28b60cf ``core/processors/unified.py`` ``set_duplex_mode`` ~L1487). ``DuplexCapability`` (~L4216): kwargs ``force_listen_count`` (default 0; the demo's
  ``core/schemas/duplex.py DuplexConfig`` sets 3), ``chunk_ms``/``first_chunk_ms``/``sample_rate``
  exposed as ``CHUNK_MS``/``FIRST_CHUNK_MS``/``SAMPLE_RATE``; ``prepare`` (~L4452) feeds
  ``prefix_system_prompt`` verbatim (the caller wraps it: ``core/processors/unified.py`` ~L881),
  then the reference audio, then the suffix, and returns ``prefix + "[audio embedding]" + suffix``;
  ``streaming_prefill`` (~L4540) raises ``RuntimeError`` when the previous unit was not finalized,
  left-pads the first chunk to ``FIRST_CHUNK_MS``, answers ``success False, "audio not enough"``
  while short; ``streaming_generate`` (~L4955) takes ``length_penalty`` (1.1) and
  ``force_listen_override``, the first ``force_listen_count`` calls listen, and a listen returns
  ``_generate_silence_waveform()``: 24,000 zeros (1 s at 24 kHz) with ``is_listen`` True and empty
  text; ``finalize_unit`` (~L5263) must run before the next prefill.
* ``MiniCPMO45/modeling_minicpmo.py`` ``MiniCPMODuplex`` (~L2303): the same prepare / prefill /
  generate, but ``streaming_generate`` has no ``length_penalty``, no ``force_listen_override`` and
  feeds ``</unit>`` inline (no ``finalize_unit``). ``flavour="duplex"`` reproduces this one.

State per session and shared, as upstream keeps it (what an engine hosting many sessions on one load
must live with): ``DuplexCapability.prepare`` (~L4452) resets the duplex object's own state
(``_reset_streaming_state``, ``decoder.reset``, ``init_streaming_processor``), but the Whisper encoder's
streaming cache stays on the model (``MiniCPMO.audio_past_key_values``, grown by
``get_audio_embedding_streaming`` ~L1451 on every prefilled chunk and dropped only when full), cleared by
``reset_session`` (~L210), which ``set_mode`` runs only on a change of mode. The stand-in keeps it as
``audio_kv_chunks`` on the model and records, per ``prepare``, what the first prefill found there
(``kv_at_first_prefill``). ``UnifiedMiniCPMO.loads`` counts model loads in the process.

``flavour="wraps"`` is a hypothetical later revision whose ``prepare`` wraps raw text itself (the
later MiniCPM-o-Demo unified adapter strips a wrapped prefix, "accept both raw text and old unified's
fully wrapped system prefix"), to check that the adapter never sends a doubly wrapped prompt.

Compute is ``time.sleep``; speech output encodes the chunk and sample index so a dropped or repeated
sample shows (``chunk_value``).
"""

from __future__ import annotations

import threading
import time
from enum import Enum
from typing import Any

import numpy as np

WRAP_PREFIX = "<|im_start|>system\n"
WRAP_AUDIO = "\n<|audio_start|>"


class ProcessorMode(Enum):
    """``ProcessorMode`` of ``modeling_minicpmo_unified.py`` (~L88)."""

    CHAT = "chat"
    STREAMING = "streaming"
    DUPLEX = "duplex"


def chunk_value(k: int, i: np.ndarray) -> np.ndarray:
    """Never zero; encodes chunk k and sample i exactly in float32."""
    return (0.25 + 0.01 * k + (i % 4096) * 2.0 ** -20).astype(np.float32)


class DuplexCapability:
    """``DuplexCapability`` of the unified code (or ``MiniCPMODuplex`` with flavour "duplex")."""

    def __init__(self, model: Any = None, device: str = "cuda", flavour: str = "unified", prefill_s: float = 0.02,
                 generate_s: float = 0.06, fail_at: int | None = None, silent_chunks: tuple[int, ...] = (), **kwargs: Any):
        self.model, self.device, self.flavour = model, device, flavour
        self.prefill_s, self.generate_s, self.fail_at, self.silent_chunks = prefill_s, generate_s, fail_at, set(silent_chunks)
        self.kwargs = dict(kwargs)
        self.force_listen_count = kwargs.get("force_listen_count", 0)
        self.CHUNK_MS = kwargs.get("chunk_ms", 1000)
        self.FIRST_CHUNK_MS = kwargs.get("first_chunk_ms", 1035)
        self.SAMPLE_RATE = kwargs.get("sample_rate", 16000)
        self.prepared: dict = {}
        self.received: list[np.ndarray] = []
        self.generate_kwargs: list[dict] = []
        self.outputs: list[np.ndarray | None] = []
        self.results: list[dict] = []
        self.busy = threading.Lock()
        self.stopped = False
        self._pending_finalize = None
        self.finalized = 0
        self.streaming_state_resets = 0
        # the exact signature of each upstream class (the adapter inspects it)
        self.streaming_generate = self._generate_duplex if flavour == "duplex" else self._generate_unified
        if flavour == "unified":
            self.finalize_unit = self._finalize_unit  # only the unified class has it

    # -- prepare ------------------------------------------------------------------------------------
    def prepare(self, prefix_system_prompt=None, suffix_system_prompt=None, ref_audio=None, prompt_wav_path=None,
                context_previous_marker="\n\nprevious: "):
        if self.flavour == "wraps" and prefix_system_prompt is not None:
            prefix_system_prompt = f"{WRAP_PREFIX}{prefix_system_prompt}{WRAP_AUDIO}"
        self.prepared = dict(prefix=prefix_system_prompt, suffix=suffix_system_prompt, ref_audio=ref_audio,
                             prompt_wav_path=prompt_wav_path)
        self.prepares = getattr(self, "prepares", 0) + 1
        self.buffer = np.zeros(0, dtype=np.float32)
        self.chunk_idx = 0
        self.generate_count = 0
        self.stopped = False
        self._pending_finalize = None
        if prefix_system_prompt or suffix_system_prompt:
            if ref_audio is not None:
                return (prefix_system_prompt or "") + "[audio embedding]" + (suffix_system_prompt or "")
            return (prefix_system_prompt or "") + (suffix_system_prompt or "")
        return ""

    # -- prefill ------------------------------------------------------------------------------------
    def streaming_prefill(self, audio_waveform=None, frame_list=None, text_list=None, max_slice_nums=1,
                          batch_vision_feed=False):
        if self._pending_finalize is not None:
            raise RuntimeError("streaming_prefill called before finalize_unit()!")
        assert self.busy.acquire(blocking=False), "prefill while another chunk is being computed"
        try:
            time.sleep(self.prefill_s)
            self.received.append(np.array(audio_waveform, copy=True))
            if self.chunk_idx == 0 and hasattr(self.model, "audio_kv_chunks"):
                self.kv_at_first_prefill = getattr(self, "kv_at_first_prefill", []) + [self.model.audio_kv_chunks]
            self.buffer = np.concatenate([self.buffer, audio_waveform])
            if self.chunk_idx == 0:  # left-pads a short first chunk to 1,035 ms ...
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
            if hasattr(self.model, "audio_kv_chunks"):  # get_audio_embedding_streaming grows the model's cache
                self.model.audio_kv_chunks += 1
            return {"success": True, "reason": "", "cost_all": self.prefill_s}
        finally:
            self.busy.release()

    # -- generate -----------------------------------------------------------------------------------
    def _generate(self, prompt_wav_path, decode_mode, temperature, top_k, top_p, extra: dict) -> dict:
        assert self.busy.acquire(blocking=False)
        try:
            time.sleep(self.generate_s)
            k = self.chunk_idx - 1
            if k == self.fail_at:
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            self.generate_kwargs.append(dict(prompt_wav_path=prompt_wav_path, decode_mode=decode_mode, temperature=temperature,
                                             top_k=top_k, top_p=top_p, **extra))
            force_listen = self.generate_count < self.force_listen_count or extra.get("force_listen_override", False)
            self.generate_count += 1
            if self.flavour == "unified":
                self._pending_finalize = {"chunk": k}
            if force_listen or k in self.silent_chunks:
                self.outputs.append(None)
                result = {"is_listen": True, "text": "", "audio_waveform": np.zeros(24000, dtype=np.float32),
                          "end_of_turn": False, "current_time": k}
            else:
                # 1 s of audio per chunk; chunk 5 flushes a longer buffer, chunk 7 has no audio yet (None)
                n = {5: 24000 + 960, 7: 0}.get(k, 24000)
                audio = chunk_value(k, np.arange(n)) if n else None
                self.outputs.append(audio)
                result = {"is_listen": False, "text": f"w{k}a w{k}b w{k}c", "audio_waveform": audio, "end_of_turn": False,
                          "current_time": k, "cost_all": self.prefill_s + self.generate_s}
            self.results.append(result)
            return result
        finally:
            self.busy.release()

    def _generate_unified(self, prompt_wav_path=None, max_new_speak_tokens_per_chunk=20, decode_mode="sampling",
                          temperature=0.7, top_k=20, top_p=0.8, listen_prob_scale=1.0, listen_top_k=None,
                          text_repetition_penalty=1.05, text_repetition_window_size=512, length_penalty=1.1,
                          force_listen_override=False):
        extra = {"length_penalty": length_penalty, "max_new_speak_tokens_per_chunk": max_new_speak_tokens_per_chunk}
        if force_listen_override:
            extra["force_listen_override"] = True
        return self._generate(prompt_wav_path, decode_mode, temperature, top_k, top_p, extra)

    def _generate_duplex(self, prompt_wav_path=None, max_new_speak_tokens_per_chunk=20, decode_mode="sampling",
                         temperature=0.7, top_k=20, top_p=0.8, listen_prob_scale=1.0, listen_top_k=None,
                         text_repetition_penalty=1.05, text_repetition_window_size=512):
        return self._generate(prompt_wav_path, decode_mode, temperature, top_k, top_p,
                              {"max_new_speak_tokens_per_chunk": max_new_speak_tokens_per_chunk})

    def _finalize_unit(self):
        self.finalized += 1
        self._pending_finalize = None

    def set_session_stop(self):
        self.stopped = True

    def _reset_streaming_state(self):
        self.streaming_state_resets += 1


class UnifiedMiniCPMO:
    """``MiniCPMO`` of ``modeling_minicpmo_unified.py``: ``init_unified`` then ``set_mode`` (no as_duplex)."""

    loads = 0  # MiniCPMO.from_pretrained calls in this process

    def __init__(self, **stand_in: Any):
        type(self).loads += 1
        self.stand_in = stand_in
        self.audio_kv_chunks = 0  # audio_past_key_values: on the model, across duplex sessions
        self.duplex: DuplexCapability | None = None
        self.duplex_config: dict = {}
        self._current_mode: Any = None
        self.session_resets = 0

    def init_unified(self, pt_path=None, preload_both_tts=True, duplex_config=None, device="cuda", chat_vocoder="token2wav"):
        self.duplex_config = dict(duplex_config or {})
        self.duplex = DuplexCapability(model=self, device=device, **self.stand_in, **self.duplex_config)
        self.set_mode(ProcessorMode.STREAMING)

    def set_mode(self, mode: ProcessorMode) -> None:
        if mode == self._current_mode:
            return
        self.session_resets += 1  # reset_session(reset_token2wav_cache=True)
        self.audio_kv_chunks = 0
        if mode == ProcessorMode.DUPLEX and self.duplex is not None:
            self.duplex._reset_streaming_state()  # upstream also resets duplex.decoder here
        self._current_mode = mode


class HubMiniCPMO:
    """The hub remote code's ``MiniCPMO`` as its README uses it: ``model.as_duplex(**kwargs)``."""

    def __init__(self, flavour: str = "duplex", **stand_in: Any):
        self.flavour, self.stand_in = flavour, stand_in
        self.as_duplex_kwargs: dict = {}

    def as_duplex(self, device=None, **kwargs):
        self.as_duplex_kwargs = dict(kwargs)
        return DuplexCapability(model=self, device=device, flavour=self.flavour, **self.stand_in, **kwargs)


class StandInMiniCPMOEngine:
    """The real ``MiniCPMOEngine`` over :class:`UnifiedMiniCPMO` (for an engine host started with
    ``--adapter minicpmo_duplex:StandInMiniCPMOEngine``); each session's info says how many loads the
    process has made and what the model-level cache held at the session's first chunk."""

    def __new__(cls, params: dict, model_name: str = "minicpmo", capacity: int = 16):
        from dyafdb.agents.minicpmo import MiniCPMOAgent, MiniCPMOEngine

        stand_in = dict(params.pop("stand_in", {}) or {})

        class Agent(MiniCPMOAgent):
            def _load_base(self, folder):
                return UnifiedMiniCPMO(**stand_in)

            def close(self):
                duplex = self.model
                super().close()
                kv = getattr(duplex, "kv_at_first_prefill", [])
                self.last_kv_at_first_prefill = kv[-1] if kv else None

        class Engine(MiniCPMOEngine):
            agent_class = Agent

            def open(self, session):
                slot, info = super().open(session)
                info.extra["standin_model_loads"] = UnifiedMiniCPMO.loads
                return slot, info

            def close(self, slot):
                report = super().close(slot)
                return {**report, "kv_at_first_prefill": getattr(self.agent, "last_kv_at_first_prefill", None),
                        "standin_model_loads": UnifiedMiniCPMO.loads}

        return Engine(params, model_name, capacity)
