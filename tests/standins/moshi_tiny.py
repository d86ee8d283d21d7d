"""Tiny randomly initialised Mimi + Moshi LM built from moshi's own classes and configs.

Upstream: kyutai-labs/moshi @ e6a55d2 (``moshi==0.2.13`` from PyPI, the package the tests import):
``moshi/models/loaders.py`` ``get_mimi`` / ``get_moshi_lm`` / ``CheckpointInfo`` and its module-level
``_mimi_config`` / ``_lm_kwargs`` (what a repository without config.json, like moshiko, gets), and
``moshi/models/lm.py`` ``LMGen``. Nothing here reimplements them; only sizes shrink.

Same architecture family as the real checkpoints (Mimi at 24 kHz / 12.5 Hz, 1,920-sample frames,
a temporal transformer plus depformer over 1 text + 16 audio streams), shrunk to a few hundred
thousand parameters so a frame costs milliseconds on a CPU. Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

CARD = 256


@contextlib.contextmanager
def one_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy 2-core CI machine OpenMP's
    spinning threads make them 10-25x slower; restore the setting afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
CORPUS = [
    "hello there how are you today", "i would like to book a table for two tonight",
    "the weather is nice and sunny", "you are a friendly assistant <system>",
    "please tell me about your day", "<system> you enjoy a good conversation <system>",
]


def tiny_mimi_config() -> dict:
    from moshi.models import loaders

    cfg = copy.deepcopy(loaders._mimi_config)
    cfg["seanet"].update(dimension=64, n_filters=8)
    cfg["quantizer"].update(dimension=32, n_q=8, bins=CARD, input_dimension=64, output_dimension=64)
    cfg["transformer"].update(d_model=64, num_heads=4, num_layers=2, dim_feedforward=128,
                              input_dimension=64, output_dimensions=[64])
    return cfg


def tiny_lm_kwargs(text_card: int, dep_q: int = 8) -> dict:
    """dep_q=8: stock Moshi (agent codebooks only); dep_q=16: PersonaPlex (agent + user)."""
    from moshi.models import loaders

    kw = dict(loaders._lm_kwargs)
    kw.update(dim=64, num_heads=4, num_layers=2, hidden_scale=2, text_card=text_card, card=CARD, n_q=16,
              dep_q=dep_q, context=200, depformer_dim=32, depformer_dim_feedforward=64,
              depformer_num_heads=2, depformer_num_layers=1)
    return kw


def train_tokenizer(vocab_size: int = 40) -> bytes:
    """A real SentencePiece model (ids 0-3 = unk/bos/eos/pad, as Moshi's), trained in ~20 ms."""
    import sentencepiece as spm

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 20), model_writer=out, vocab_size=vocab_size,
                                   model_type="unigram", unk_id=0, bos_id=1, eos_id=2, pad_id=3,
                                   character_coverage=1.0, minloglevel=2)
    return out.getvalue()


def tokenizer(proto: bytes | None = None):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=proto or train_tokenizer())


def build_mimi(device: str = "cpu"):
    """A fresh Mimi's codebooks are all zeros (they are k-means initialised in training), which would
    make decoding ignore the codes; give them random entries so every code sounds different."""
    import torch
    from moshi.models import loaders

    mimi = loaders.get_mimi(None, mimi_config=tiny_mimi_config(), device=device, num_codebooks=8)
    with torch.no_grad():
        for module in mimi.modules():
            if hasattr(module, "embedding_sum") and hasattr(module, "_initialized"):
                module.embedding_sum.normal_()
                module._initialized.fill_(1)
                module._embedding = None
    return mimi


def build_lm(text_card: int, dep_q: int = 8, device: str = "cpu"):
    import torch
    from moshi.models import loaders

    return loaders.get_moshi_lm(None, lm_kwargs=tiny_lm_kwargs(text_card, dep_q), device=device, dtype=torch.float32)


def write_moshi_checkpoint(folder: Path, seed: int = 0, with_config: bool = True) -> Path:
    """A checkpoint folder laid out like kyutai's repositories, with config.json naming the files.

    ``with_config=False`` lays it out like kyutai/moshiko-pytorch-bf16, which has no config.json: the
    files carry moshi's default names and the loader assumes its module-level Moshi 7B configs (use
    ``as_default_architecture`` so those defaults are this tiny model's).
    """
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    proto = train_tokenizer()
    (folder / "tiny_spm.model").write_bytes(proto)
    vocab = tokenizer(proto).vocab_size()
    lm = build_lm(text_card=vocab)
    mimi = build_mimi()
    if not with_config:
        from moshi.models import loaders

        (folder / loaders.TEXT_TOKENIZER_NAME).write_bytes(proto)
        save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, str(folder / loaders.MOSHI_NAME))
        save_file({k: v.contiguous() for k, v in mimi.state_dict().items()}, str(folder / loaders.MIMI_NAME))
        (folder / "tiny_spm.model").unlink()
        return folder
    save_file({k: v.contiguous() for k, v in lm.state_dict().items()}, str(folder / "tiny_lm.safetensors"))
    save_file({k: v.contiguous() for k, v in mimi.state_dict().items()}, str(folder / "tiny_mimi.safetensors"))
    (folder / "mimi_config.json").write_text(json.dumps(tiny_mimi_config()))
    config = {**tiny_lm_kwargs(vocab), "moshi_name": "tiny_lm.safetensors", "mimi_name": "tiny_mimi.safetensors",
              "tokenizer_name": "tiny_spm.model", "mimi_config_name": "mimi_config.json", "model_type": "moshi"}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@contextlib.contextmanager
def as_default_architecture(text_card: int):
    """Make moshi's module-level defaults (what a checkpoint without config.json gets) the tiny model's."""
    from moshi.models import loaders

    saved = (loaders._lm_kwargs, loaders._mimi_config)
    loaders._lm_kwargs, loaders._mimi_config = tiny_lm_kwargs(text_card), tiny_mimi_config()
    try:
        yield
    finally:
        loaders._lm_kwargs, loaders._mimi_config = saved


def write_hub_cache(hf_home: Path, repo: str, source: Path, revision: str = "0" * 40) -> Path:
    """Put ``source``'s files into a local Hugging Face cache as a snapshot of ``repo`` (offline lookup only)."""
    import shutil

    root = hf_home / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        shutil.copy(path, snapshot / path.name)
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(revision)
    return snapshot
