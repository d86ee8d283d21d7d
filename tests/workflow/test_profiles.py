"""The Snakemake profiles: what each one promises in the README, checked against its file."""

from __future__ import annotations

from pathlib import Path

import yaml

from dyafdb.config import load_config

REPO = Path(__file__).resolve().parents[2]


def _profile(name: str) -> dict:
    return yaml.safe_load((REPO / "profiles" / name / "config.yaml").read_text())


def test_slurm_profile_groups_scoring_and_keeps_each_rules_threads():
    slurm = _profile("slurm")
    assert slurm["executor"] == "slurm"
    assert slurm["groups"]["score"] == "scoring" and slurm["group-components"]["scoring"] > 1
    # engines on a cluster: the engine rule and the record jobs share node groups (record.smk)
    assert slurm["groups"]["engine"] not in ("scoring", None) and "record" not in slurm["groups"]
    # A cpus_per_task default would replace every rule's threads in the sbatch call.
    assert "cpus_per_task" not in (slurm.get("default-resources") or {})
    # `cores` caps each job's threads: the paper's record jobs must still get their models' CPUs.
    config = load_config(REPO / "config" / "config.yaml")
    cpus = [int(m.get("resources", {}).get("cpus", 1)) for m in config["models"].values()]
    assert slurm["cores"] >= 2 * max(cpus)
    assert slurm.get("retries", 0) >= 1 and slurm.get("rerun-incomplete") is True


def test_demo_and_local_profiles_run_on_one_machine():
    demo = _profile("demo")
    assert demo["configfile"] == "config/demo.yaml" and demo["cores"] == 2
    assert "executor" not in _profile("local") and "executor" not in demo


def test_every_slurm_option_in_the_profile_is_read_by_the_installed_plugin():
    """An option the plugin declares but never reads (2.8's `slurm-no-account`) promises what it does not do."""
    import re

    import snakemake_executor_plugin_slurm as plugin

    source = "\n".join(p.read_text() for p in Path(plugin.__file__).parent.glob("*.py"))
    options = [key for key in _profile("slurm") if key.startswith("slurm-")]
    assert options, "profiles/slurm sets no plugin option at all"
    for key in options:
        field = key.removeprefix("slurm-").replace("-", "_")
        assert re.search(rf"^\s+{field}: ", source, re.M), f"{key}: not an option of the installed plugin"
        assert re.search(rf"settings\.{field}\b", source), f"{key}: declared by the plugin but never read"
