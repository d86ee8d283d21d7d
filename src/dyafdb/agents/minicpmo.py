"""OpenBMB MiniCPM-o 4.5 in duplex mode (transformers, trust_remote_code), behind the 80 ms clock.

MiniCPM-o listens in chunks of about a second of 16 kHz audio and decides once per chunk whether to
speak. The adapter:

* resamples the heard 24 kHz stream to 16 kHz continuously (``resample.StreamResampler``: every
  80 ms frame gives exactly 1,280 samples of one continuous signal) and cuts exact chunks from it,
  the first ``first_chunk_ms`` (1,035 ms = 16,560 samples) long, then ``chunk_ms`` (1 s = 16,000);
  a chunk is complete after 12 or 13 ticks;
* hands each chunk to a worker thread that runs ``streaming_prefill`` then ``streaming_generate``
  (then ``finalize_unit`` where the model has one), so a chunk-length computation never blocks the
  tick loop;
* plays the model's 24 kHz output from a FIFO, 1,920 samples per tick, silence when it is empty
  (a partial frame waits for the next chunk while one is in flight, so speech is not cut up);
* applies backpressure: when more than ``max_pending_chunks`` (2) chunks are waiting or being
  computed, ``step`` blocks until the model catches up, so the conversation advances at the model's
  own listening speed and no audio is dropped;
* stamps each chunk's text on the ticks its audio plays (words spread evenly over them; text with
  no audio goes out on the next tick);
* wraps the role prompt in a short conversational framing, inside the duplex system-prompt format
  of OpenBMB's demo (``<|im_start|>system\\n...\\n<|audio_start|>`` + reference audio +
  ``<|audio_end|><|im_end|>``), and clones the reference voice shipped with the model;
* seeds torch (and numpy, random) per conversation.

params:
  checkpoint_dir / hf_repo: the model folder (openbmb/MiniCPM-o-4_5), local only
  ref_audio:       reference voice wav (default assets/ref_audio/ref_en_dlc_1.wav under the checkpoint)
  device:          cuda (default); dtype: bfloat16; attn_implementation: sdpa
  duplex:          keyword arguments for ``as_duplex`` (e.g. chunk_ms, force_listen_count)
  sampling:        overrides for ``streaming_generate`` (official defaults below)
  framing:         template with ``$prompt``; prefix_template (with ``$text``) / suffix_template: the system-prompt format
  max_pending_chunks: 2; chunk_timeout_s: how long a blocked step waits before failing (600)
"""

from __future__ import annotations

import inspect
import queue
import string
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session, silence
from dyafdb.agents.checkpoints import expand, force_offline_hub, resolve_checkpoint
from dyafdb.agents.resample import StreamResampler
from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE
from dyafdb.errors import InputError
from dyafdb.agents.registry import adapter

MODEL_RATE = 16_000
OUTPUT_RATE = 24_000
SAMPLES_PER_TICK_16K = FRAME_SAMPLES * MODEL_RATE // SAMPLE_RATE  # 1,280

# streaming_generate's own defaults (MiniCPMODuplex, openbmb/MiniCPM-o-4_5).
DEFAULT_SAMPLING = {
    "decode_mode": "sampling", "temperature": 0.7, "top_k": 20, "top_p": 0.8,
    "max_new_speak_tokens_per_chunk": 20, "listen_prob_scale": 1.0,
    "text_repetition_penalty": 1.05, "text_repetition_window_size": 512,
}
DEFAULT_FRAMING = (
    "Replicate the tone and style from the input audio. You are in a live spoken conversation with another "
    "person. The text below tells you who you are and what you want; it is not something to read aloud. "
    "Stay in this role for the whole conversation and speak as this person would, in short natural turns.\n\n"
    "$prompt\n\n"
    "You are in duplex mode, where you can listen and speak at the same time."
)
PREFIX_TEMPLATE = "<|im_start|>system\n$text\n<|audio_start|>"
SUFFIX_TEMPLATE = "<|audio_end|><|im_end|>"
DEFAULT_REF_AUDIO = "assets/ref_audio/ref_en_dlc_1.wav"


@dataclass
class Chunk:
    index: int
    samples: np.ndarray  # 16 kHz
    start_sample: int  # position in the continuous 16 kHz stream
    first_tick: int
    last_tick: int


def load_reference_voice(path: Path) -> np.ndarray:
    """The reference wav as 16 kHz mono float32 (what ``prepare`` feeds the audio encoder)."""
    import soundfile as sf
    from scipy.signal import resample_poly

    audio, rate = sf.read(str(path), dtype="float32", always_2d=True)
    mono = audio.mean(axis=1)
    if rate != MODEL_RATE:
        mono = resample_poly(mono, MODEL_RATE, rate)
    return mono.astype(np.float32)


@adapter("minicpmo")
class MiniCPMOAgent:
    def __init__(self, params: dict[str, Any], model_name: str = "minicpmo"):
        self.params = params
        self.model_name = model_name
        sampling = params.get("sampling") or {}
        unknown = sorted(set(sampling) - set(DEFAULT_SAMPLING))
        if unknown:
            raise InputError(f"models.{model_name}.params.sampling: unknown key(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(DEFAULT_SAMPLING)}")
        self.sampling = {**DEFAULT_SAMPLING, **sampling}
        self.max_pending = int(params.get("max_pending_chunks", 2))
        self.chunk_timeout_s = float(params.get("chunk_timeout_s", 600))
        self.framing = str(params.get("framing", DEFAULT_FRAMING))
        self.prefix_template = str(params.get("prefix_template", PREFIX_TEMPLATE))
        self.suffix_template = str(params.get("suffix_template", SUFFIX_TEMPLATE))
        self.model = self._load_model()
        self.ref_audio_path = self._ref_audio_path()
        self.ref_audio = load_reference_voice(self.ref_audio_path)
        if int(getattr(self.model, "SAMPLE_RATE", MODEL_RATE)) != MODEL_RATE:
            raise InputError(f"model {model_name}: the duplex model expects {self.model.SAMPLE_RATE} Hz input; this adapter "
                             f"feeds {MODEL_RATE} Hz (the rate MiniCPM-o 4.5 was trained on)")
        # Chunk sizes are the model's own settings when it exposes them (MiniCPMODuplex does).
        self.first_chunk_samples = int(getattr(self.model, "FIRST_CHUNK_MS", params.get("first_chunk_ms", 1035)) * MODEL_RATE // 1000)
        self.chunk_samples = int(getattr(self.model, "CHUNK_MS", params.get("chunk_ms", 1000)) * MODEL_RATE // 1000)
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._reset_session_state()

    # -- loading ---------------------------------------------------------------------------------
    def _checkpoint(self) -> Path:
        if not hasattr(self, "_folder"):
            self._folder = resolve_checkpoint(self.params, self.model_name, required=["config.json"],
                                              hint="MiniCPM-o 4.5: openbmb/MiniCPM-o-4_5 (about 19 GB; includes the TTS)")
        return self._folder

    def _load_model(self) -> Any:
        """The duplex object of the real model (tests override this with a stand-in)."""
        force_offline_hub()
        folder = self._checkpoint()
        try:
            import torch
            from transformers import AutoModel
        except ImportError as exc:
            raise InputError(f"model {self.model_name}: transformers/torch missing in this worker's environment ({exc}); "
                             "create it from envs/minicpmo.yml") from None
        dtype = getattr(torch, str(self.params.get("dtype", "bfloat16")))
        device = str(self.params.get("device", "cuda"))
        model = AutoModel.from_pretrained(str(folder), trust_remote_code=True, local_files_only=True,
                                          attn_implementation=str(self.params.get("attn_implementation", "sdpa")),
                                          torch_dtype=dtype)
        model = model.eval().to(device)
        kwargs = dict(self.params.get("duplex") or {})
        if "device" in inspect.signature(model.as_duplex).parameters:  # newer remote code takes it, older does not
            kwargs.setdefault("device", device)
        duplex = model.as_duplex(**kwargs)
        for method in ("prepare", "streaming_prefill", "streaming_generate"):
            if not callable(getattr(duplex, method, None)):
                raise InputError(f"model {self.model_name}: {type(duplex).__name__} from {folder} has no {method}(); "
                                 "the checkpoint's remote code is not the MiniCPM-o 4.5 duplex API this adapter expects")
        return duplex

    def _ref_audio_path(self) -> Path:
        value = self.params.get("ref_audio", DEFAULT_REF_AUDIO)
        path = expand(value)
        if not path.is_absolute():
            path = self._checkpoint() / path
        if not path.exists():
            raise InputError(f"models.{self.model_name}.params.ref_audio: {path} does not exist; the reference voice "
                             "ships as assets/ref_audio/ref_en_dlc_1.wav with OpenBMB's MiniCPM-o 4.5 demo; copy it there "
                             "or point ref_audio at it (see docs/models.md)")
        return path

    # -- session state ---------------------------------------------------------------------------
    def _reset_session_state(self) -> None:
        self.tick = 0
        self.resampler = StreamResampler()
        self._input = np.zeros(0, dtype=np.float32)
        self._input_start = 0  # stream position of self._input[0]
        self._next_size = self.first_chunk_samples
        self._chunks = 0
        self._jobs: queue.Queue = queue.Queue()
        self._submitted = 0
        self._completed = 0
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._fifo = np.zeros(0, dtype=np.float32)
        self._fifo_pos = 0  # output stream position of self._fifo[0]
        self._marks: list[tuple[int, str]] = []  # (output stream position, word)
        self._loose_text: list[str] = []
        self.events: list[dict[str, Any]] = []

    def open(self, session: Session) -> AgentInfo:
        self.close()
        self._reset_session_state()
        self._seed(session.seed)
        # string.Template ($prompt, $text): braces in config strings would clash with Snakemake's wildcards
        text = string.Template(self.framing).safe_substitute(prompt=session.prompt.strip())
        prefix = string.Template(self.prefix_template).safe_substitute(text=text)
        self.model.prepare(prefix_system_prompt=prefix, suffix_system_prompt=self.suffix_template,
                           ref_audio=self.ref_audio, prompt_wav_path=str(self.ref_audio_path))
        self._thread = threading.Thread(target=self._work, daemon=True, name=f"minicpmo-{session.side}")
        self._thread.start()
        return AgentInfo(
            adapter="minicpmo", adapter_version=__version__, model=self.model_name, voice=self.ref_audio_path.name,
            sampling=self.sampling,
            extra={"seed": session.seed, "first_chunk_samples": self.first_chunk_samples,
                   "chunk_samples": self.chunk_samples, "max_pending_chunks": self.max_pending,
                   "framing": self.framing, "system_prompt_format": [self.prefix_template, "<ref audio>", self.suffix_template]},
        )

    @staticmethod
    def _seed(seed: int) -> None:
        import random

        random.seed(seed)
        np.random.seed(seed & 0x7FFFFFFF)
        try:
            import torch
        except ImportError:
            return
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)

    # -- the worker thread -----------------------------------------------------------------------
    def _work(self) -> None:
        try:
            import torch

            no_grad = torch.no_grad
        except ImportError:  # the stand-in model of the tests needs no torch
            from contextlib import nullcontext as no_grad
        while True:
            chunk = self._jobs.get()
            if chunk is None or self._stop.is_set():
                return
            try:
                with no_grad():
                    result = self._run_chunk(chunk)
                self._deliver(chunk, result)
            except BaseException as exc:
                with self._cond:
                    if not self._stop.is_set():
                        self._error = exc
            finally:
                with self._cond:
                    self._completed += 1
                    self._cond.notify_all()
            if self._error is not None:
                return

    def _run_chunk(self, chunk: Chunk) -> dict[str, Any]:
        pre = self.model.streaming_prefill(audio_waveform=chunk.samples)
        if not (pre or {}).get("success", False):
            raise AgentError(f"MiniCPM-o refused chunk {chunk.index} ({len(chunk.samples)} samples, ticks "
                             f"{chunk.first_tick}-{chunk.last_tick}): {(pre or {}).get('reason', 'no reason given')}")
        result = self.model.streaming_generate(prompt_wav_path=str(self.ref_audio_path), **self.sampling)
        finalize = getattr(self.model, "finalize_unit", None)
        if callable(finalize):
            finalize()
        return result

    def _deliver(self, chunk: Chunk, result: dict[str, Any]) -> None:
        audio = result.get("audio_waveform")
        if audio is not None:
            if hasattr(audio, "detach"):
                audio = audio.detach().float().cpu().numpy()
            audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        text = "" if result.get("is_listen", False) else str(result.get("text") or "")
        words = text.split()
        event = {"chunk": chunk.index, "ticks": [chunk.first_tick, chunk.last_tick], "is_listen": bool(result.get("is_listen")),
                 "end_of_turn": bool(result.get("end_of_turn")), "text": text,
                 "audio_samples": 0 if audio is None else int(len(audio))}
        print(f"minicpmo chunk {event}", file=sys.stderr, flush=True)
        with self._cond:
            self.events.append(event)
            if audio is not None and len(audio):
                start = self._fifo_pos + len(self._fifo)
                self._fifo = np.concatenate([self._fifo, audio])
                self._marks.extend((start + (i * len(audio)) // len(words), w) for i, w in enumerate(words))
            else:
                self._loose_text.extend(words)

    # -- the tick ----------------------------------------------------------------------------------
    def _ingest(self, heard: np.ndarray) -> None:
        self._input = np.concatenate([self._input, self.resampler.process(heard)])
        while len(self._input) >= self._next_size:
            size = self._next_size
            start = self._input_start
            chunk = Chunk(index=self._chunks, samples=self._input[:size].copy(), start_sample=start,
                          first_tick=start // SAMPLES_PER_TICK_16K, last_tick=self.tick)
            self._input = self._input[size:]
            self._input_start += size
            self._next_size = self.chunk_samples
            self._chunks += 1
            with self._cond:
                self._submitted += 1
            self._jobs.put(chunk)

    def _wait_for_model(self) -> None:
        """Backpressure: block while more than max_pending chunks are queued or being computed."""
        with self._cond:
            ok = self._cond.wait_for(lambda: self._error is not None or self._submitted - self._completed <= self.max_pending,
                                     timeout=self.chunk_timeout_s)
            if self._error is not None:
                raise AgentError(f"MiniCPM-o failed on a chunk: {type(self._error).__name__}: {self._error}") from self._error
            if not ok:
                raise AgentError(f"MiniCPM-o fell behind by {self._submitted - self._completed} chunks and made no progress "
                                 f"for {self.chunk_timeout_s:g} s (params.chunk_timeout_s)")

    def _pop_frame(self) -> tuple[np.ndarray, list[str]]:
        with self._cond:
            pending = self._submitted - self._completed
            if len(self._fifo) >= FRAME_SAMPLES:
                audio, self._fifo = self._fifo[:FRAME_SAMPLES], self._fifo[FRAME_SAMPLES:]
                self._fifo_pos += FRAME_SAMPLES
            elif len(self._fifo) and pending == 0:  # nothing more is coming soon: flush the tail
                audio = np.zeros(FRAME_SAMPLES, dtype=np.float32)
                audio[: len(self._fifo)] = self._fifo
                self._fifo_pos += len(self._fifo)
                self._fifo = self._fifo[:0]
            else:
                audio = silence()
            words = self._loose_text
            self._loose_text = []
            while self._marks and self._marks[0][0] < self._fifo_pos:
                words.append(self._marks.pop(0)[1])
        return audio, words

    def step(self, heard: np.ndarray) -> Frame:
        if self._thread is None:
            raise AgentError("MiniCPM-o: step() before open()")
        self._ingest(heard)
        self._wait_for_model()
        audio, words = self._pop_frame()
        self.tick += 1
        return Frame(np.ascontiguousarray(audio, dtype=np.float32), words)

    def close(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        stop = getattr(self.model, "set_session_stop", None)
        if callable(stop):
            stop()
        self._jobs.put(None)
        self._thread.join(timeout=self.chunk_timeout_s)
        self._thread = None
