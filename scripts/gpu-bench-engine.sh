#!/usr/bin/env bash
# The batched Moshi engine at full size on one GPU: ms per tick at batch 1, 8, 16, 32, eager and with
# CUDA graphs, for the PersonaPlex architecture (moshi's 7B LM with a 16-codebook depformer, full Mimi),
# random bf16 weights, no checkpoint needed. Target on one H200: 32 conversations within 80 ms per tick.
# Runs in under 5 minutes (one model build, 45 ticks per batch and mode) and ends with one JSON line:
#   {"summary": "bench_engine", ..., "ms_per_tick": {"eager": {...}, "graph": {...}},
#    "largest_batch_under_80ms": {"eager": N, "graph": N}}
#
#     bash scripts/gpu-bench-engine.sh                       # in the Moshi environment (envs/moshi.yml)
#     PYTHON=/path/to/python DEP_Q=8 BATCHES=1,8,16,32,48 bash scripts/gpu-bench-engine.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
BATCHES=${BATCHES:-1,8,16,32}
DEP_Q=${DEP_Q:-16}

"$PY" - <<'PYEOF'
import sys
try:
    import torch, moshi  # noqa: F401
except ImportError as exc:
    sys.exit(f"gpu-bench-engine: {exc}; run it in the Moshi environment (envs/moshi.yml)")
if not torch.cuda.is_available():
    sys.exit("gpu-bench-engine: torch sees no CUDA device (CUDA_VISIBLE_DEVICES, driver, or a CPU-only torch build)")
PYEOF

PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" timeout 290 "$PY" bench/bench_engine.py --device cuda --size full \
    --dtype bfloat16 --dep-q "$DEP_Q" --batch "$BATCHES" --modes eager,graph --frames 40 --warmup 5 --summary
