"""Step time of a Moshi-architecture LM per 80 ms frame, with random weights (no checkpoint needed).

    python bench/moshi_lm_step.py --device cuda --batch 1,4,16              # moshiko shape (dep_q 8)
    python bench/moshi_lm_step.py --quick                 # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/moshi_lm_step.py --device cuda --batch 1,4,16 --dep-q 16   # PersonaPlex shape
    python bench/moshi_lm_step.py --device cpu --size tiny --batch 1,2      # smoke run anywhere

The LM is moshi's own ``LMModel`` built from ``loaders._lm_kwargs`` (7B: dim 4096, 32 layers,
depformer 1024 x 6), initialised at random on the device in bf16, and stepped through stock
``LMGen`` in streaming mode with random user codes, exactly as the adapters step it (CUDA graphs on
when the device is CUDA). ``--mimi`` also times Mimi encode + decode of one frame at the same batch.
Per batch it prints the median and p90 of the step time, the real-time factor of one stream
(80 ms / step) and how many concurrent streams one GPU could carry at real time (batch x RTF).
Random weights give the same FLOPs as real ones, so the timing carries over; what is sampled does not.
"""

from __future__ import annotations

from _figures import Bench  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench()  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import sys
import statistics
import time

FRAME_MS = 80.0


def build(args: argparse.Namespace):
    import torch
    from moshi.models import loaders

    dtype = getattr(torch, args.dtype)
    lm_kwargs = dict(loaders._lm_kwargs)
    mimi_config = None
    if args.size == "tiny":
        import copy

        lm_kwargs.update(dim=64, num_heads=4, num_layers=2, hidden_scale=2, text_card=1000, card=256, context=100,
                         depformer_dim=32, depformer_dim_feedforward=64, depformer_num_heads=2, depformer_num_layers=1)
        mimi_config = copy.deepcopy(loaders._mimi_config)
        mimi_config["seanet"].update(dimension=64, n_filters=8)
        mimi_config["quantizer"].update(dimension=32, n_q=8, bins=256, input_dimension=64, output_dimension=64)
        mimi_config["transformer"].update(d_model=64, num_heads=4, num_layers=2, dim_feedforward=128,
                                          input_dimension=64, output_dimensions=[64])
    lm_kwargs["dep_q"] = args.dep_q
    t0 = time.perf_counter()
    lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs, device=args.device, dtype=dtype)
    lm.eval()
    mimi = loaders.get_mimi(None, mimi_config=mimi_config, device=args.device, num_codebooks=8) if args.mimi else None
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    build_s = time.perf_counter() - t0
    params = sum(p.numel() for p in lm.parameters())
    return lm, mimi, lm_kwargs, build_s, params


def time_batch(lm, mimi, lm_kwargs: dict, batch: int, args: argparse.Namespace) -> dict:
    import torch
    from moshi.models import LMGen

    cuda = args.device.startswith("cuda")
    lm_gen = LMGen(lm, temp=0.8, temp_text=0.7, top_k=250, top_k_text=25)
    user_q = 8  # the user stream's Mimi codebooks (with dep_q 16 stock LMGen takes and ignores them, the fork forces them)
    card = lm_kwargs["card"]
    steps, mimi_steps = [], []
    with torch.no_grad(), lm_gen.streaming(batch):
        streaming = mimi.streaming(batch) if mimi is not None else None
        if streaming is not None:
            streaming.__enter__()
        try:
            for i in range(args.warmup + args.frames):
                codes = torch.randint(0, card, (batch, user_q, 1), device=args.device)
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = lm_gen.step(codes)
                if cuda:
                    torch.cuda.synchronize()
                t1 = time.perf_counter()
                if i >= args.warmup:
                    steps.append((t1 - t0) * 1000)
                if mimi is not None:
                    pcm = torch.randn(batch, 1, 1920, device=args.device) * 0.1
                    t0 = time.perf_counter()
                    mimi.encode(pcm)
                    if out is not None:
                        mimi.decode(out[:, 1:9])
                    if cuda:
                        torch.cuda.synchronize()
                    if i >= args.warmup:
                        mimi_steps.append((time.perf_counter() - t0) * 1000)
        finally:
            if streaming is not None:
                streaming.__exit__(None, None, None)
    median = statistics.median(steps)
    row = {"batch": batch, "lm_step_ms_median": round(median, 2),
           "lm_step_ms_p90": round(sorted(steps)[int(0.9 * (len(steps) - 1))], 2),
           "rtf_per_stream": round(FRAME_MS / median, 2), "streams_at_real_time": round(batch * FRAME_MS / median, 1)}
    if mimi_steps:
        total = median + statistics.median(mimi_steps)
        row.update(mimi_ms_median=round(statistics.median(mimi_steps), 2), frame_ms_median=round(total, 2),
                   rtf_per_stream_with_mimi=round(FRAME_MS / total, 2))
    if cuda:
        row["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--size", choices=["full", "tiny"], default="full")
    parser.add_argument("--dep-q", type=int, default=8, help="8 = moshiko, 16 = PersonaPlex's depformer")
    parser.add_argument("--batch", default="1,4,16", help="comma-separated batch sizes")
    parser.add_argument("--frames", type=int, default=100, help="timed frames per batch size")
    parser.add_argument("--warmup", type=int, default=10, help="untimed frames first (CUDA graph capture)")
    parser.add_argument("--mimi", action="store_true", help="also time Mimi encode + decode")
    parser.add_argument("--quick", action="store_true", help="the smallest size that runs every part (CI): the tiny model on the CPU, batch 1, 2 frames")
    # --quick changes the defaults only, so an option given beside it still wins.
    if "--quick" in sys.argv[1:]:
        parser.set_defaults(device="cpu", dtype="float32", size="tiny", batch="1", frames=2, warmup=1, mimi=True)
    args = parser.parse_args()

    import torch

    lm, mimi, lm_kwargs, build_s, params = build(args)
    header = {"device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else args.device,
              "torch": torch.__version__, "dtype": args.dtype, "size": args.size, "dep_q": args.dep_q,
              "lm_params_b": round(params / 1e9, 3), "build_s": round(build_s, 1)}
    print(json.dumps(header), flush=True)
    for batch in (int(b) for b in args.batch.split(",")):
        print(json.dumps(time_batch(lm, mimi, lm_kwargs, batch, args)), flush=True)


if __name__ == "__main__":
    main()
