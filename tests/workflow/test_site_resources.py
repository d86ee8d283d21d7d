"""Site resources on a SLURM dry-run: every job that leaves the submitting host carries the site's
partition and account; only jobs that ask for GPUs go to the GPU partition with the GPU model."""

from __future__ import annotations

import re

import yaml

from conftest import REPO, scripted_config, write_suite

SITE = {"DYAFDB_SLURM_PARTITION": "cpuq", "DYAFDB_SLURM_GPU_PARTITION": "gpuq",
        "DYAFDB_SLURM_ACCOUNT": "lab7", "DYAFDB_SLURM_GPU_MODEL": "h100"}


def planned_jobs(text: str) -> list[tuple[str, dict[str, str], bool]]:
    """(rule, resources, local) of each job a dry-run with -p prints; a job without a shell command
    (the target list `all`) never leaves the submitting host."""
    jobs = []
    for block in re.split(r"\n(?=\s*rule \w+:)", text):
        head = re.match(r"\s*rule (\w+):", block)
        res = re.search(r"^\s*resources: (.*)$", block, re.M)
        if head and res:
            fields = dict(item.split("=", 1) for item in res.group(1).split(", ") if "=" in item)
            jobs.append((head.group(1), fields, "Shell command: None" in block))
    return jobs


def _dry_run(tmp_path, monkeypatch, site: dict[str, str]):
    from test_resume import snakemake

    write_suite(tmp_path, archetypes=["T1-1", "T4-2"])
    cfg = scripted_config(archetypes=["T1-1", "T4-2"])
    # One model needs a GPU, the other none: their self-play and cross-play land on different partitions.
    cfg["models"]["talker"]["resources"] = {"gpus": 1, "cpus": 1}
    cfg["judge"] = {"prompts_dir": str(REPO / "config" / "judge")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    for key in SITE:
        monkeypatch.delenv(key, raising=False)
    for key, value in site.items():
        monkeypatch.setenv(key, value)
    plan = snakemake(tmp_path, "-n", "-p", "--profile", str(REPO / "profiles" / "slurm"))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    return planned_jobs(plan.stdout)


def test_every_submitted_job_has_the_sites_partition_and_account(tmp_path, monkeypatch):
    jobs = _dry_run(tmp_path, monkeypatch, SITE)
    rules = {rule for rule, _, _ in jobs}
    assert {"design", "record", "score", "mechanical_table", "judge", "measures_table", "analysis_report"} <= rules
    submitted = [(rule, res) for rule, res, local in jobs if not local]
    assert len(submitted) > 20
    for rule, res in submitted:
        assert res.get("slurm_account") == "lab7", (rule, res)
        gpus = int(res.get("gpu", 0))
        if gpus:
            assert res.get("slurm_partition") == "gpuq" and res.get("gpu_model") == "h100", (rule, res)
        else:
            # No --gpus=h100:0 for a job that needs no GPU, and the CPU partition.
            assert res.get("slurm_partition") == "cpuq" and "gpu_model" not in res, (rule, res)
    record_gpus = sorted(int(res.get("gpu", 0)) for rule, res in submitted if rule == "record")
    assert 0 in record_gpus and 1 in record_gpus and 2 in record_gpus  # quiet+quiet, cross-play, talker+talker
    assert all(rule == "all" for rule, _, local in jobs if local)


def test_a_laptop_without_site_settings_gets_no_site_resources(tmp_path, monkeypatch):
    jobs = _dry_run(tmp_path, monkeypatch, {})
    for rule, res, _ in jobs:
        assert not {"slurm_partition", "slurm_account", "gpu_model"} & set(res), (rule, res)


def test_gpu_partition_defaults_to_the_partition(tmp_path, monkeypatch):
    jobs = _dry_run(tmp_path, monkeypatch, {"DYAFDB_SLURM_PARTITION": "all", "DYAFDB_SLURM_ACCOUNT": "lab7"})
    for rule, res, local in jobs:
        if not local:
            assert res.get("slurm_partition") == "all" and "gpu_model" not in res, (rule, res)
