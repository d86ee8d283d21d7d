"""Cost of one conversation's frame when sessions share a batched Moshi engine (random weights).

    python bench/bench_engine.py                          # CPU, scaled tiny model, batch 1,2,4,8,16
    python bench/bench_engine.py --quick                  # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/bench_engine.py --device cuda --size full --dtype bfloat16 --batch 1,8,16,32 --modes eager,graph
    python bench/bench_engine.py --group 16               # model loads per conversation, engine vs per-job workers

A tick is one batched step of the engine (``dyafdb.agents.moshi.engine.BatchedMoshi``): Mimi
encode of every session's heard frame, one LM step with the depformer, Mimi decode, per-session
sampling. The model is moshi's own Mimi + LMModel built from ``loaders`` configs. ``--size tiny`` is
the tests' tiny configuration (tests/standins/moshi_tiny.py) scaled up (LM dim 384, 6 layers,
depformer 192 x 2; Mimi as in the tests) so one batch-1 tick takes 10-50 ms on one CPU thread;
``--size full`` is the 7B Moshi/PersonaPlex shape with the full Mimi (GPU only).

Prints a header line, then one JSON line per mode and batch size: median and p90 ms per tick, ms
per conversation-frame (tick / batch) and its ratio to batch 1 (CPU target at batch 8: <= 0.3);
``--summary`` ends with one line holding them all and the largest batch within the 80 ms frame.
Random weights cost the same FLOPs as real ones, so the timing carries over; what is sampled does not.
"""

from __future__ import annotations

from _figures import Bench  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench()  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import copy
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "standins"))

FRAME_MS = 80.0


def build(args: argparse.Namespace):
    import torch
    from moshi.models import loaders

    dtype = getattr(torch, args.dtype)
    lm_kwargs = dict(loaders._lm_kwargs)
    mimi_config = None
    if args.size == "tiny":
        import moshi_tiny

        lm_kwargs = moshi_tiny.tiny_lm_kwargs(text_card=1000, dep_q=args.dep_q)
        lm_kwargs.update(dim=args.dim, num_heads=8, num_layers=args.layers, context=250, depformer_dim=args.dim // 2,
                         depformer_dim_feedforward=args.dim, depformer_num_heads=4, depformer_num_layers=2)
        mimi_config = moshi_tiny.tiny_mimi_config()
    lm_kwargs["dep_q"] = args.dep_q
    torch.manual_seed(0)
    t0 = time.perf_counter()
    lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs, device=args.device, dtype=dtype)
    lm.eval()
    mimi = loaders.get_mimi(None, mimi_config=mimi_config or copy.deepcopy(loaders._mimi_config),
                            device=args.device, num_codebooks=8)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    return lm, mimi, time.perf_counter() - t0, sum(p.numel() for p in lm.parameters())


class _Tokens:
    """Text pieces are not measured; the engine needs only id_to_piece for non-padding ids."""

    def id_to_piece(self, i: int) -> str:
        return f"t{i}"


def time_batch(lm, mimi, batch: int, args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    from dyafdb.agents.moshi.engine import BatchedMoshi
    from dyafdb.agents.moshi.stack import DEFAULT_SAMPLING

    cuda = args.device.startswith("cuda")
    engine = BatchedMoshi(mimi, lm, _Tokens(), batch, DEFAULT_SAMPLING, device=args.device)
    rng = np.random.default_rng(batch)
    try:
        slots = [engine.join(seed=i) for i in range(batch)]
        ticks = []
        for i in range(args.warmup + args.frames):
            heard = {s: (rng.standard_normal(1920) * 0.05).astype(np.float32) for s in slots}
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            engine.step(heard)  # returns numpy frames: the device work is done when it returns
            if i >= args.warmup:
                ticks.append((time.perf_counter() - t0) * 1000)
    finally:
        engine.close()
    median = statistics.median(ticks)
    row = {"batch": batch, "tick_ms_median": round(median, 2),
           "tick_ms_p90": round(sorted(ticks)[int(0.9 * (len(ticks) - 1))], 2),
           "ms_per_conversation_frame": round(median / batch, 3),
           "within_80ms_frame": median <= FRAME_MS}
    if cuda:
        row["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
    return row


def group_loads(n: int, ticks: int = 10) -> dict:
    """Model loads for ``n`` self-play conversations run as record jobs at once (each job its own
    AgentPool, as ``dyafdb record`` builds it): through one Moshi engine (tiny checkpoint), and with
    per-job workers (null workers: a worker start is one model load in a real run)."""
    import tempfile
    import threading

    import moshi_tiny

    from dyafdb.agents.base import Session
    from dyafdb.agents.engine.client import EngineAgent
    from dyafdb.agents.engine.launch import Engines
    from dyafdb.record.bridge import run_bridge
    from dyafdb.record.conversation import AgentPool

    def run_jobs(config: dict, model: str) -> list[dict]:
        infos: list[dict] = []

        def job(i: int) -> None:
            with AgentPool(config) as pool:
                agents = dict(zip("ab", pool.get_all([(model, 0), (model, 1)])))
                sessions = {s: Session(conversation_id=f"c{i}", side=s, prompt="", speaker_name=s, seed=i * 2 + k,
                                       is_opener=s == "a", window_ticks=ticks) for k, s in enumerate("ab")}
                run_bridge(agents, sessions, ticks, 0, "a")
                infos.extend(a.worker_info for a in agents.values())

        threads = [threading.Thread(target=job, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return infos

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = moshi_tiny.write_moshi_checkpoint(Path(tmp) / "tiny")
        engine_cfg = {"bridge": {"in_process": False}, "models": {"moshi": {
            "adapter": "moshi", "params": {"checkpoint_dir": str(ckpt), "device": "cpu", "dtype": "float32"},
            "engine": {"sessions": 2 * n, "max_wait_ms": 50}, "worker": {"env": {"OMP_NUM_THREADS": "1"}}}}}
        engines = Engines()
        t0 = time.perf_counter()
        socks = engines.start(engine_cfg, ["moshi"])
        try:
            infos = run_jobs(engine_cfg, "moshi")
            final = EngineAgent("moshi", socks["moshi"]).worker_info
        finally:
            engines.stop()
        engine_s = time.perf_counter() - t0
    os.environ.pop("DYAFDB_ENGINES", None)
    t0 = time.perf_counter()
    worker_infos = run_jobs({"bridge": {"in_process": False}, "models": {"null": {"adapter": "null"}}}, "null")
    return {"group": n, "ticks": ticks,
            "engine": {"engine_processes": len({i["pid"] for i in infos}), "model_loads": final["model_loads"],
                       "loads_per_conversation": round(final["model_loads"] / n, 4),
                       "sessions": final["sessions_opened"], "largest_batch": final["largest_batch"],
                       "wall_s": round(engine_s, 1)},
            "workers": {"worker_starts": len({i["pid"] for i in worker_infos}),
                        "loads_per_conversation": round(len({i["pid"] for i in worker_infos}) / n, 4),
                        "wall_s": round(time.perf_counter() - t0, 1)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--size", choices=["tiny", "full"], default="tiny")
    parser.add_argument("--dim", type=int, default=384, help="tiny size: LM width")
    parser.add_argument("--layers", type=int, default=6, help="tiny size: LM layers")
    parser.add_argument("--dep-q", type=int, default=8, help="8 = Moshi, 16 = PersonaPlex's depformer")
    parser.add_argument("--batch", default="1,2,4,8,16", help="comma-separated batch sizes")
    parser.add_argument("--frames", type=int, default=40, help="timed ticks per batch size")
    parser.add_argument("--warmup", type=int, default=5, help="untimed ticks first (CUDA graph capture)")
    parser.add_argument("--threads", type=int, default=1, help="CPU: torch intra-op threads")
    parser.add_argument("--modes", default="eager",
                        help="GPU: comma-separated eager,graph (moshi's CUDA graphs on or off, same loaded model)")
    parser.add_argument("--summary", action="store_true",
                        help="end with one JSON line: ms per tick per mode and batch, largest batch under 80 ms")
    parser.add_argument("--group", type=int, default=0,
                        help="instead: model loads for this many conversations run as record jobs at once")
    parser.add_argument("--quick", action="store_true", help="the smallest size that runs every part (CI): LM 128 x 2, batches 1 and 2, 3 ticks")
    # --quick changes the defaults only, so an option given beside it still wins.
    if "--quick" in sys.argv[1:]:
        parser.set_defaults(dim=128, layers=2, batch="1,2", frames=3, warmup=1)
    args = parser.parse_args()
    if args.group:
        print(json.dumps(group_loads(args.group)), flush=True)
        return

    import torch

    torch.set_num_threads(args.threads)
    lm, mimi, build_s, params = build(args)
    cuda = args.device.startswith("cuda")
    header = {"device": torch.cuda.get_device_name(0) if cuda else f"cpu x{args.threads} thread(s)",
              "torch": torch.__version__, "dtype": args.dtype, "size": args.size, "dep_q": args.dep_q,
              "lm_params_m": round(params / 1e6, 1), "build_s": round(build_s, 1)}
    print(json.dumps(header), flush=True)
    summary: dict = {"summary": "bench_engine", **header, "ms_per_tick": {}, "largest_batch_under_80ms": {}}
    for mode in args.modes.split(","):
        if mode not in ("eager", "graph"):
            parser.error(f"--modes: {mode!r} is neither eager nor graph")
        # moshi's CUDAGraphed reads NO_CUDA_GRAPH at every call, so one loaded model serves both modes.
        os.environ["NO_CUDA_GRAPH"] = "1" if mode == "eager" else "0"
        base = None
        per_batch: dict[str, float] = {}
        for batch in (int(b) for b in args.batch.split(",")):
            try:
                row = time_batch(lm, mimi, batch, args)
            except torch.OutOfMemoryError:
                print(json.dumps({"mode": mode, "batch": batch, "error": "out of memory"}), flush=True)
                torch.cuda.empty_cache()
                break
            row = {"mode": mode, **row}
            if batch == 1:
                base = row["ms_per_conversation_frame"]
            if base:
                row["per_conversation_vs_batch_1"] = round(row["ms_per_conversation_frame"] / base, 3)
            per_batch[str(batch)] = row["tick_ms_median"]
            print(json.dumps(row), flush=True)
        summary["ms_per_tick"][mode] = per_batch
        fits = [int(b) for b, ms in per_batch.items() if ms <= FRAME_MS]
        summary["largest_batch_under_80ms"][mode] = max(fits) if fits else None
    if args.summary:
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
