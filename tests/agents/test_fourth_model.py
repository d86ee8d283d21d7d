"""Adding Moshi as a fourth model (as the paper adds Lychee-FD in Appendix H) records only its pairings.

The design keeps every old id, the Snakemake dry-run plans only the new pairings' record jobs, each
job asks for its two models' GPUs together, and the job's two workers get one GPU each.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conftest import REPO, write_suite
from dyafdb.config import load_config
from dyafdb.suite.design import build_design
from results_paths import RESULTS

MAIN = ["personaplex", "minicpmo", "raon"]


def configs(tmp_path: Path, per_archetype: int, **suite) -> tuple[dict, dict]:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["suites"] = {"main": {**cfg["suites"]["main"], **suite}}
    if per_archetype:
        cfg["suites"]["main"]["scenarios_per_archetype"] = per_archetype
    three = tmp_path / "config3.yaml"
    three.write_text(yaml.safe_dump(cfg))
    cfg["suites"]["main"]["models"] = MAIN + ["moshi"]
    cfg["models"]["moshi"]["resources"]["gpus"] = 2  # so "sum of the two models" is not just "2"
    four = tmp_path / "config4.yaml"
    four.write_text(yaml.safe_dump(cfg))
    return load_config(three), load_config(four)


def test_config_names_four_real_models_and_the_main_suite_keeps_three():
    cfg = load_config(REPO / "config" / "config.yaml")
    assert {m: cfg["models"][m]["adapter"] for m in cfg["models"]} == {
        "personaplex": "personaplex", "minicpmo": "minicpmo", "raon": "raon", "moshi": "moshi"}
    assert cfg["suites"]["main"]["models"] == MAIN
    assert all(cfg["models"][m]["resources"]["gpus"] == 1 for m in cfg["models"])


def test_moshi_adds_four_pairings_and_keeps_every_old_id(tmp_path):
    write_suite(tmp_path, per_archetype=20)
    three, four = configs(tmp_path, 20)
    old = {r.conversation_id: r for r in build_design(three, tmp_path)}
    new = {r.conversation_id: r for r in build_design(four, tmp_path)}
    assert len(old) == 7560
    assert set(old) <= set(new) and all(new[i] == old[i] for i in old)  # same ids, seeds, roles
    added = [new[i] for i in set(new) - set(old)]
    assert sorted({r.pairing for r in added}) == ["minicpmo+moshi", "moshi+moshi", "personaplex+moshi", "raon+moshi"]
    assert all("moshi" in (r.model_a, r.model_b) for r in added)
    assert len(added) == 840 + 3 * 1680


def _record_jobs(plan: str) -> dict[str, dict[str, str]]:
    jobs = {}
    for block in plan.split("rule record:")[1:]:
        cid = re.search(r"wildcards: .*\bconversation=([^\s,]+)", block).group(1)
        resources = dict(kv.split("=", 1) for kv in re.search(r"resources: (.*)", block).group(1).split(", "))
        outputs = re.search(r"output: (.*)", block).group(1).split(", ")
        jobs[cid] = {"resources": resources, "outputs": outputs}
    return jobs


def test_dry_run_plans_only_the_new_pairings_with_both_models_gpus(tmp_path):
    pytest.importorskip("snakemake")
    import importlib.util

    # the Snakemake runner of the workflow tests (tests/workflow/test_resume.py, not a package)
    spec = importlib.util.spec_from_file_location("test_resume", Path(__file__).parents[1] / "workflow" / "test_resume.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    snakemake = runner.snakemake

    write_suite(tmp_path, archetypes=["T1-1"])
    three, four = configs(tmp_path, 1, archetypes=["T1-1"], repetitions=1)
    old = [r.conversation_id for r in build_design(three, tmp_path)]
    rows = {r.conversation_id: r for r in build_design(four, tmp_path)}
    targets = [RESULTS.recording_file(cid, "meta.json") for cid in rows]

    (tmp_path / "config.yaml").write_text((tmp_path / "config4.yaml").read_text())
    first = snakemake(tmp_path, "-n", *targets)
    assert first.returncode == 0, first.stdout + first.stderr
    planned = _record_jobs(first.stdout)
    assert set(planned) == set(rows)
    for cid in old:  # the main suite's recordings exist already
        for out in planned[cid]["outputs"]:
            path = tmp_path / out
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")

    plan = snakemake(tmp_path, "-n", *targets)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    jobs = _record_jobs(plan.stdout)
    assert set(jobs) == set(rows) - set(old) and len(jobs) == 2 + 3 * 4
    gpus = {m: four["models"][m]["resources"]["gpus"] for m in four["models"]}
    for cid, job in jobs.items():
        row = rows[cid]
        assert int(job["resources"]["gpu"]) == gpus[row.model_a] + gpus[row.model_b], (cid, job["resources"])
        assert int(job["resources"]["mem_mb"]) == sum(four["models"][m]["resources"]["mem_mb"] for m in (row.model_a, row.model_b))


def test_each_worker_of_a_job_gets_its_own_gpu(monkeypatch):
    from dyafdb.record import conversation as record

    started = []

    class FakeRemote:
        def __init__(self, **kwargs):
            started.append(kwargs)

    monkeypatch.setattr("dyafdb.agents.remote.RemoteAgent", FakeRemote)
    cfg = {"bridge": {"in_process": False}, "models": {
        "big": {"adapter": "null", "resources": {"gpus": 1}},
        "pinned": {"adapter": "null", "resources": {"gpus": 1}, "worker": {"env": {"CUDA_VISIBLE_DEVICES": "7"}}},
        "cpu": {"adapter": "null"}}}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    pool = record.AgentPool(cfg)
    pool.get("big", 0), pool.get("big", 1), pool.get("cpu", 0), pool.get("pinned", 0)
    assert [s["env"].get("CUDA_VISIBLE_DEVICES") for s in started] == ["3", "5", None, "7"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    started.clear()
    record.AgentPool(cfg).get("big", 0)
    assert "CUDA_VISIBLE_DEVICES" not in started[0]["env"]  # nothing named: the worker sees the machine's GPUs
