"""NVIDIA PersonaPlex 7B, in process on its own fork of the moshi package.

The fork (NVIDIA/personaplex, folder ``moshi/``, distribution ``moshi-personaplex``) installs under
the import name ``moshi`` and replaces stock Moshi's LMGen with one that takes a hybrid system
prompt. Per conversation, before the clock starts, the adapter follows the fork's own sequence
(``moshi/offline.py``): seed, set the text prompt (the role text wrapped in ``<system>`` tags),
reset Mimi and the LM, ``step_system_prompts(mimi)`` (voice prompt, 0.5 s silence, text prompt,
0.5 s silence), reset Mimi again. Then every tick encodes the heard frame, steps the LM with it as
the user stream and decodes the agent's 8 codebooks (of the 16 the fork's depformer predicts).

The fork's server reads its ``seed`` query parameter from the wrong place, so seeding is done here:
every RNG is seeded from the session's seed before the prompt phase. The vestigial second Mimi
(``other_mimi``) of the fork's server and offline script is not instantiated: it encodes and decodes
the same frames and its output is thrown away.

params:
  checkpoint_dir: local folder with model.safetensors, tokenizer-e351c8d8-checkpoint125.safetensors,
                  tokenizer_spm_32k_3.model and voices/ (extracted from voices.tgz)
  hf_repo:        nvidia/personaplex-7b-v1, looked up only in the local Hugging Face cache
  voice_prompt:   the pinned released voice, a file in voice_prompt_dir (default NATF2.pt)
  voice_prompt_dir: default <checkpoint>/voices
  device, dtype:  cuda / bfloat16 by default
  cpu_offload:    the fork's accelerate offload for small GPUs (default false)
  sampling:       overrides of the official defaults {use_sampling, temp, temp_text, top_k, top_k_text}
  silence_s:      length of each silence phase of the prompt (0.5, as the fork's server)
  warmup_frames:  silent frames run once at load (4)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.agents.checkpoints import checkpoint_revision, expand, force_offline_hub, resolve_checkpoint, resolve_file
from dyafdb.agents.moshi.stack import MoshiFrameLoop, MoshiModels, sampling_params, seed_everything, torch_device, torch_dtype
from dyafdb.errors import InputError
from dyafdb.agents.registry import adapter

MOSHI_NAME = "model.safetensors"
MIMI_NAME = "tokenizer-e351c8d8-checkpoint125.safetensors"
TOKENIZER_NAME = "tokenizer_spm_32k_3.model"
DEFAULT_VOICE = "NATF2.pt"
HINT = ("PersonaPlex is gated: accept the licence of nvidia/personaplex-7b-v1 and set HF_TOKEN before downloading; "
        "extract voices.tgz into the same folder (it holds voices/NATF0-3, NATM0-3, VARF0-4, VARM0-4 .pt)")


def voice_prompt_path(params: dict[str, Any], model: str, checkpoint: Callable[[], Path]) -> Path:
    """The pinned voice: ``voice_prompt`` (default NATF2.pt) in ``voice_prompt_dir``, else in
    <checkpoint>/voices (the checkpoint folder is only resolved then)."""
    voice = str(params.get("voice_prompt", DEFAULT_VOICE))
    base = expand(params["voice_prompt_dir"]) if params.get("voice_prompt_dir") else checkpoint() / "voices"
    return resolve_file(voice, base, model, "voice_prompt",
                        hint=f"voice prompts are in voices.tgz of nvidia/personaplex-7b-v1; `tar xzf voices.tgz` in {base.parent}")


def wrap_with_system_tags(text: str) -> str:
    """The fork's text-prompt format: plain SentencePiece text between ``<system>`` tags."""
    cleaned = text.strip()
    if cleaned.startswith("<system>") and cleaned.endswith("<system>"):
        return cleaned
    return f"<system> {cleaned} <system>"


@adapter("personaplex")
class PersonaPlexAgent:
    @staticmethod
    def missing_weights(params: dict[str, Any], model: str) -> list[str]:
        """What is missing for this model to load, each with where to put it (empty: ready)."""
        try:
            folder = resolve_checkpoint(params, model, required=[MOSHI_NAME, MIMI_NAME, TOKENIZER_NAME], hint=HINT)
        except InputError as exc:
            return [str(exc)]
        try:
            voice_prompt_path(params, model, lambda: folder)
        except InputError as exc:
            return [str(exc)]
        return []

    def __init__(self, params: dict[str, Any], model_name: str = "personaplex"):
        self.params = params
        self.model_name = model_name
        self.sampling = sampling_params(params, model_name)
        self.models = self._load_models()
        self.voice_path = self._voice_path()
        self._load_voice(self.voice_path)
        self.loop = MoshiFrameLoop(self.models, skip_first_frame=False)
        self.loop.start_streaming()
        self.loop.warmup(int(params.get("warmup_frames", 4)))
        self.prompt_tokens = 0

    # -- loading ---------------------------------------------------------------------------------
    def _checkpoint(self) -> Path:
        if not hasattr(self, "_folder"):
            self._folder = resolve_checkpoint(self.params, self.model_name,
                                              required=[MOSHI_NAME, MIMI_NAME, TOKENIZER_NAME], hint=HINT)
        return self._folder

    def _load_models(self) -> MoshiModels:
        """Load the 7B checkpoint with the fork's loaders (tests override this with a tiny model)."""
        force_offline_hub()
        folder = self._checkpoint()
        try:
            import sentencepiece
            from moshi.models import LMGen, loaders
        except ImportError as exc:
            raise InputError(f"model {self.model_name}: cannot import the PersonaPlex moshi fork ({exc}); "
                             "create the environment from envs/personaplex.yml") from None
        if not hasattr(LMGen, "step_system_prompts"):
            raise InputError(f"model {self.model_name}: the installed `moshi` is kyutai's stock package, not NVIDIA's "
                             "PersonaPlex fork (no LMGen.step_system_prompts); create the environment from envs/personaplex.yml")
        device = torch_device(self.params, self.model_name)
        dtype = torch_dtype(self.params, self.model_name)
        mimi = loaders.get_mimi(str(folder / MIMI_NAME), device)
        lm = loaders.get_moshi_lm(str(folder / MOSHI_NAME), device=device, dtype=dtype,
                                  cpu_offload=bool(self.params.get("cpu_offload", False)))
        lm.eval()
        lm_gen = self.make_lm_gen(LMGen, lm, mimi, device)
        tokenizer = sentencepiece.SentencePieceProcessor(str(folder / TOKENIZER_NAME))
        extra = {"checkpoint": str(folder), "checkpoint_revision": checkpoint_revision(folder) or "unknown"}
        return MoshiModels(mimi=mimi, lm_gen=lm_gen, tokenizer=tokenizer, device=device, extra=extra)

    def make_lm_gen(self, lmgen_cls: Any, lm: Any, mimi: Any, device: Any) -> Any:
        """The fork's LMGen as its server builds it; sample_rate must be Mimi's (the default 32 kHz is wrong)."""
        silence_s = float(self.params.get("silence_s", 0.5))
        return lmgen_cls(lm, device=device, audio_silence_frame_cnt=int(silence_s * mimi.frame_rate),
                         sample_rate=mimi.sample_rate, frame_rate=mimi.frame_rate, **self.sampling)

    def _voice_path(self) -> Path:
        return voice_prompt_path(self.params, self.model_name, self._checkpoint)

    def _load_voice(self, path: Path) -> None:
        """A released voice is a .pt (saved prompt embeddings + token cache); a .wav is encoded at prompt time."""
        lm_gen = self.models.lm_gen
        if path.suffix == ".pt":
            lm_gen.load_voice_prompt_embeddings(str(path))
        else:
            lm_gen.load_voice_prompt(str(path))

    # -- the agent protocol ----------------------------------------------------------------------
    def open(self, session: Session) -> AgentInfo:
        mimi, lm_gen, tokenizer = self.models.mimi, self.models.lm_gen, self.models.tokenizer
        seed_everything(session.seed)
        prompt = session.prompt.strip()
        # An empty prompt gets an empty text phase: the fork's offline.py/server.py set None here, which
        # _step_text_prompt_core then iterates and raises on.
        tokens = list(tokenizer.encode(wrap_with_system_tags(prompt))) if prompt else []
        lm_gen.text_prompt_tokens = tokens
        self.prompt_tokens = len(tokens)
        self.loop.reset()
        import torch

        with torch.no_grad():
            lm_gen.step_system_prompts(mimi)
        mimi.reset_streaming()  # the voice prompt went through Mimi's encoder; start the conversation clean
        return AgentInfo(
            adapter="personaplex", adapter_version=__version__, model=self.model_name, voice=self.voice_path.name,
            sampling=self.sampling,
            extra={**self.models.extra, "seed": session.seed, "device": str(self.models.device),
                   "text_prompt_tokens": self.prompt_tokens, "system_prompt": "<system> role text <system> + voice prompt"},
        )

    def step(self, heard: np.ndarray) -> Frame:
        return self.loop.step(heard)

    def close(self) -> None:
        self.loop.reset()
