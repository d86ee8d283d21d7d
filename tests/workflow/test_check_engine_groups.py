"""scripts/check-engine-groups.py on the recordings and engine logs of a run of
config/ci-slurm-engines-sessions.yaml (MiniCPM-o and Raon, as CI's SLURM cluster runs them), written
here without running anything: one load per model per group passes and is printed per group; a model
loaded twice in a group, a conversation whose side no engine stepped, or sessions not numbered 1..n
by one load fail, naming what is wrong. Checked without SLURM's side (no --after)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

CONFIG = REPO / "config" / "ci-slurm-engines-sessions.yaml"
CORES = 10  # as scripts/ci-slurm.sh runs it


def grouping() -> tuple[dict, dict[str, str]]:
    from dyafdb.config import load_config
    from dyafdb.record.engine_groups import EngineGroups
    from dyafdb.suite.design import build_design

    config = load_config(CONFIG)
    rows = {r.conversation_id: r for r in build_design(config, REPO)}
    group_of, _ = EngineGroups(config, rows, group_name=lambda: "engine_node", cores=lambda: CORES,
                               local=lambda: False).groups()
    return rows, group_of


def write_run(results: Path, reloads: str | None = None, no_engine: str | None = None,
              renumber: bool = False) -> dict[str, str]:
    """Recordings and engine logs as the engines write them: one pid per (group, model), each
    conversation a numbered session of it. ``reloads``: that model's engine logs two loads in its
    first group; ``no_engine``: that conversation's side b ran in its own worker; ``renumber``:
    every session says it was its engine's first."""
    from dyafdb.paths import Results

    rows, group_of = grouping()
    out = Results(str(results))
    pid_of: dict[tuple[str, str], int] = {}
    hosted: dict[tuple[str, str], int] = {}
    for cid, row in sorted(rows.items()):
        group = group_of[cid]
        agents = {}
        for side, model in (("a", row.model_a), ("b", row.model_b)):
            key = (group, model)
            pid_of.setdefault(key, 40000 + len(pid_of))
            hosted[key] = hosted.get(key, 0) + 1
            extra = {"engine": True, "engine_pid": pid_of[key], "engine_session_number": 1 if renumber else hosted[key]}
            agents[side] = {"adapter": model.split("_")[0], "extra": {} if cid == no_engine and side == "b" else extra}
        meta = Path(out.recording_file(cid, "meta.json"))
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"agents": agents, "host": {"slurm_job_id": None}}))
    first_group = {}
    for (group, model), pid in sorted(pid_of.items()):
        first_group.setdefault(model, group)
        log = Path(out.log("engine", f"{group}-{model}"))
        log.parent.mkdir(parents=True, exist_ok=True)
        ready = (f"engine {model}: ready on .dyafdb-engines/{group}/{model}.sock "
                 f'({{"adapter": "{model.split("_")[0]}", "model": "{model}", "pid": {pid}, "engine": true}})\n')
        log.write_text(ready * (2 if model == reloads and group == first_group[model] else 1))
    return group_of


def check(results: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "scripts/check-engine-groups.py", "--config", str(CONFIG), "--results",
                           str(results), "--cores", str(CORES), *extra], cwd=REPO, env=env, capture_output=True, text=True,
                          check=False, timeout=300)


def test_one_load_per_model_per_group_passes_and_is_printed_per_group(tmp_path):
    group_of = write_run(tmp_path)
    done = check(tmp_path, "--group-size", "8")  # as scripts/ci-slurm.sh checks it
    assert done.returncode == 0, done.stderr
    groups = sorted(set(group_of.values()))
    assert len(groups) == 2 and len(group_of) == 16  # two pairings, one group of eight conversations each
    assert "4 model loads (minicpmo_standin 2, raon_standin 2)" in done.stdout
    for group in groups:
        assert (f"group {group}: minicpmo_standin 1 load for 8 conversations (its sessions 1-8); "
                "raon_standin 1 load for 8 conversations (its sessions 1-8)") in done.stdout


def test_a_group_smaller_than_asked_fails_naming_the_group(tmp_path):
    group_of = write_run(tmp_path)
    done = check(tmp_path, "--group-size", "9")
    assert done.returncode == 1
    for group in set(group_of.values()):
        assert f"group {group} holds 8 conversations, not 9" in done.stderr


@pytest.mark.parametrize("model", ["minicpmo_standin", "raon_standin"])
def test_a_model_loaded_twice_in_a_group_fails(tmp_path, model):
    write_run(tmp_path, reloads=model)
    done = check(tmp_path)
    assert done.returncode == 1
    assert f"the engine loaded {model} 2 times ('ready on' lines), not once" in done.stderr
    assert f"model {model}: 3 model loads in 2 groups, not one per group" in done.stderr


def test_a_side_without_an_engine_fails(tmp_path):
    cid = min(grouping()[1])
    write_run(tmp_path, no_engine=cid)
    done = check(tmp_path)
    assert done.returncode == 1
    assert f"{cid}: side b (" in done.stderr and "was not stepped by an engine" in done.stderr


def test_sessions_not_hosted_by_one_load_fail(tmp_path):
    write_run(tmp_path, renumber=True)
    done = check(tmp_path)
    assert done.returncode == 1
    assert "engine numbered its sessions [1, 1, 1, 1, 1, 1, 1, 1], not 1 to 8" in done.stderr
