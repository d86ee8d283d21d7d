#!/usr/bin/env bash
# A machine with an accelerator, first day. Two jobs:
#
# 1. (default) The real models' smoke test (scripts/gpu_smoke.py): for every model in the config
#    whose adapter needs weights, say which weights/code are missing and where to put them; record one
#    10 s conversation of each model that has them against the embedded CPU agent, through its worker
#    as a record job starts it, and check speech on both channels, a non-empty text channel, the
#    opener audible within the lead-in, sampling and voice in meta.json as configured, step time per
#    tick. Run it in the project's environment (the models' workers start their own conda envs):
#
#     bash scripts/gpu-check.sh                                   # config/config.yaml, all real models
#     bash scripts/gpu-check.sh --models personaplex --seconds 20 --out results/gpu-check
#     bash scripts/gpu-check.sh --weights-only                    # only: what is missing, where it goes
#
# 2. `throughput`: how fast a full-size Moshi-architecture LM (moshi's own default _lm_kwargs, 7B,
#    random weights, bf16) steps per 80 ms frame, at batch 1 and batched, for moshiko's depformer
#    (8 codebooks) and PersonaPlex's (16), with Mimi timed alongside. No checkpoint is needed. Run it
#    in the Moshi environment (envs/moshi.yml: torch with CUDA + moshi):
#
#     conda run -n dyafdb-moshi bash scripts/gpu-check.sh throughput   # or: PYTHON=/path/to/python ...
#     BATCHES=1,2,4,8,16,32 FRAMES=200 bash scripts/gpu-check.sh throughput
#
#    Prints one JSON line per configuration and batch size; see bench/moshi_lm_step.py for the fields.
#
# 3. `all`: every adapter and every engine on the real weights, in one run of at most 10 minutes on one
#    H200 (--budget-s 600; later steps are skipped, and say so, past it), ending with one table:
#    - the smoke test above for each model (Moshi and PersonaPlex greedy, against a scripted partner);
#    - each model's engine, in the environment its engine runs in (scripts/gpu_probe.py):
#      Moshi and PersonaPlex ms per tick at batch 1/8/16/32, eager and with CUDA graphs; PersonaPlex's
#      join with the released voice (alone, and riding in 8 sessions' ticks); the smoke conversation
#      again through the engine at batch 1, its text tokens compared with the worker's (greedy: equal);
#      MiniCPM-o's chunk compute times and Raon's voice applied, through their engines.
#    On a GPU the table goes into BENCHMARKS.md (its gpu-check block; --record FILE elsewhere).
#
#     bash scripts/gpu-check.sh all                             # config/config.yaml, with engine sections
#     bash scripts/gpu-check.sh all --models moshi,personaplex --batches 1,8 --modes graph
#
#    A model without an `engine` section gets the default engine command (its worker's environment);
#    PersonaPlex needs `engine.command` in the Moshi environment (docs/engines.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
if [ "${1:-}" = "all" ]; then
    shift
    exec timeout --kill-after=30 "${GPU_CHECK_LIMIT_S:-660}" "$PY" scripts/gpu_smoke.py --engines "$@"
fi
if [ "${1:-}" != "throughput" ]; then
    exec "$PY" scripts/gpu_smoke.py "$@"
fi
BATCHES=${BATCHES:-1,4,16}
FRAMES=${FRAMES:-100}

"$PY" - <<'PYEOF'
import sys
try:
    import torch, moshi  # noqa: F401
except ImportError as exc:
    sys.exit(f"gpu-check: {exc}; run it in the Moshi environment (envs/moshi.yml)")
if not torch.cuda.is_available():
    sys.exit("gpu-check: torch sees no CUDA device (CUDA_VISIBLE_DEVICES, driver, or a CPU-only torch build)")
print(f"# torch {torch.__version__}, moshi {moshi.__version__}, {torch.cuda.get_device_name(0)}, "
      f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB", flush=True)
PYEOF

echo "# moshiko shape (dep_q 8), with Mimi encode+decode"
"$PY" bench/moshi_lm_step.py --device cuda --dtype bfloat16 --dep-q 8 --batch "$BATCHES" --frames "$FRAMES" --mimi
echo "# PersonaPlex shape (dep_q 16)"
"$PY" bench/moshi_lm_step.py --device cuda --dtype bfloat16 --dep-q 16 --batch "$BATCHES" --frames "$FRAMES"
