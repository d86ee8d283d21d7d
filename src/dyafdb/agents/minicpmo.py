"""OpenBMB MiniCPM-o 4.5 in duplex mode (transformers, trust_remote_code), behind the 80 ms clock.

MiniCPM-o listens in chunks of about a second of 16 kHz audio and decides once per chunk whether to
speak. The adapter:

* resamples the heard 24 kHz stream to 16 kHz continuously (``resample.StreamResampler``: every
  80 ms frame gives exactly 1,280 samples of one continuous signal) and cuts exact chunks of
  ``chunk_ms`` (1 s = 16,000 samples) from it, the first one too, as the demo's browser client sends
  them (MiniCPM-o-Demo @ 28b60cf ``static/duplex/lib/capture-processor.js``: ``chunkSize`` 16,000);
  ``streaming_prefill`` left-pads the first to ``FIRST_CHUNK_MS`` itself. A chunk is complete after 12
  or 13 ticks;
* hands each chunk to a worker thread that runs ``streaming_prefill`` then ``streaming_generate``
  (then ``finalize_unit`` where the model has one), so a chunk-length computation never blocks the
  tick loop;
* plays the model's 24 kHz output from a FIFO, 1,920 samples per tick, silence when it is empty
  (a partial frame waits for the next chunk while one is in flight, so speech is not cut up); a
  listening result adds nothing to it (``duplex-session.js`` ``_handleResult`` plays audio only when
  ``is_listen`` is false; the 1 s of zeros the model returns for a listen is not played);
* applies backpressure: when more than ``max_pending_chunks`` (2) chunks are waiting or being
  computed, ``step`` blocks until the model catches up, so the conversation advances at the model's
  own listening speed and no audio is dropped;
* stamps each chunk's text on the ticks its audio plays (words spread evenly over them; text with
  no audio goes out on the next tick);
* wraps the role prompt in a short conversational framing, inside the duplex system-prompt format
  of OpenBMB's demo (``<|im_start|>system\\n...\\n<|audio_start|>`` + reference audio +
  ``<|audio_end|><|im_end|>``), exactly once: the pinned code's ``prepare`` feeds the prefix verbatim
  (the demo's ``DuplexView.prepare`` wraps it), and a model whose ``prepare`` wraps raw text itself
  (seen from the prompt it returns) is prepared again with the raw text;
* clones the reference voice shipped with the demo; seeds torch (and numpy, random) per conversation.

Which code runs (``code``), as checked against upstream:

* ``demo`` (default): the model code of OpenBMB/minicpm-o-4_5-pytorch-simple-demo pinned at
  ``PINNED_CODE_COMMIT`` (``MiniCPMO45/modeling_minicpmo_unified.py``, the code OpenBMB's demo
  server runs; also vendored in OpenBMB/MiniCPM-o-Demo @ 28b60cf), loaded from a checkout
  (``code_dir``) over the hub weights, then ``init_unified(duplex_config=...)`` and
  ``set_mode(ProcessorMode.DUPLEX)`` as the demo's ``core/processors/unified.py`` does (the Enum from
  the model code's own module: ``set_mode`` compares with it, and a string would silently skip its
  duplex reset). The checkout's commit is verified.
* ``hub``: the checkpoint's own remote code (``trust_remote_code``) and ``as_duplex(**duplex)``, as
  the model card shows; not line-checked here, so meta.json records the code file's hash.

Settings sent (the demo's ``core/schemas/duplex.py DuplexConfig``): ``force_listen_count`` 3 (the
first 3 chunks always listen, so MiniCPM-o never speaks first), temperature 0.7, top_k 20, top_p 0.8,
20 speak tokens per chunk, text repetition penalty 1.05 over 512 tokens, ``length_penalty`` 1.1
(sent only where ``streaming_generate`` takes it; ``MiniCPMODuplex`` does not). meta.json records
them, the code commit and the weights' hub revision (``checkpoint_revision``; ``params.revision``
pins it).

params:
  checkpoint_dir / hf_repo: the model folder (openbmb/MiniCPM-o-4_5), local only; revision: pinned hub commit
  code:            demo (default) or hub; code_dir: the simple-demo checkout (demo code)
  ref_audio:       reference voice wav (default assets/ref_audio/ref_en_dlc_1.wav under the checkpoint)
  device:          cuda (default); dtype: bfloat16; attn_implementation: sdpa
  duplex:          duplex construction settings (``init_unified``'s duplex_config / ``as_duplex``), over DEFAULT_DUPLEX
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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session, silence
from dyafdb.agents.checkpoints import checkpoint_revision, expand, force_offline_hub, git_head, resolve_checkpoint
from dyafdb.agents.resample import StreamResampler
from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE
from dyafdb.errors import InputError
from dyafdb.agents.registry import adapter, engine

MODEL_RATE = 16_000
OUTPUT_RATE = 24_000
SAMPLES_PER_TICK_16K = FRAME_SAMPLES * MODEL_RATE // SAMPLE_RATE  # 1,280

# The demo's DuplexConfig (OpenBMB/MiniCPM-o-Demo core/schemas/duplex.py), as DuplexView.generate passes it.
DEFAULT_SAMPLING = {
    "decode_mode": "sampling", "temperature": 0.7, "top_k": 20, "top_p": 0.8,
    "max_new_speak_tokens_per_chunk": 20, "listen_prob_scale": 1.0,
    "text_repetition_penalty": 1.05, "text_repetition_window_size": 512, "length_penalty": 1.1,
}
# Keys only some revisions' streaming_generate take; dropped (and not recorded) where it has none.
OPTIONAL_SAMPLING = ("length_penalty",)
# Duplex construction: the demo's "critical" start-up protection (the model's own default is 0).
DEFAULT_DUPLEX = {"force_listen_count": 3}
PINNED_CODE_REPO = "OpenBMB/minicpm-o-4_5-pytorch-simple-demo"
PINNED_CODE_COMMIT = "c7e16605c3ae9623a0caee5845bd0183b1d6d5b3"
DEFAULT_CODE_DIR = "~/src/minicpm-o-4_5-pytorch-simple-demo"
SYSTEM_HEADER = "<|im_start|>system"
HINT = "MiniCPM-o 4.5: openbmb/MiniCPM-o-4_5 (about 19 GB; includes the TTS)"
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


def check_code_checkout(code_dir: Path, params: dict[str, Any], model: str) -> dict[str, Any]:
    """The demo code checkout must be at the pinned commit (``allow_other_code: true`` to run another)."""
    if not (code_dir / "MiniCPMO45" / "modeling_minicpmo_unified.py").exists():
        raise InputError(f"model {model}: params.code_dir {code_dir} has no MiniCPMO45/modeling_minicpmo_unified.py; "
                         f"`git clone https://github.com/{PINNED_CODE_REPO} {code_dir} && git -C {code_dir} checkout "
                         f"{PINNED_CODE_COMMIT[:7]}` (see docs/models.md)")
    head = git_head(code_dir)
    if head != PINNED_CODE_COMMIT and not params.get("allow_other_code", False):
        raise InputError(f"model {model}: {code_dir} is at commit {head or 'unknown (not a git checkout)'}, but the adapter "
                         f"was checked against {PINNED_CODE_REPO} @ {PINNED_CODE_COMMIT[:7]}; `git -C {code_dir} checkout "
                         f"{PINNED_CODE_COMMIT[:7]}`, or set params.allow_other_code: true to run it anyway")
    return {"code_repo": PINNED_CODE_REPO, "code_commit": head or "unknown", "code_pinned": PINNED_CODE_COMMIT}


@adapter("minicpmo")
class MiniCPMOAgent:
    @staticmethod
    def missing_weights(params: dict[str, Any], model: str) -> list[str]:
        """What is missing for this model to load, each with where to put it (empty: ready)."""
        problems = []
        try:
            folder = resolve_checkpoint(params, model, required=["config.json"], hint=HINT)
            ref = expand(params.get("ref_audio", DEFAULT_REF_AUDIO))
            ref = ref if ref.is_absolute() else folder / ref
            if not ref.exists():
                problems.append(f"models.{model}.params.ref_audio: {ref} does not exist; copy assets/ref_audio/ref_en_dlc_1.wav "
                                f"from {PINNED_CODE_REPO} there (see docs/models.md)")
        except InputError as exc:
            problems.append(str(exc))
        if str(params.get("code", "demo")) == "demo":
            try:
                check_code_checkout(expand(params.get("code_dir", DEFAULT_CODE_DIR)), params, model)
            except InputError as exc:
                problems.append(str(exc))
        return problems

    def __init__(self, params: dict[str, Any], model_name: str = "minicpmo"):
        self.params = params
        self.model_name = model_name
        sampling = params.get("sampling") or {}
        unknown = sorted(set(sampling) - set(DEFAULT_SAMPLING))
        if unknown:
            raise InputError(f"models.{model_name}.params.sampling: unknown key(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(DEFAULT_SAMPLING)}")
        self.sampling_requested = {**DEFAULT_SAMPLING, **sampling}
        self.sampling_explicit = set(sampling)
        self.code = str(params.get("code", "demo"))
        if self.code not in ("demo", "hub"):
            raise InputError(f"models.{model_name}.params.code = {self.code!r}; use 'demo' (the pinned OpenBMB demo code) or 'hub'")
        duplex = params.get("duplex") or {}
        if not isinstance(duplex, dict):
            raise InputError(f"models.{model_name}.params.duplex must be a mapping (e.g. force_listen_count: 3)")
        self.duplex_config = {**DEFAULT_DUPLEX, **duplex}
        self.code_info: dict[str, Any] = {}
        self.max_pending = int(params.get("max_pending_chunks", 2))
        self.chunk_timeout_s = float(params.get("chunk_timeout_s", 600))
        self.framing = str(params.get("framing", DEFAULT_FRAMING))
        self.prefix_template = str(params.get("prefix_template", PREFIX_TEMPLATE))
        self.suffix_template = str(params.get("suffix_template", SUFFIX_TEMPLATE))
        self.model = self._load_model()
        self.sampling = self._accepted_sampling()
        self.ref_audio_path = self._ref_audio_path()
        self.ref_audio = load_reference_voice(self.ref_audio_path)
        if int(getattr(self.model, "SAMPLE_RATE", MODEL_RATE)) != MODEL_RATE:
            raise InputError(f"model {model_name}: the duplex model expects {self.model.SAMPLE_RATE} Hz input; this adapter "
                             f"feeds {MODEL_RATE} Hz (the rate MiniCPM-o 4.5 was trained on)")
        # The model's own chunk length when it exposes one (MiniCPMODuplex does). The first chunk is
        # no longer: the demo client sends equal chunks and the model pads the first (upstream wins).
        self.chunk_samples = int(getattr(self.model, "CHUNK_MS", params.get("chunk_ms", 1000)) * MODEL_RATE // 1000)
        self.first_chunk_samples = self.chunk_samples
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._reset_session_state()

    # -- loading ---------------------------------------------------------------------------------
    def _checkpoint(self) -> Path:
        if not hasattr(self, "_folder"):
            self._folder = resolve_checkpoint(self.params, self.model_name, required=["config.json"], hint=HINT)
        return self._folder

    def _load_model(self) -> Any:
        """The duplex object of the model, built the way the configured upstream code builds it."""
        force_offline_hub()
        folder = self._checkpoint()
        found = checkpoint_revision(folder)
        pinned = self.params.get("revision")
        if pinned and found and found != str(pinned):
            raise InputError(f"model {self.model_name}: checkpoint {folder} is hub revision {found}, but "
                             f"params.revision pins {pinned}; download that revision (`huggingface-cli download "
                             f"openbmb/MiniCPM-o-4_5 --revision {pinned} --local-dir {folder}`) or update the pin")
        self.code_info["checkpoint_revision"] = found or (f"{pinned} (pinned; not verifiable from the folder)" if pinned else "unknown")
        base = self._load_base(folder)
        if self.code == "demo" or callable(getattr(base, "init_unified", None)) and not callable(getattr(base, "as_duplex", None)):
            # core/processors/unified.py: init_unified(duplex_config=...), then duplex mode
            base.init_unified(duplex_config=dict(self.duplex_config), device=str(self.params.get("device", "cuda")))
            if callable(getattr(base, "set_mode", None)):
                base.set_mode(self._processor_mode(base).DUPLEX)
            self._base = base
            duplex = base.duplex
        else:
            kwargs = dict(self.duplex_config)
            if "device" in inspect.signature(base.as_duplex).parameters:  # newer remote code takes it, older does not
                kwargs.setdefault("device", str(self.params.get("device", "cuda")))
            duplex = base.as_duplex(**kwargs)
        for method in ("prepare", "streaming_prefill", "streaming_generate"):
            if not callable(getattr(duplex, method, None)):
                raise InputError(f"model {self.model_name}: {type(duplex).__name__} from {folder} has no {method}(); "
                                 "the model code is not the MiniCPM-o 4.5 duplex API this adapter expects")
        return duplex

    def _processor_mode(self, base: Any) -> Any:
        """The ``ProcessorMode`` Enum of the module that defines the loaded model class."""
        mode = getattr(sys.modules.get(type(base).__module__), "ProcessorMode", None)
        if mode is None or not hasattr(mode, "DUPLEX"):
            raise InputError(f"model {self.model_name}: {type(base).__module__} defines no ProcessorMode.DUPLEX for "
                             "set_mode(); the model code is not the unified MiniCPM-o 4.5 code this adapter was checked "
                             f"against ({PINNED_CODE_REPO} @ {PINNED_CODE_COMMIT[:7]}); use code: demo with that checkout")
        return mode

    def _load_base(self, folder: Path) -> Any:
        """The base model with weights from ``folder`` (tests override this with a stand-in)."""
        try:
            import torch
        except ImportError as exc:
            raise InputError(f"model {self.model_name}: torch missing in this worker's environment ({exc}); "
                             "create it from envs/minicpmo.yml") from None
        dtype = getattr(torch, str(self.params.get("dtype", "bfloat16")))
        device = str(self.params.get("device", "cuda"))
        attn = str(self.params.get("attn_implementation", "sdpa"))
        if self.code == "demo":
            code_dir = expand(self.params.get("code_dir", DEFAULT_CODE_DIR))
            self.code_info.update(check_code_checkout(code_dir, self.params, self.model_name))
            sys.path.insert(0, str(code_dir))
            try:
                from MiniCPMO45.modeling_minicpmo_unified import MiniCPMO  # noqa: PLC0415
            except ImportError as exc:
                raise InputError(f"model {self.model_name}: cannot import MiniCPMO45 from {code_dir} ({exc}); "
                                 "create the environment from envs/minicpmo.yml") from None
            model = MiniCPMO.from_pretrained(str(folder), trust_remote_code=True, _attn_implementation=attn)
            return model.to(dtype).eval().to(device)
        from transformers import AutoModel

        revision = self.params.get("revision")
        model = AutoModel.from_pretrained(str(folder), trust_remote_code=True, local_files_only=True,
                                          attn_implementation=attn, torch_dtype=dtype,
                                          **({"revision": str(revision)} if revision and not Path(folder).is_dir() else {}))
        code = folder / "modeling_minicpmo.py"
        if code.exists():
            import hashlib

            self.code_info["code"] = f"hub remote code, modeling_minicpmo.py sha256 {hashlib.sha256(code.read_bytes()).hexdigest()[:16]}"
        return model.eval().to(device)

    def _accepted_sampling(self) -> dict[str, Any]:
        """What streaming_generate is really given: optional keys only where its signature takes them."""
        try:
            accepted = inspect.signature(self.model.streaming_generate).parameters
        except (TypeError, ValueError):
            return dict(self.sampling_requested)
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        out = {}
        for key, value in self.sampling_requested.items():
            if key in OPTIONAL_SAMPLING and key not in accepted and not takes_any:
                if key in self.sampling_explicit:
                    raise InputError(f"models.{self.model_name}.params.sampling.{key}: this model code's "
                                     f"{type(self.model).__name__}.streaming_generate takes no {key}; remove it or use "
                                     "code: demo (the unified code takes it)")
                continue
            out[key] = value
        return out

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

    def fresh_model_state(self) -> bool:
        """Put the model's own per-session state back to what a fresh load has (an engine's next session).

        ``prepare`` resets the duplex object's state, but the unified code keeps more on the model:
        the Whisper encoder's streaming KV cache (``audio_past_key_values``, reset only when full),
        the LLM and TTS caches and the token2wav cache, all cleared by ``reset_session``, which
        ``set_mode`` runs only when the mode changes. A fresh load has run it (``init_unified`` sets
        STREAMING, the adapter DUPLEX), so the engine switches to STREAMING and back. False where the
        code has no such switch (the hub's ``as_duplex``; there ``prepare`` is all upstream resets).
        """
        base = getattr(self, "_base", None)
        if base is None or not callable(getattr(base, "set_mode", None)):
            return False
        mode = self._processor_mode(base)
        base.set_mode(mode.STREAMING)
        base.set_mode(mode.DUPLEX)
        return True

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
        full = self._prepare(prefix)
        wrapped_by = "adapter"
        if isinstance(full, str) and full.count(SYSTEM_HEADER) > prefix.count(SYSTEM_HEADER):
            full = self._prepare(text)  # this prepare wraps raw text itself: never wrap twice
            wrapped_by = "model"
        self._thread = threading.Thread(target=self._work, daemon=True, name=f"minicpmo-{session.side}")
        self._thread.start()
        listens = int(self.duplex_config.get("force_listen_count", 0))
        return AgentInfo(
            adapter="minicpmo", adapter_version=__version__, model=self.model_name, voice=self.ref_audio_path.name,
            sampling=self.sampling,
            extra={"seed": session.seed, "first_chunk_samples": self.first_chunk_samples,
                   "chunk_samples": self.chunk_samples, "max_pending_chunks": self.max_pending,
                   "duplex": dict(self.duplex_config), "code": self.code, **self.code_info,
                   "speak_first": False,
                   "speak_first_note": f"MiniCPM-o decides once per ~1 s chunk; force_listen_count {listens} makes its "
                                       f"first {listens} chunks listen",
                   "system_prompt_wrapped_by": wrapped_by,
                   "framing": self.framing, "system_prompt_format": [self.prefix_template, "<ref audio>", self.suffix_template]},
        )

    def _prepare(self, prefix: str) -> Any:
        return self.model.prepare(prefix_system_prompt=prefix, suffix_system_prompt=self.suffix_template,
                                  ref_audio=self.ref_audio, prompt_wav_path=str(self.ref_audio_path))

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
                t0 = time.perf_counter()
                with no_grad():
                    result = self._run_chunk(chunk)
                self._deliver(chunk, result, compute_ms=1000 * (time.perf_counter() - t0))
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
        # The demo's DuplexView.generate passes no prompt_wav_path (the voice cache is set at prepare);
        # the model card's example passes it on every call.
        wav = None if self.code == "demo" else str(self.ref_audio_path)
        result = self.model.streaming_generate(prompt_wav_path=wav, **self.sampling)
        finalize = getattr(self.model, "finalize_unit", None)
        if callable(finalize):
            finalize()
        return result

    def _deliver(self, chunk: Chunk, result: dict[str, Any], compute_ms: float | None = None) -> None:
        audio = result.get("audio_waveform")
        if audio is not None:
            if hasattr(audio, "detach"):
                audio = audio.detach().float().cpu().numpy()
            audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        text = "" if result.get("is_listen", False) else str(result.get("text") or "")
        words = text.split()
        event = {"chunk": chunk.index, "ticks": [chunk.first_tick, chunk.last_tick], "is_listen": bool(result.get("is_listen")),
                 "end_of_turn": bool(result.get("end_of_turn")), "text": text,
                 "audio_samples": 0 if audio is None else int(len(audio)),
                 "delivered_tick": self.tick,  # when its audio can first play (compute lag shows here)
                 "compute_ms": None if compute_ms is None else round(compute_ms, 1)}  # prefill + generate + finalize
        print(f"minicpmo chunk {event}", file=sys.stderr, flush=True)
        with self._cond:
            self.events.append(event)
            # the demo client plays nothing for a listen (duplex-session.js _handleResult); its words are none
            if not event["is_listen"] and audio is not None and len(audio):
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


@engine("minicpmo")
class MiniCPMOEngine:
    """MiniCPM-o behind an engine: the model loads once per GPU and hosts record jobs' sessions one after another.

    Upstream keeps a duplex session's state on the loaded model itself (OpenBMB/minicpm-o-4_5-pytorch-simple-demo
    @ c7e1660 ``modeling_minicpmo_unified.py``: the one ``DuplexCapability`` that ``init_unified`` builds, the
    processor's streaming mel state that ``init_streaming_processor`` resets, the Whisper streaming cache
    ``audio_past_key_values`` of ``get_audio_embedding_streaming``, the token2wav stream caches on
    ``tts.audio_tokenizer``), and the demo server runs one session per worker. So the engine hosts one
    session at a time (``concurrent`` 1; the others' jobs wait for their turn before opening anything) and
    gives each the state of a fresh load (:meth:`MiniCPMOAgent.fresh_model_state`, then ``prepare``). Per
    session the adapter is unchanged: chunking, FIFO, backpressure, seeding. A failed chunk leaves the
    model's state unknown, so it fails the engine (its jobs rerun), as a failing batched step does.
    """

    lockstep = False
    concurrent = 1
    agent_class: type = MiniCPMOAgent

    def __init__(self, params: dict[str, Any], model_name: str = "minicpmo", capacity: int = 16):
        self.model_name, self.capacity = model_name, capacity
        self.agent = self.agent_class(params, model_name)  # the one model load
        self.sessions_hosted = 0
        self._open: int | None = None

    def open(self, session: Session) -> tuple[int, AgentInfo]:
        if self._open is not None:
            raise AgentError("MiniCPM-o engine: a session is already open (upstream keeps one session's state on the model)")
        reset = self.agent.fresh_model_state() if self.sessions_hosted else False
        info = self.agent.open(session)
        self.sessions_hosted += 1
        self._open = 0
        info.extra = {**info.extra, "engine": True, "engine_capacity": self.capacity, "engine_concurrent": self.concurrent,
                      "engine_session_number": self.sessions_hosted,
                      "engine_model_state": "fresh load" if self.sessions_hosted == 1 else
                      ("reset as at load (set_mode STREAMING -> DUPLEX)" if reset else "prepare only (no set_mode)")}
        return 0, info

    def step_one(self, slot: int, heard: np.ndarray) -> Frame:
        from dyafdb.agents.engine.sessions import EngineFailure

        try:
            return self.agent.step(heard)
        except AgentError as exc:  # a failed or stuck chunk: the model's state is unknown
            raise EngineFailure(str(exc)) from exc

    def close(self, slot: int) -> dict[str, Any]:
        """Ends the session; its chunks' compute times go into meta.json (``extra.chunk_compute_ms``)."""
        self.agent.close()
        self._open = None
        return {"chunk_compute_ms": [e["compute_ms"] for e in self.agent.events if e.get("compute_ms") is not None]}

    def shutdown(self) -> None:
        self.agent.close()
