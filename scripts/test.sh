#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
export NO_TORCH_COMPILE=1 HF_HUB_OFFLINE=1
python -m pytest -q "$@"
