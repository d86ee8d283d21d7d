#!/usr/bin/env bash
# The main job: the demo suite on the embedded CPU agents, end to end (recordings -> scores -> tables,
# figures and the HTML report), resumable: run it again after an interruption and it picks up where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1
snakemake --profile profiles/demo "$@"
