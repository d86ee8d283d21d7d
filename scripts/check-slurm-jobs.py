"""Check the SLURM jobs a profiles/slurm run submitted, from the cluster's accounting (sacct):

- every job was charged to the site's account and went to the site's CPU partition, except record
  jobs whose models declare GPUs, which went to the GPU partition with that many GPUs of the site's
  GPU model; no other job holds a GPU;
- each record job asked for its two models' CPUs (capped at --max-cpus, the run's --cores);
- the score jobs went to the cluster in groups, none alone, none wider than --max-cpus.

    python scripts/check-slurm-jobs.py --config config/ci-slurm.yaml --after JOBID --max-cpus 2

The site comes from DYAFDB_SLURM_ACCOUNT, DYAFDB_SLURM_PARTITION, DYAFDB_SLURM_GPU_PARTITION and
DYAFDB_SLURM_GPU_MODEL, as in the run. Only jobs with ids above JOBID (the last id before the run) count.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dyafdb.config import load_config
from dyafdb.suite.design import build_design
from slurm_jobs import gpus_of, submitted_jobs





def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--after", type=int, required=True, help="the last SLURM job id before the run")
    parser.add_argument("--max-cpus", type=int, required=True, help="the run's --cores (a group's width)")
    args = parser.parse_args()
    env = os.environ
    account, partition = env["DYAFDB_SLURM_ACCOUNT"], env["DYAFDB_SLURM_PARTITION"]
    gpu_partition = env.get("DYAFDB_SLURM_GPU_PARTITION") or partition
    gpu_model = env.get("DYAFDB_SLURM_GPU_MODEL")
    config = load_config(args.config)
    rows = build_design(config, Path("."))
    declared = {m: config["models"][m].get("resources") or {} for m in config["models"]}
    cpus = {r.conversation_id: int(declared[r.model_a].get("cpus", 1)) + int(declared[r.model_b].get("cpus", 1)) for r in rows}
    gpus = {r.conversation_id: int(declared[r.model_a].get("gpus", 0)) + int(declared[r.model_b].get("gpus", 0)) for r in rows}

    jobs = submitted_jobs(args.after)
    problems = []
    recorded: dict[str, dict[str, str]] = {}
    for job in jobs:
        name = job["Comment"] or f"job {job['JobID']}"
        if job["Account"] != account:
            problems.append(f"{name} was charged to {job['Account']!r}, not the site's account {account!r}")
        if name.startswith("rule_record_wildcards_"):
            # The plugin joins the wildcards' values with "_": <shard>_<conversation> (dyafdb.paths).
            recorded[name.removeprefix("rule_record_wildcards_")] = job
            continue
        if job["Partition"] != partition or gpus_of(job["ReqTRES"], None):
            problems.append(f"{name} ran in {job['Partition']} with TRES {job['ReqTRES']}; a CPU job belongs in {partition}, without GPUs")
    for cid, want_cpus in cpus.items():
        job = next((j for key, j in recorded.items() if key == cid or key.endswith(f"_{cid}")), None)
        if job is None:
            problems.append(f"no record job listed for {cid}")
            continue
        if int(job["AllocCPUS"]) != min(want_cpus, args.max_cpus):
            problems.append(f"record job of {cid} got {job['AllocCPUS']} CPUs, its models declare {want_cpus}")
        want_part = gpu_partition if gpus[cid] else partition
        got = gpus_of(job["ReqTRES"], gpu_model if gpus[cid] else None)
        if job["Partition"] != want_part or got != gpus[cid] or (not gpus[cid] and gpus_of(job["ReqTRES"], None)):
            problems.append(f"record job of {cid} ran in {job['Partition']} with TRES {job['ReqTRES']}; its models "
                            f"declare {gpus[cid]} GPU(s): want partition {want_part}"
                            + (f" and gres/gpu:{gpu_model}={gpus[cid]}" if gpus[cid] and gpu_model else ""))
    singles = [j for j in jobs if j["Comment"].startswith("rule_score_")]
    groups = [j for j in jobs if j["Comment"].startswith("rule_scoring_")]
    if singles:
        problems.append(f"{len(singles)} score jobs were submitted alone, not grouped")
    if not groups:
        problems.append("no grouped scoring job was submitted")
    problems += [f"group job {j['Comment']} asked for {j['AllocCPUS']} CPUs, more than --cores {args.max_cpus}"
                 for j in groups if int(j["AllocCPUS"]) > args.max_cpus]
    gpu_jobs = sum(1 for j in jobs if gpus_of(j["ReqTRES"], None))
    print(f"SLURM jobs of this run: {len(jobs)} ({len(recorded)} record, {gpu_jobs} with GPUs, {len(groups)} grouped "
          f"scoring jobs for {len(rows)} conversations), all checked for account {account} and partitions "
          f"{partition}/{gpu_partition}")
    for p in problems:
        print(f"  problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
