"""A local workflow run starts one engine per model, its record jobs all join them, and it stops them.

Two null models with `engine` sections (the engine plumbing without model cost): every recording
says which engine process stepped each side, there is one process per model for the whole group
of conversations (one load each), none is left when Snakemake exits, and the plan's record jobs are
the same with and without engines (one record job per conversation).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO, TEST_PATH, scripted_config, write_suite
from dyafdb.suite.design import build_design
from results_paths import RESULTS, results_at


def snakemake(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp),
           "--configfile", str(tmp / "config.yaml"), "--cores", "2", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    env.pop("DYAFDB_ENGINES", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def planned_record_jobs(out: str) -> int:
    match = re.search(r"^record\s+(\d+)", out, re.M)
    return int(match.group(1)) if match else 0


def test_local_run_shares_one_engine_per_model(tmp_path):
    write_suite(tmp_path, archetypes=["T1-1"])
    big = {"cpus": 3, "mem_mb": 9000}
    models = {"quiet": {"adapter": "null", "engine": {"sessions": 8, "max_wait_ms": 5}, "resources": big},
              "hush": {"adapter": "null", "engine": {"sessions": 8}, "resources": big}}
    cfg = scripted_config(models=models, window_s=2, in_process=False)
    plain = scripted_config(models={m: {"adapter": "null", "resources": big} for m in models}, window_s=2,
                            in_process=False)
    rows = build_design(cfg, tmp_path)
    assert len(rows) == 8  # 4 pairings x 2 openers
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(plain))
    plain_plan = snakemake(tmp_path, "-n", *[RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows]).stdout
    without = planned_record_jobs(plain_plan)
    assert "mem_mb=18000" in plain_plan  # per-job workers: the job asks for both models' memory
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    targets = [RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows]
    plan = snakemake(tmp_path, "-n", *targets)
    assert planned_record_jobs(plan.stdout) == without == len(rows), plan.stdout + plan.stderr
    # with engines the models' memory and CPUs are the engines'; a record job asks for the bridge's share
    assert "mem_mb=18000" not in plan.stdout and "mem_mb=4000" in plan.stdout, plan.stdout

    done = snakemake(tmp_path, *targets)
    assert done.returncode == 0, done.stdout + done.stderr
    pids: dict[str, set[int]] = {m: set() for m in models}
    for row in rows:
        meta = json.loads((Path(results_at(tmp_path).recording_file(row.conversation_id, "meta.json"))).read_text())
        for side, model in (("a", row.model_a), ("b", row.model_b)):
            pids[model].add(meta["agents"][side]["extra"]["engine_pid"])
    assert all(len(p) == 1 for p in pids.values()), pids  # one engine process (one load) per model
    assert pids["quiet"] != pids["hush"]
    for pid in set().union(*pids.values()):  # stopped with the run
        try:
            os.kill(pid, 0)
            alive = Path(f"/proc/{pid}/status").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
        except ProcessLookupError:
            alive = False
        assert not alive, f"engine {pid} outlived the run"
    logs = sorted((tmp_path / "results" / "logs" / "engines").glob("engine-*.log"))
    assert [p.name for p in logs] == ["engine-hush.log", "engine-quiet.log"]
    for log in logs:
        assert log.read_text().count("ready on") == 1
