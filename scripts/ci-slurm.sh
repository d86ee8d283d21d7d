#!/usr/bin/env bash
# Runs a small demo suite through profiles/slurm on a real single-node SLURM cluster (started from
# Debian packages by scripts/slurm-local.sh), runs the same suite locally, and checks that both
# produced the same recordings, segments and measures.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1
bash scripts/slurm-local.sh start
trap 'bash scripts/slurm-local.sh stop' EXIT
target=scores/measures.tsv
rm -rf results/ci-slurm
last_job=$(squeue --states=all --noheader -o %i | sort -n | tail -1)
start=$(date +%s)
# No slurmdbd on this cluster: poll with squeue (sacct would hang the executor).
timeout -k 10 1200 snakemake --profile profiles/slurm --configfile config/ci-slurm.yaml \
  --config results_dir=results/ci-slurm/slurm --jobs 4 --cores 2 \
  --slurm-status-command squeue --slurm-init-seconds-before-status-checks 5 \
  "results/ci-slurm/slurm/$target"
echo "slurm run: $(( $(date +%s) - start )) s"
python scripts/check-slurm-jobs.py --config config/ci-slurm.yaml --after "${last_job:-0}" --max-cpus 2
start=$(date +%s)
timeout -k 10 1200 snakemake --profile profiles/local --configfile config/ci-slurm.yaml \
  --config results_dir=results/ci-slurm/local --cores 2 "results/ci-slurm/local/$target"
echo "local run: $(( $(date +%s) - start )) s"
python scripts/compare-results.py results/ci-slurm/slurm results/ci-slurm/local
