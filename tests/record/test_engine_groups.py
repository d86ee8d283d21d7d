"""Engine node groups (profiles/slurm): record jobs of one pairing join one engine per model.

On a SLURM dry-run, each group holds one engine job per model of its pairing with the model's GPUs
and memory, and record jobs that ask for the bridge's share only, so the group (whose jobs
Snakemake sums, as they all run at once) asks for each model's GPUs once, not per conversation;
the plan still has one record job per conversation. The same grouping run on this machine
(Snakemake runs a group's service jobs beside their consumers) records every conversation of a
group with one engine process per model, leaves none behind, and a rerun has nothing to do.
"""

from __future__ import annotations

from pathlib import Path

import json
import os
import re
from collections import defaultdict

import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.suite.design import build_design
from test_engine_workflow import planned_record_jobs, snakemake
from results_paths import RESULTS, results_at

GROUPED = ["--groups", "engine=engine_node"]  # as profiles/slurm does


def planned(text: str) -> list[dict]:
    """rule, wildcards, resources, threads and shell command of each job a dry-run with -p prints."""
    jobs = []
    for block in re.split(r"\n(?=\s*rule \w+:)", text):
        head = re.match(r"\s*rule (\w+):", block)
        if not head:
            continue
        fields = {}
        for key in ("wildcards", "resources"):
            line = re.search(rf"^\s*{key}: (.*)$", block, re.M)
            fields[key] = dict(i.split("=", 1) for i in line.group(1).split(", ") if "=" in i) if line else {}
        threads = re.search(r"^\s*threads: (\d+)$", block, re.M)
        shell = re.search(r"^Shell command: (.*)$", block, re.M)
        jobs.append({"rule": head.group(1), **fields, "threads": int(threads.group(1)) if threads else 1,
                     "shell": shell.group(1) if shell else ""})
    return jobs


def _config(tmp_path, resources: dict) -> tuple[dict, list]:
    write_suite(tmp_path, archetypes=["T1-1"])
    models = {"quiet": {"adapter": "null", "engine": {"sessions": 4, "max_wait_ms": 5}, "resources": resources},
              "hush": {"adapter": "null", "engine": {"sessions": 4}, "resources": resources}}
    cfg = scripted_config(models=models, window_s=2, in_process=False)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    return cfg, build_design(cfg, tmp_path)


def test_slurm_groups_ask_for_each_models_gpus_once(tmp_path, monkeypatch):
    for key in ("DYAFDB_SLURM_PARTITION", "DYAFDB_SLURM_GPU_PARTITION", "DYAFDB_SLURM_ACCOUNT", "DYAFDB_SLURM_GPU_MODEL"):
        monkeypatch.delenv(key, raising=False)
    cfg, rows = _config(tmp_path, {"gpus": 1, "cpus": 2, "mem_mb": 9000})
    targets = [RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows]
    plan = snakemake(tmp_path, "-n", "-p", "--profile", str(REPO / "profiles" / "slurm"), "--cores", "8", *targets)  # the profile's
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert planned_record_jobs(plan.stdout) == len(rows) == 8  # still one record job per conversation
    jobs = planned(plan.stdout)
    by_group: dict[str, list[dict]] = defaultdict(list)
    for job in jobs:
        if job["rule"] == "engine":
            by_group[job["wildcards"]["group"]].append(job)
        elif job["rule"] == "record":
            folder = re.search(r"DYAFDB_ENGINES=\.dyafdb-engines/(\S+) ", job["shell"])
            assert folder, job["shell"]  # every record job joins its group's engines
            by_group[folder.group(1)].append(job)
    # sessions 4: a self-play conversation takes two sessions, so two conversations a group
    assert sorted(by_group) == ["hush+hush-0", "hush+quiet-0", "quiet+hush-0", "quiet+quiet-0"]
    for group, members in by_group.items():
        pairing = set(group.rsplit("-", 1)[0].split("+"))
        engines = [j for j in members if j["rule"] == "engine"]
        records = [j for j in members if j["rule"] == "record"]
        assert sorted(j["wildcards"]["model"] for j in engines) == sorted(pairing)  # one engine per model
        assert all(j["resources"]["gpu"] == "1" and j["resources"]["mem_mb"] == "9000" for j in engines)
        assert len(records) == 2 and all(j["resources"]["gpu"] == "0" and j["threads"] == 1 for j in records)
        # the group's jobs run at once and Snakemake sums them: each model's GPU once
        assert sum(int(j["resources"]["gpu"]) for j in members) == len(pairing)
        assert sum(int(j["resources"]["mem_mb"]) for j in members) == 9000 * len(pairing) + 2 * 4000
        assert sum(j["threads"] for j in members) <= 8  # fits the profile's cores


def test_grouped_run_records_each_group_on_one_engine_per_model(tmp_path):
    _, rows = _config(tmp_path, {"cpus": 1, "mem_mb": 1000})
    targets = [RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows]
    done = snakemake(tmp_path, "--cores", "8", *targets, *GROUPED)
    assert done.returncode == 0, done.stdout + done.stderr
    pids: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in rows:
        meta = json.loads((Path(results_at(tmp_path).recording(row.conversation_id)) / "meta.json").read_text())
        for side, model in (("a", row.model_a), ("b", row.model_b)):
            assert meta["agents"][side]["extra"]["engine"] is True
            pids[(f"{row.model_a}+{row.model_b}", model)].add(meta["agents"][side]["extra"]["engine_pid"])
    assert len(pids) == 6 and all(len(p) == 1 for p in pids.values()), pids  # one engine (one load) per model and group
    assert len({p for s in pids.values() for p in s}) == 6
    for pid in {p for s in pids.values() for p in s}:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"engine {pid} outlived the run")
    again = snakemake(tmp_path, "-n", "--cores", "8", *targets, *GROUPED)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_a_record_job_whose_group_engine_never_listens_fails_instead_of_loading_a_copy(tmp_path, monkeypatch):
    import pytest

    from dyafdb.agents.base import AgentError
    from dyafdb.agents.engine.client import ENGINES_ENV, ENGINES_WAIT_ENV, engine_socket

    monkeypatch.setenv(ENGINES_ENV, str(tmp_path))
    assert engine_socket("quiet") is None  # a local run's folder without that engine: own workers
    monkeypatch.setenv(ENGINES_WAIT_ENV, "0.3")
    (tmp_path / "quiet.sock").write_text("")  # a stale socket file: nobody listens
    with pytest.raises(AgentError, match=f"did not listen.*{ENGINES_WAIT_ENV}"):
        engine_socket("quiet")


def test_a_group_waits_for_engines_slower_than_latency_wait_with_their_worker_env(tmp_path):
    """Snakemake checks a consumer's service inputs within --latency-wait of its start; a real model
    loads for longer. The engines here take 8 s to start (a delay their worker environment sets) against
    a 3 s latency-wait: the group still records on one engine per model, and no local engine starts."""
    from dyafdb.paths import Results

    write_suite(tmp_path, archetypes=["T1-1"])
    slow = {"command": ["sh", "-c", 'sleep "${ENGINE_DELAY_S:?set by worker.env}"; exec "$0" "$@"', "python", "-m",
                        "dyafdb.agents.worker"], "env": {"ENGINE_DELAY_S": "8"}}
    models = {m: {"adapter": "null", "engine": {"sessions": 4}, "worker": slow, "resources": {"cpus": 1, "mem_mb": 1000}}
              for m in ("quiet", "hush")}
    cfg = scripted_config(models=models, window_s=2, in_process=False)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = [r for r in build_design(cfg, tmp_path) if (r.model_a, r.model_b) == ("quiet", "hush")]
    results = Results("results")
    targets = [results.recording_file(r.conversation_id, "meta.json") for r in rows]
    done = snakemake(tmp_path, "--cores", "4", "--latency-wait", "3", *targets, *GROUPED)
    assert done.returncode == 0, done.stdout + done.stderr
    pids = {(m, json.loads((tmp_path / t).read_text())["agents"][s]["extra"]["engine_pid"])
            for t in targets for s, m in (("a", "quiet"), ("b", "hush"))}
    assert len(pids) == 2 and len(rows) == 2, pids  # one engine per model for the group's two conversations
    logs = sorted((tmp_path / results.log_dir("engine")).iterdir())
    assert [p.read_text().count(" ready on ") for p in logs] == [1, 1], [p.read_text() for p in logs]
    assert not (tmp_path / results.log_dir("engines")).exists()  # the run's own engines were not started too


def test_slurm_submits_each_groups_engines_and_conversations_as_one_job(tmp_path, monkeypatch):
    """Snakemake gives a service's consumers the service's group only when they have none, and keeps
    the profile's group on the service: with only the engine rule grouped, each engine went to SLURM
    alone (and failed: a service without consumers). Each group job of the plan must hold its
    pairing's engines and record jobs; inside that job (no --groups, its own --cores) the record jobs
    still find their group's engines."""
    for key in ("DYAFDB_SLURM_PARTITION", "DYAFDB_SLURM_GPU_PARTITION", "DYAFDB_SLURM_ACCOUNT", "DYAFDB_SLURM_GPU_MODEL"):
        monkeypatch.delenv(key, raising=False)
    _, rows = _config(tmp_path, {"cpus": 1, "mem_mb": 1000})
    from dyafdb.paths import Results

    targets = [Results("results").recording_file(r.conversation_id, "meta.json") for r in rows]
    plan = snakemake(tmp_path, "-n", "--profile", str(REPO / "profiles" / "slurm"), "--cores", "8", *targets)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    blocks = [b for b in re.split(r"Group job ", plan.stdout)[1:] if "rule engine:" in b or "rule record:" in b]
    assert len(blocks) == 4, plan.stdout  # one per pairing, none for an engine alone
    for block in blocks:
        jobs = planned(block)
        engines = {j["wildcards"]["group"] for j in jobs if j["rule"] == "engine"}
        records = [j for j in jobs if j["rule"] == "record"]
        assert len(engines) == 1 and len(records) == 2, block
    # Inside a group's SLURM job: its jobs as --target-jobs, no --groups, the group's width as --cores.
    (group,) = engines
    specs = [f"{j['rule']}:" + ",".join(f"{k}={v}" for k, v in j["wildcards"].items()) for j in jobs]
    inside = snakemake(tmp_path, "-n", "-p", "--cores", "4", "--target-jobs", *specs, "--allowed-rules", "engine", "record")
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.count(f"DYAFDB_ENGINES=.dyafdb-engines/{group} ") == len(records) == 2, inside.stdout
