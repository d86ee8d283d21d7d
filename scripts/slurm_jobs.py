"""The SLURM jobs a run submitted, as CI's checks read them (scripts/check-slurm-jobs.py and
scripts/check-engine-groups.py): sacct's fields, with each job's comment (Snakemake's rule and
wildcards) taken from the controller while slurmdbd has not stored it yet."""

from __future__ import annotations

import re
import subprocess

FIELDS = ("JobID", "Comment", "AllocCPUS", "Partition", "Account", "ReqTRES", "State")


def submitted_jobs(after: int) -> list[dict[str, str]]:
    """Jobs with an id above ``after`` (the last job before the run), one dict of FIELDS each."""
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-S", "now-1days", "-o", ",".join(FIELDS)],
                         capture_output=True, text=True, check=True).stdout
    jobs = [dict(zip(FIELDS, line.split("|"))) for line in out.splitlines() if line.strip()]
    jobs = [j for j in jobs if j["JobID"].isdigit() and int(j["JobID"]) > after]
    # slurmdbd stores a comment when the job ends; the controller knows it from submission on.
    listed = subprocess.run(["squeue", "--states=all", "--noheader", "-o", "%i|%k"], capture_output=True, text=True,
                            check=True).stdout
    comments = dict(line.split("|", 1) for line in listed.splitlines() if "|" in line)
    for job in jobs:
        job["Comment"] = job["Comment"] or comments.get(job["JobID"], "").strip()
    return jobs


def gpus_of(tres: str, model: str | None = None) -> int:
    """GPUs a job asked for, of ``model`` when given (sacct ReqTRES: gres/gpu=N, gres/gpu:<model>=N)."""
    key = f"gres/gpu:{model}" if model else "gres/gpu"
    match = re.search(rf"(?:^|,){re.escape(key)}=(\d+)", tres)
    return int(match.group(1)) if match else 0
