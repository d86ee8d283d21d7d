#!/usr/bin/env bash
# Runs a small demo suite through profiles/slurm on a single-node SLURM cluster that enforces
# accounting like a real site (started from Debian packages by scripts/slurm-local.sh): first shows
# that the cluster rejects a job without the site's account, then runs the suite with the site
# variables set, checks every submitted job's account, partition and GPUs, runs the same suite
# locally, and checks that both produced the same recordings, segments and measures.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1
bash scripts/slurm-local.sh start
trap 'bash scripts/slurm-local.sh stop' EXIT

export DYAFDB_SLURM_PARTITION=cpu DYAFDB_SLURM_GPU_PARTITION=gpu DYAFDB_SLURM_ACCOUNT=dyafdb-ci DYAFDB_SLURM_GPU_MODEL=fake
# Enforcement is real: without the account, or with one the user has no association with, sbatch refuses.
for how in "" "-A no-such-account"; do
  # shellcheck disable=SC2086
  if sbatch $how -t 1 --wrap true >/tmp/ci-slurm-sbatch.log 2>&1; then
    echo "ci-slurm: the cluster accepted a job submitted with '${how:-no account}'; accounting is not enforced" >&2
    exit 1
  fi
  echo "rejected as at a real site ('${how:-no account}'): $(tail -1 /tmp/ci-slurm-sbatch.log)"
done

# The highest job id sacct lists (0 if none): with pipefail, a grep that matched nothing would stop the script.
last_job_id() {
  sacct -X -n -P -o JobID -S now-1days | { grep -E '^[0-9]+$' || true; } | sort -n | tail -1
}

target=scores/measures.tsv
rm -rf results/ci-slurm
last_job=$(last_job_id)
start=$(date +%s)
# Job states come from sacct, the plugin's default (slurmdbd keeps them).
timeout -k 10 1800 snakemake --profile profiles/slurm --configfile config/ci-slurm.yaml \
  --config results_dir=results/ci-slurm/slurm --jobs 4 --cores 2 \
  --slurm-init-seconds-before-status-checks 5 \
  "results/ci-slurm/slurm/$target"
echo "slurm run: $(( $(date +%s) - start )) s"
python scripts/check-slurm-jobs.py --config config/ci-slurm.yaml --after "${last_job:-0}" --max-cpus 2
start=$(date +%s)
timeout -k 10 1800 snakemake --profile profiles/local --configfile config/ci-slurm.yaml \
  --config results_dir=results/ci-slurm/local --cores 2 "results/ci-slurm/local/$target"
echo "local run: $(( $(date +%s) - start )) s"
python scripts/compare-results.py results/ci-slurm/slurm results/ci-slurm/local

# Engine node groups (docs/engines.md): two tiny random Moshi-architecture models with engines, in
# cross-play, through profiles/slurm; each pairing's record jobs and its two engines run as one SLURM
# job, and every model is loaded once per group (scripts/check-engine-groups.py).
engines=results/ci-slurm-engines
rm -rf "$engines/slurm" .dyafdb-engines
python scripts/write-tiny-moshi.py "$engines/moshi-tiny"
mapfile -t targets < <(python scripts/check-engine-groups.py --config config/ci-slurm-engines.yaml \
  --results "$engines/slurm" --print-targets)
last_job=$(last_job_id)
start=$(date +%s)
timeout -k 10 900 snakemake --profile profiles/slurm --configfile config/ci-slurm-engines.yaml \
  --config results_dir="$engines/slurm" --jobs 4 --cores 6 \
  --slurm-init-seconds-before-status-checks 5 -- "${targets[@]}"
echo "slurm engine-group run: $(( $(date +%s) - start )) s"
python scripts/check-engine-groups.py --config config/ci-slurm-engines.yaml --results "$engines/slurm" \
  --cores 6 --after "${last_job:-0}"

# The same for the engines that step each session on their own (config/ci-slurm-engines-sessions.yaml):
# MiniCPM-o (one session at a time, the group's conversations take turns at one load) and Raon (its
# gateway stand-in started once per engine), through their real adapters over the stand-ins, whose
# files are written here; nothing is downloaded.
rm -rf "$engines/sessions" "$engines/standins" .dyafdb-engines
python - "$engines/standins" <<'PY'
import sys, wave
from pathlib import Path

import numpy as np

root = Path(sys.argv[1])
(root / "MiniCPM-o-4_5").mkdir(parents=True)
(root / "MiniCPM-o-4_5" / "config.json").write_text("{}")  # what the adapter's checkpoint check reads
(root / "MiniCPM-o-4_5" / "assets" / "ref_audio").mkdir(parents=True)
# 1 s reference voices, 24 kHz mono; MiniCPM-o's where the adapter's default ref_audio looks
for name in ("MiniCPM-o-4_5/assets/ref_audio/ref_en_dlc_1.wav", "raon.wav"):
    with wave.open(str(root / name), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(24000)
        w.writeframes((np.sin(np.arange(24000) * 0.05) * 3000).astype("<i2").tobytes())
# SpeechBrain's ECAPA snapshot where Raon's demo worker looks for it (dyafdb.agents.raon.ecapa_location)
ecapa = root / "ecapa" / "speechbrain_spkrec-ecapa-voxceleb"
ecapa.mkdir(parents=True)
for name in ("hyperparams.yaml", "embedding_model.ckpt"):
    (ecapa / name).write_text("stand-in")
(root / "ecapa" / "speechbrain_spkrec-ecapa-voxceleb.done").write_text("done")
PY
mapfile -t targets < <(python scripts/check-engine-groups.py --config config/ci-slurm-engines-sessions.yaml \
  --results "$engines/sessions" --print-targets)
last_job=$(last_job_id)
start=$(date +%s)
timeout -k 10 900 snakemake --profile profiles/slurm --configfile config/ci-slurm-engines-sessions.yaml \
  --config results_dir="$engines/sessions" --jobs 4 --cores 10 \
  --slurm-init-seconds-before-status-checks 5 -- "${targets[@]}"
echo "slurm session-engine-group run: $(( $(date +%s) - start )) s"
python scripts/check-engine-groups.py --config config/ci-slurm-engines-sessions.yaml --results "$engines/sessions" \
  --cores 10 --group-size 8 --after "${last_job:-0}"
