"""Kyutai Moshi (moshiko / moshika) on the stock ``moshi`` package from PyPI.

A fourth reference model: the same Mimi + LM frame loop as PersonaPlex, without prompts. Moshi
takes no system prompt, so the session's role text is not used (AgentInfo says so); it speaks
with the voice it was trained with.

params:
  checkpoint_dir: local folder with the checkpoint (model.safetensors, the Mimi file, the text
                  tokenizer; config.json if the repository has one)
  hf_repo:        hub id, looked up only in the local Hugging Face cache (kyutai/moshiko-pytorch-bf16)
  device:         cuda (default) or cpu
  dtype:          bfloat16 (default), float16, float32
  sampling:       overrides of the official defaults {use_sampling, temp, temp_text, top_k, top_k_text}
  warmup_frames:  silent frames run once at load (4, as the official server)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentInfo, Frame, Session
from dyafdb.agents.checkpoints import (hf_cache_snapshot, checkpoint_revision, download_hint, expand, force_offline_hub,
                                       resolve_checkpoint)
from dyafdb.agents.moshi.stack import MoshiFrameLoop, MoshiModels, sampling_params, seed_everything, torch_device, torch_dtype
from dyafdb.errors import InputError
from dyafdb.agents.registry import adapter

MOSHI_NAME = "model.safetensors"
MIMI_NAME = "tokenizer-e351c8d8-checkpoint125.safetensors"
TOKENIZER_NAME = "tokenizer_spm_32k_3.model"
HINT = "Moshi weights: kyutai/moshiko-pytorch-bf16 (male voice) or kyutai/moshika-pytorch-bf16 (female voice)"


def _checkpoint_files(folder: Path) -> dict[str, Any]:
    """File names as moshi's own loader reads them: from config.json when there is one."""
    config = None
    if (folder / "config.json").exists():
        config = json.loads((folder / "config.json").read_text())
    names = dict(config or {})
    return {
        "config": folder / "config.json" if config is not None else None,
        "moshi": folder / names.get("moshi_name", MOSHI_NAME),
        "mimi": folder / names.get("mimi_name", MIMI_NAME),
        "tokenizer": folder / names.get("tokenizer_name", TOKENIZER_NAME),
        "mimi_config": folder / names["mimi_config_name"] if names.get("mimi_config_name") else None,
    }


def _complete_folder(params: dict[str, Any], model: str) -> tuple[Path, dict[str, Any]]:
    """The first candidate folder holding every file its own config.json (or moshi's defaults) names.

    ``checkpoint_dir`` comes first, then ``hf_repo`` in the local Hugging Face cache, as moshi's own
    loader would find them; a folder missing a file falls through to the cache, and when neither is
    complete the message names each missing file and how to get it.
    """
    force_offline_hub()
    tried: list[str] = []
    candidates: list[Path] = []
    if params.get("checkpoint_dir"):
        candidates.append(expand(params["checkpoint_dir"]))
    if params.get("hf_repo"):
        cached = hf_cache_snapshot(str(params["hf_repo"]))
        if cached is not None:
            candidates.append(cached)
    cache_miss = [] if not params.get("hf_repo") or len(candidates) > bool(params.get("checkpoint_dir")) else [
        f"hf_repo {params['hf_repo']} is not in the local Hugging Face cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')})"]
    if not candidates and not cache_miss:
        resolve_checkpoint(params, model, hint=HINT)  # raises: neither checkpoint_dir nor hf_repo
    for folder in candidates:
        if not folder.is_dir():
            tried.append(f"{folder} does not exist")
            continue
        files = _checkpoint_files(folder)
        missing = [str(p) for k, p in files.items() if p is not None and k != "config" and not p.exists()]
        if not missing:
            return folder, files
        tried.append(f"{folder} lacks {', '.join(missing)}")
    tried += cache_miss
    target = expand(params["checkpoint_dir"]) if params.get("checkpoint_dir") else None
    raise InputError(f"model {model}: checkpoint not found or incomplete ({'; '.join(tried)}). "
                     + download_hint(model, str(params["hf_repo"]) if params.get("hf_repo") else "kyutai/moshiko-pytorch-bf16",
                                     target, HINT))


def load_moshi(params: dict[str, Any], model: str) -> tuple[MoshiModels, dict[str, Any]]:
    """Load Mimi, the LM and the tokenizer from a local checkpoint; returns (models, LMGen defaults)."""
    folder, files = _complete_folder(params, model)
    try:
        from moshi.models import LMGen, loaders
    except ImportError as exc:
        raise InputError(f"model {model}: the moshi package is not installed in this worker's environment ({exc}); "
                         "create it from envs/moshi.yml") from None
    device, dtype = torch_device(params, model), torch_dtype(params, model)
    info = loaders.CheckpointInfo.from_hf_repo(
        "local", moshi_weights=files["moshi"], mimi_weights=files["mimi"], tokenizer=files["tokenizer"],
        config_path=files["config"] if files["config"] is not None else None,
        mimi_config_path=files["mimi_config"],
    ) if files["config"] is not None else loaders.CheckpointInfo(files["moshi"], files["mimi"], files["tokenizer"])
    # (no config.json, as in kyutai/moshiko-pytorch-bf16: from_hf_repo's legacy branch, Moshi 7B defaults)
    mimi = info.get_mimi(device=device)
    lm = info.get_moshi(device=device, dtype=dtype)
    sampling = sampling_params(params, model)
    lm_gen = LMGen(lm, **{**info.lm_gen_config, **sampling})
    models = MoshiModels(mimi=mimi, lm_gen=lm_gen, tokenizer=info.get_text_tokenizer(), device=device,
                         extra={"checkpoint": str(folder), "model_type": info.model_type,
                                "config": "config.json" if files["config"] is not None else "none: moshi's Moshi 7B defaults",
                                "checkpoint_revision": checkpoint_revision(folder) or "unknown"})
    return models, {**info.lm_gen_config, **sampling}


@adapter("moshi")
class MoshiAgent:
    @staticmethod
    def missing_weights(params: dict[str, Any], model: str) -> list[str]:
        """What is missing for this model to load, each with where to put it (empty: ready)."""
        try:
            _complete_folder(params, model)
        except InputError as exc:
            return [str(exc)]
        return []

    def __init__(self, params: dict[str, Any], model_name: str = "moshi"):
        self.params = params
        self.model_name = model_name
        self.models, self.sampling = load_moshi(params, model_name)
        self.loop = MoshiFrameLoop(self.models, skip_first_frame=True)
        self.loop.start_streaming()
        self.loop.warmup(int(params.get("warmup_frames", 4)))

    def open(self, session: Session) -> AgentInfo:
        seed_everything(session.seed)
        self.loop.reset()
        return AgentInfo(
            adapter="moshi", adapter_version=__version__, model=self.model_name, voice="built-in",
            sampling=self.sampling,
            extra={**self.models.extra, "seed": session.seed, "device": str(self.models.device),
                   "prompt": "not used: Moshi takes no system prompt"},
        )

    def step(self, heard: np.ndarray) -> Frame:
        return self.loop.step(heard)

    def close(self) -> None:
        self.loop.reset()
