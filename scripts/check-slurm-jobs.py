"""Check the SLURM jobs a profiles/slurm run submitted: each record job asked for its two models' CPUs,
and the score jobs went to the cluster in groups, none alone.

    python scripts/check-slurm-jobs.py --config config/ci-slurm.yaml --after JOBID --max-cpus 2

Reads `squeue --states=all` (finished jobs stay listed for MinJobAge, an hour on the cluster
scripts/slurm-local.sh starts); only jobs with ids above JOBID (the last id before the run) count.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from dyafdb.config import load_config
from dyafdb.suite.design import build_design


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--after", type=int, required=True, help="the last SLURM job id before the run")
    parser.add_argument("--max-cpus", type=int, required=True, help="the run's --cores (a group's width)")
    args = parser.parse_args()
    config = load_config(args.config)
    rows = build_design(config)
    cpus = {m: int((config["models"][m].get("resources") or {}).get("cpus", 1)) for m in config["models"]}
    expected = {r.conversation_id: cpus[r.model_a] + cpus[r.model_b] for r in rows}

    out = subprocess.run(["squeue", "--states=all", "--noheader", "-o", "%i|%300k|%C"], capture_output=True, text=True,
                         check=True).stdout
    jobs = [[field.strip() for field in line.split("|")] for line in out.splitlines() if line.strip()]
    jobs = [(int(i), comment, int(c)) for i, comment, c in jobs if i.isdigit() and int(i) > args.after]
    problems = []
    recorded = {}
    for _, comment, c in jobs:
        if comment.startswith("rule_record_wildcards_"):
            recorded[comment.removeprefix("rule_record_wildcards_")] = c
    for cid, want in expected.items():
        got = recorded.get(cid)
        if got is None:
            problems.append(f"no record job listed for {cid}")
        elif got != min(want, args.max_cpus):
            problems.append(f"record job of {cid} asked for {got} CPUs, its models declare {want}")
    singles = [comment for _, comment, _ in jobs if comment.startswith("rule_score_")]
    groups = [(comment, c) for _, comment, c in jobs if comment.startswith("rule_scoring_")]
    if singles:
        problems.append(f"{len(singles)} score jobs were submitted alone, not grouped")
    if not groups:
        problems.append("no grouped scoring job was submitted")
    problems += [f"group job {comment} asked for {c} CPUs, more than --cores {args.max_cpus}"
                 for comment, c in groups if c > args.max_cpus]
    print(f"SLURM jobs of this run: {len(jobs)} ({len(recorded)} record, {len(groups)} grouped scoring jobs "
          f"for {len(rows)} conversations)")
    for p in problems:
        print(f"  problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
