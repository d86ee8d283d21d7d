"""PersonaPlex's published checkpoint loaded into moshi 0.2.13's classes (for the batched engine).

The per-job ``personaplex`` adapter loads the checkpoint with NVIDIA's fork (its own moshi package).
An engine needs moshi 0.2.13's batched streaming state instead (see ``personaplex_engine``), so this
module re-states the fork's loader on 0.2.13's ``LMModel`` / ``MimiModel``.

Mirrors NVIDIA/personaplex @ 3428dfd, ``moshi/moshi/models/loaders.py``:

- ``get_moshi_lm(filename, copy_missing_weights=True, device, dtype=bfloat16)`` as the fork's server
  and offline script call it: ``LMModel(**_lm_kwargs)`` with ``dep_q`` set to 16 (the depformer
  predicts the agent's 8 codebooks and the user's 8), weights read from ``model.safetensors``, then
  two patches before ``load_state_dict(strict=False, assign=True)``:
  1. a depformer self-attention weight whose shape differs from the model's is concatenated with
     itself along dim 0 (an 8-step Moshi depformer becomes 16 steps, steps 8-15 copying 0-7);
  2. a missing ``gating.N.`` / ``linears.N.`` / ``depformer_in.N.`` / ``depformer_emb.N.`` weight
     with N in 8..15 is copied from N - 8.
  Both are applied here the same way (:func:`fork_patches`), and what they did is reported.
- ``get_mimi(filename, device)``: moshi's Mimi config (the fork's ``_seanet_kwargs`` /
  ``_quantizer_kwargs`` / ``_transformer_kwargs`` equal 0.2.13's ``_mimi_config``), 8 codebooks.
- ``lm.py`` ``SILENCE_TOKENS`` / ``SINE_TOKENS``: the real Mimi's codes of a silent and a 440 Hz
  frame, which the fork's prompt phase provides as agent and user audio.

Where the fork's architecture differs from moshi 0.2.13, and why the load is still faithful:

- *Configuration.* The fork's ``_lm_kwargs`` equal 0.2.13's module-level ``_lm_kwargs`` but for
  ``depformer_causal: True``, which 0.2.13 drops as deprecated (its depformer is causal anyway).
  :data:`FORK_LM_KWARGS` is the fork's, with ``dep_q`` 16; tests check it against 0.2.13's.
- *Attention weights.* The fork keeps each attention's projections fused (``in_proj_weight``
  ``[steps * 3 * D, D]``, ``out_proj.weight`` ``[steps * D, D]``, applied per depformer step by
  ``multi_linear``); 0.2.13 keeps one Linear per step (``in_projs.i`` / ``out_projs.i``) and its
  ``StreamingMultiheadAttention._load_hook`` splits the fused tensors row-wise, which is the same
  per-step matrix ``multi_linear`` takes. Every other parameter has the same name and shape.
- *Streaming state.* The fork's KV cache, offsets and LMGen offset are one per batch; 0.2.13's are
  per row with exec masks. For one row stepping every tick they compute the same thing; the
  engine relies on the per-row form to host sessions at different positions.
- *Strictness.* The fork loads with ``strict=False``: a key the model lacks after the patches stays
  on the meta device (the fork prints "Missing", then fails in ``model.to`` with "Cannot copy out of
  meta tensor"); a shape the patches cannot fix fails inside ``load_state_dict``. Here both are
  refused with an InputError naming the file, the keys, their shapes and the expected ones. Keys the
  fork's model does not have are ignored, as the fork ignores them, and counted in AgentInfo.
  (A stock Moshi checkpoint is such a case: the patches copy ``depformer_emb`` 8..14 from 0..6, so
  ``depformer_emb.7`` has no source.)

Checked against the fork itself (opt-in, tests/agents/test_personaplex_fork_parity.py with the fork's
source): on a tiny checkpoint in the published layout the fork's loader and this one leave the same
weights (patches included), and the fork's own prompt phase and LMGen give the engine's tokens.
- ``cpu_offload`` (the fork's accelerate path for small GPUs) is not re-stated: an engine keeps the
  whole model on its device, so the option is refused rather than ignored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dyafdb.errors import InputError

FORK = "NVIDIA/personaplex @ 3428dfd"
FORK_DEP_Q = 16

# The fork's loaders._lm_kwargs (its 7B configuration), with get_moshi_lm's dep_q = 16 applied and
# depformer_causal left out (0.2.13 drops it as deprecated; its depformer is causal by default).
FORK_LM_KWARGS: dict[str, Any] = {
    "dim": 4096,
    "text_card": 32000,
    "existing_text_padding_id": 3,
    "n_q": 16,
    "dep_q": FORK_DEP_Q,
    "card": 2048,
    "num_heads": 32,
    "num_layers": 32,
    "hidden_scale": 4.125,
    "causal": True,
    "layer_scale": None,
    "context": 3000,
    "max_period": 10000,
    "gating": "silu",
    "norm": "rms_norm_f32",
    "positional_embedding": "rope",
    "depformer_dim": 1024,
    "depformer_dim_feedforward": int(4.125 * 1024),
    "depformer_num_heads": 16,
    "depformer_num_layers": 6,
    "depformer_layer_scale": None,
    "depformer_multi_linear": True,
    "depformer_context": 8,
    "depformer_max_period": 10000,
    "depformer_gating": "silu",
    "depformer_pos_emb": "none",
    "depformer_weights_per_step": True,
    "delays": [0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1],
}

# The fork's lm.py constants: the real Mimi's codes for a silent frame and a 440 Hz sine frame.
SILENCE_TOKENS: tuple[int, ...] = (948, 243, 1178, 546, 1736, 1030, 1978, 2008)
SINE_TOKENS: tuple[int, ...] = (430, 1268, 381, 1611, 1095, 1495, 56, 472)

_PER_STEP = re.compile(r"^(?P<prefix>.*\.self_attn\.)(?P<kind>in_projs|out_projs)\.(?P<i>\d+)\.weight$")
_COPIED_GROUPS = ("gating", "linears", "depformer_in", "depformer_emb")


def mimi_config() -> dict[str, Any]:
    """The fork's Mimi configuration, which is moshi 0.2.13's ``_mimi_config``."""
    from moshi.models import loaders

    return loaders._mimi_config


def fork_layout(shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """0.2.13 parameter shapes renamed to the fork's layout: per-step projections fused row-wise."""
    fused: dict[str, list[tuple[int, ...]]] = {}
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in shapes.items():
        match = _PER_STEP.match(name)
        if match is None:
            out[name] = tuple(shape)
            continue
        key = match["prefix"] + ("in_proj_weight" if match["kind"] == "in_projs" else "out_proj.weight")
        fused.setdefault(key, []).append(tuple(shape))
    for key, parts in fused.items():
        out[key] = (sum(p[0] for p in parts), *parts[0][1:])
    return out


def fork_patches(state: dict[str, Any], expected: dict[str, tuple[int, ...]]) -> dict[str, list[str]]:
    """The fork's get_moshi_lm patches 1 and 2 (copy_missing_weights=True), in place on ``state``."""
    import torch

    done: dict[str, list[str]] = {"expanded": [], "copied": []}
    for name, tensor in list(state.items()):
        if "depformer" in name and "self_attn" in name and name in expected and tuple(tensor.shape) != expected[name]:
            state[name] = torch.concat([tensor, tensor], dim=0)
            done["expanded"].append(name)
    for name in expected:
        if name in state:
            continue
        for old, new in zip(range(8), range(8, 16)):
            group = next((g for g in _COPIED_GROUPS if f"{g}.{new}." in name), None)
            if group is None:
                continue
            source = name.replace(f"{group}.{new}.", f"{group}.{old}.")
            if source in state:
                state[name] = state[source]
                done["copied"].append(name)
            break
    return done


def _refuse(path: Path, what: str, items: list[str], fix: str) -> None:
    shown = "; ".join(items[:6]) + (f"; and {len(items) - 6} more" if len(items) > 6 else "")
    raise InputError(f"{path}: not a PersonaPlex checkpoint for {FORK}'s configuration (dim {FORK_LM_KWARGS['dim']}, "
                     f"dep_q {FORK_DEP_Q}): {what}: {shown}. {fix}")


def load_fork_lm(path: Path, device: Any, dtype: Any, lm_kwargs: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """moshi 0.2.13's LMModel with the fork's configuration and ``path``'s weights, as the fork loads them.

    Returns the model (eval mode) and a report of what the fork's patches did and which keys were
    ignored. Raises InputError when the weights do not fit the configuration.
    """
    from moshi.models.lm import LMModel
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    kwargs = dict(FORK_LM_KWARGS if lm_kwargs is None else lm_kwargs)
    if kwargs.get("existing_text_padding_id") is None:
        # The fork adds a text-output row for a padding id outside the vocabulary; 0.2.13 never does.
        raise InputError(f"{path}: the fork's text head is text_card + 1 wide without existing_text_padding_id, "
                         "which moshi 0.2.13's LMModel cannot represent")
    if kwargs.get("dep_q") != FORK_DEP_Q:
        raise InputError(f"{path}: PersonaPlex's depformer predicts {FORK_DEP_Q} codebooks, the configuration {kwargs.get('dep_q')}")
    model = LMModel(device="meta", dtype=dtype, **kwargs)
    expected = fork_layout({k: tuple(v.shape) for k, v in model.state_dict().items()})
    try:
        state = load_file(str(path), device=str(device))  # straight onto the device, as the fork does
    except (SafetensorError, OSError) as exc:
        raise InputError(f"{path}: cannot read the PersonaPlex weights ({exc}); re-download model.safetensors") from None
    in_file = {k: tuple(v.shape) for k, v in state.items()}
    report = fork_patches(state, expected)
    missing = sorted(set(expected) - set(state))
    if missing:
        _refuse(path, f"{len(missing)} weight(s) missing after the fork's patches", missing,
                "The fork's loader leaves them on the meta device and fails too; use the published "
                "nvidia/personaplex-7b-v1 model.safetensors")
    wrong = [f"{k} {in_file.get(k, tuple(state[k].shape))} (expected {expected[k]})"
             for k in expected if tuple(state[k].shape) != expected[k]]
    if wrong:
        _refuse(path, f"{len(wrong)} weight(s) of another shape", wrong,
                "Its architecture differs from the fork's; only the published nvidia/personaplex-7b-v1 weights load")
    ignored = sorted(set(state) - set(expected))
    for key in ignored:
        del state[key]
    for key, value in state.items():
        state[key] = value.to(device=device, dtype=dtype) if value.dtype.is_floating_point else value.to(device)
    # 0.2.13's attention load hook splits the fused projections into its per-step Linears.
    model.load_state_dict(state, strict=True, assign=True)
    meta = [name for name, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if meta:  # cannot happen after a strict load; guards against a future load hook that drops keys
        _refuse(path, "parameters left uninitialised", meta, "Report this with the moshi version installed")
    model.eval()
    return model, {"fork_expanded": len(report["expanded"]), "fork_copied": len(report["copied"]),
                   "ignored_keys": len(ignored)}


def load_fork_mimi(path: Path, device: Any, config: dict[str, Any] | None = None) -> Any:
    """Mimi as the fork's get_mimi builds it (8 codebooks), on moshi 0.2.13's classes."""
    from moshi.models import loaders

    try:
        return loaders.get_mimi(str(path), mimi_config=config or mimi_config(), device=device, num_codebooks=8)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[:3]
        raise InputError(f"{path}: not Mimi's weights for the fork's configuration ({' '.join(first)}); "
                         "use tokenizer-e351c8d8-checkpoint125.safetensors from nvidia/personaplex-7b-v1") from None


def check_prompt_tokens(lm: Any, path: Path, silence: tuple[int, ...], sine: tuple[int, ...]) -> None:
    """The fork's silence/sine codes must be codes of this model's audio vocabulary."""
    bad = [t for t in (*silence, *sine) if not 0 <= t < lm.card]
    if bad or len(silence) != 8 or len(sine) != 8:
        raise InputError(f"{path}: the fork's silence/sine prompt codes ({list(silence)}, {list(sine)}) do not fit "
                         f"this model's {lm.card}-entry audio codebooks; PersonaPlex's Mimi has 2048")
