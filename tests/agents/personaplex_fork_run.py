"""Run NVIDIA's PersonaPlex fork itself on a checkpoint folder: ``python personaplex_fork_run.py SPEC.json OUT.npz``.

Run with the fork's ``moshi/`` source folder first on PYTHONPATH (test_personaplex_fork_parity.py
does), so ``import moshi`` is the fork. Follows the ``personaplex`` adapter's sequence, which is the
fork's ``offline.py``: ``loaders.get_mimi``, ``loaders.get_moshi_lm`` (the fork's patches and
``strict=False`` load), ``LMGen(..., audio_silence_frame_cnt, sample_rate, frame_rate)``,
``load_voice_prompt_embeddings``, ``text_prompt_tokens``, ``reset_streaming``,
``step_system_prompts(mimi)``, ``mimi.reset_streaming()``, then per frame ``mimi.encode`` ->
``lm_gen.step`` -> ``mimi.decode`` of the agent's 8 codebooks. Greedy decoding (use_sampling
false), so the fork's global-RNG sampler draws nothing and the tokens can be compared exactly.
With ``dump_state`` in the spec it only loads the LM and saves its weights (and names any left on
the meta device, i.e. never loaded).

The spec swaps the fork's module-level 7B / Mimi configuration and its SILENCE/SINE codes for the
test's tiny ones, as the tests do for moshi 0.2.13's loader.
"""

from __future__ import annotations

import json
import sys
import types

import numpy as np


def main(spec_path: str, out_path: str) -> int:
    sys.modules.setdefault("sphn", types.ModuleType("sphn"))  # the fork's wav I/O; .pt voices never use it
    import torch
    import moshi
    from moshi.models import lm as fork_lm
    from moshi.models import loaders

    assert hasattr(fork_lm.LMGen, "step_system_prompts"), f"{moshi.__file__} is not the PersonaPlex fork"
    spec = json.loads(open(spec_path).read())
    loaders._lm_kwargs = spec["lm_kwargs"]
    loaders._seanet_kwargs = spec["mimi"]["seanet"]
    loaders._quantizer_kwargs = spec["mimi"]["quantizer"]
    loaders._transformer_kwargs = spec["mimi"]["transformer"]
    fork_lm.SILENCE_TOKENS = np.array(spec["silence"], dtype=np.int64)
    fork_lm.SINE_TOKENS = np.array(spec["sine"], dtype=np.int64)
    torch.set_num_threads(1)
    with torch.no_grad():
        lm = loaders.get_moshi_lm(spec["moshi_path"], device="cpu", dtype=torch.float32)
        lm.eval()
        if spec.get("dump_state"):  # the weights as the fork's loader (and its patches) left them
            from safetensors.torch import save_file

            state = lm.state_dict()
            save_file({k: v.clone() for k, v in state.items() if not v.is_meta}, spec["dump_state"])  # copies share storage
            print(json.dumps({"meta": sorted(k for k, v in state.items() if v.is_meta)}))
            return 0
        mimi = loaders.get_mimi(spec["mimi_path"], "cpu")
        lm_gen = fork_lm.LMGen(lm, device="cpu", use_sampling=False, audio_silence_frame_cnt=spec["silence_frames"],
                               sample_rate=mimi.sample_rate, frame_rate=mimi.frame_rate)
        lm_gen.load_voice_prompt_embeddings(spec["voice"])
        mimi.streaming_forever(1)
        lm_gen.streaming_forever(1)
        lm_gen.text_prompt_tokens = spec["prompt_tokens"]
        mimi.reset_streaming()
        lm_gen.reset_streaming()
        lm_gen.step_system_prompts(mimi)
        mimi.reset_streaming()
        frames = np.load(spec["frames"])
        tokens, audio = [], []
        for frame in frames:
            codes = mimi.encode(torch.from_numpy(frame).view(1, 1, -1))
            out = lm_gen.step(codes[:, :, 0:1])
            if out is None:
                tokens.append(np.full(1 + lm.dep_q, -1))
                audio.append(np.zeros(frame.shape[-1], np.float32))
                continue
            tokens.append(out[0, :, 0].numpy())
            audio.append(mimi.decode(out[:, 1:9])[0, 0].numpy())
    np.savez(out_path, tokens=np.stack(tokens), audio=np.concatenate(audio), fork=moshi.__file__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
