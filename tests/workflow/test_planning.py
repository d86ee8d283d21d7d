"""Planning cost and what it must not change: the workflow hands Snakemake each function's signature
once (not per planned job) and describes no job that no log handler shows, and every planned job's
resources and shell command, the job counts and what a quiet dry run prints stay the same; the
analysis jobs that read the whole corpus declare memory from its size."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import yaml

from conftest import REPO, TEST_PATH, scripted_config, write_suite

from dyafdb.analysis.memory import declared_mem_mb

SITE = {"DYAFDB_SLURM_PARTITION": "cpuq", "DYAFDB_SLURM_ACCOUNT": "lab7"}
# Runs snakemake with Snakemake's own inspect.signature calls counted (snakemake.common's
# get_function_params): it asks them of every input, params and resource function once per planned
# job unless the workflow stored the answer. Imports (pandas, dataclasses) ask too; those are not counted.
COUNTED = """
import atexit, inspect, runpy, sys
calls = [0]
signature = inspect.signature
def counted(*args, **kwargs):
    calls[0] += sys._getframe(1).f_code.co_name == "get_function_params"
    return signature(*args, **kwargs)
inspect.signature = counted
atexit.register(lambda: print(f"SIGNATURE_CALLS={calls[0]}", file=sys.stderr))
sys.argv = ["snakemake", *sys.argv[1:]]
runpy.run_module("snakemake", run_name="__main__")
"""


# Counts the job descriptions Snakemake builds (each formats the job's shell command).
DESCRIBED = """
import atexit, runpy, sys
from snakemake import jobs
built = [0]
shellcmd = jobs.Job.shellcmd
def counted(self):
    built[0] += 1
    return shellcmd.fget(self)
jobs.Job.shellcmd = property(counted)
atexit.register(lambda: print(f"SHELLCMD_BUILT={built[0]}", file=sys.stderr))
sys.argv = ["snakemake", *sys.argv[1:]]
runpy.run_module("snakemake", run_name="__main__")
"""
SHORTCUTS = ["fix_callable_signatures()\n", "skip_unshown_job_info()\n", "gc.freeze()\n", "gc.set_threshold(70_000, 10, 10)\n",
             "atexit.register(gc.freeze)\n"]


def _config(tmp_path):
    write_suite(tmp_path, archetypes=["T1-1", "T4-2"])
    cfg = scripted_config(archetypes=["T1-1", "T4-2"])
    cfg["models"]["talker"]["resources"] = {"gpus": 1, "cpus": 2, "mem_mb": 3000}
    cfg["judge"] = {"prompts_dir": str(REPO / "config" / "judge")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))


def _dry_run(tmp_path, snakefile, *args, counted=False, described=False):
    env = {**os.environ, **SITE, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    script = COUNTED if counted else DESCRIBED if described else None
    head = [sys.executable, "-c", script] if script else [sys.executable, "-m", "snakemake"]
    out = subprocess.run([*head, "-s", str(snakefile), "--directory", str(tmp_path), "--configfile",
                          str(tmp_path / "config.yaml"), "--cores", "1", "-n", *args],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def _jobs(text):
    """Each planned job's printed block, without the job id, the time stamps, the reason and group
    headers (which land between jobs printed in a varying order); each
    line's words sorted, since Snakemake prints some lists in set order (the sized resources, the
    reason's files), which varies between processes, and so does the report rule's list of tables."""
    text = re.sub(r"^\s*(\[\w{3} \w{3} [ \d]\d [\d:]+ \d{4}\]|reason: |Group job ).*$", "", text, flags=re.M)
    blocks = re.split(r"\n(?=\s*(?:local)?rule \w+:)", text)
    return sorted("\n".join(" ".join(sorted(re.split(r"[\s,]+", line))) for line in re.sub(r"jobid: \d+", "", b).splitlines())
                  for b in blocks if re.match(r"\s*(?:local)?rule \w+:", b))


def test_planning_asks_each_function_signature_once_not_per_job(tmp_path):
    _config(tmp_path)
    out = _dry_run(tmp_path, REPO / "workflow" / "Snakefile", "--quiet", "rules", counted=True)
    calls = int(re.search(r"SIGNATURE_CALLS=(\d+)", out.stderr).group(1))
    jobs = int(re.search(r"^total\s+(\d+)$", out.stdout, re.M).group(1))
    assert jobs > 50
    # Before: ~15 calls per record job and 2 per evaluated resource of every job (844 here); now a
    # few for functions Snakemake makes itself, none per job.
    assert calls < jobs / 10, f"{calls} inspect.signature calls by Snakemake for {jobs} jobs"


def _plain_workflow(tmp_path, shortcuts=SHORTCUTS):
    """A copy of the workflow without the planning shortcuts (today's plan, as Snakemake makes it alone)."""
    plain = tmp_path / "plain"
    shutil.copytree(REPO / "workflow", plain / "workflow")
    snakefile = plain / "workflow" / "Snakefile"
    text = snakefile.read_text()
    for line in shortcuts:
        assert line in text
        text = text.replace(line, "")
    snakefile.write_text(text)
    return plain, snakefile


def _quiet_output(text, *folders):
    """What a quiet dry run prints, less its date, workflow id and command line."""
    for folder in folders:
        text = text.replace(str(folder), "<workflow>")
    return re.sub(r"^\s*(Date|Workflow ID|Command):.*$", "", text, flags=re.M)


def test_quiet_plan_describes_no_job_and_prints_the_same(tmp_path):
    """`--quiet rules` shows no job's description: it is not built, and the dry run prints the same
    job counts and reasons as Snakemake's own method, which builds each job's shell command 3 times."""
    _config(tmp_path)
    plain, snakefile = _plain_workflow(tmp_path, ["skip_unshown_job_info()\n"])
    ours = _dry_run(tmp_path, REPO / "workflow" / "Snakefile", "--quiet", "rules", described=True)
    theirs = _dry_run(tmp_path, snakefile, "--quiet", "rules", described=True)
    jobs = int(re.search(r"^total\s+(\d+)$", ours.stdout, re.M).group(1))
    built = {name: int(re.search(r"SHELLCMD_BUILT=(\d+)", out.stderr).group(1)) for name, out in (("ours", ours), ("theirs", theirs))}
    assert jobs > 50 and built["theirs"] >= 3 * jobs, built  # what the shortcut is for; fails if Snakemake stops doing it
    assert built["ours"] == 0, f"the pinned Snakemake no longer takes skip_unshown_job_info: {built}"
    assert _quiet_output(ours.stdout, REPO / "workflow") == _quiet_output(theirs.stdout, plain / "workflow")
    # Not quiet, every job is described as before (and test_shortcuts_change_no_planned_job compares them).
    shown = _dry_run(tmp_path, REPO / "workflow" / "Snakefile", described=True)
    assert int(re.search(r"SHELLCMD_BUILT=(\d+)", shown.stderr).group(1)) >= 3 * jobs


def test_shortcuts_change_no_planned_job(tmp_path):
    """The same jobs, resources and shell commands as the workflow without the planning shortcuts."""
    _config(tmp_path)
    plain, snakefile = _plain_workflow(tmp_path)
    args = ("-p", "--profile", str(REPO / "profiles" / "slurm"))
    ours = _jobs(_dry_run(tmp_path, REPO / "workflow" / "Snakefile", *args).stdout)
    theirs = _jobs(_dry_run(tmp_path, snakefile, *args).stdout.replace(str(plain / "workflow"), str(REPO / "workflow")))
    assert len(ours) > 50 and any("resources:" in b for b in ours)
    assert ours == theirs


def test_analysis_memory_follows_the_conversations():
    # The measure: 1.3-1.4 GB at 40,000 conversations, against a declared 2,000 MB.
    assert declared_mem_mb("agreement", 40_000) >= 1400
    assert declared_mem_mb("runs", 40_000 // 7) > 2000  # one archetype's share of the 80,000-job plan
    assert declared_mem_mb("runs", 40_000) > declared_mem_mb("runs", 1_000)
    assert declared_mem_mb("agreement", 72) == 2000  # the demo keeps the old figure
    assert declared_mem_mb("agreement", 7_560) % 100 == 0
