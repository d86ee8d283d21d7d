"""Incremental recompute, checked by the job counts of dry-runs: an edit replans only what depends on it."""

from __future__ import annotations

from pathlib import Path

import os
import re
import time

import pytest
import yaml

from conftest import scripted_config, write_suite
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from results_paths import RESULTS, results_at


def record_jobs(plan: str) -> set[str]:
    return {re.search(r"wildcards: .*\bconversation=([^\s,]+)", block).group(1) for block in plan.split("rule record:")[1:]}


@pytest.fixture
def project(tmp_path):
    write_suite(tmp_path, per_archetype=2, archetypes=["T1-1", "T4-2"])
    cfg = scripted_config(archetypes=["T1-1", "T4-2"])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    rows = build_design(validate_config(cfg, "test"), tmp_path)
    # Recordings that exist already, older than the scenario files' next edit.
    for row in rows:
        folder = Path(results_at(tmp_path).recording(row.conversation_id))
        folder.mkdir(parents=True)
        for name in ("audio.wav", "text.jsonl", "meta.json"):
            (folder / name).write_text("{}")
    past = time.time() - 100
    for path in (tmp_path / "scenarios").rglob("*.yaml"):
        os.utime(path, (past, past))
    return tmp_path, cfg, rows


def targets(rows) -> list[str]:
    return [RESULTS.recording_file(r.conversation_id, "meta.json") for r in rows]


def test_nothing_to_do_when_nothing_changed(project):
    from test_resume import snakemake

    tmp, cfg, rows = project
    plan = snakemake(tmp, "-n", *targets(rows))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert record_jobs(plan.stdout) == set()


def test_editing_one_scenario_rerecords_only_its_conversations(project):
    from test_resume import snakemake

    tmp, cfg, rows = project
    edited = tmp / "scenarios" / "T4-2" / "t4-2-fixture-02.yaml"
    doc = yaml.safe_load(edited.read_text())
    doc["situation"] += " It is raining."
    edited.write_text(yaml.safe_dump(doc))
    plan = snakemake(tmp, "-n", *targets(rows))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    expected = {r.conversation_id for r in rows if r.scenario == "t4-2-fixture-02"}
    assert record_jobs(plan.stdout) == expected and len(expected) == 8  # 2 self-play x 2 + cross 4


def test_adding_a_model_plans_only_its_pairings(project):
    from test_resume import snakemake

    tmp, cfg, rows = project
    cfg["models"]["newbie"] = {"adapter": "scripted", "params": {"script": []}}
    cfg["suites"]["t"]["models"].append("newbie")
    (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))
    new_rows = build_design(validate_config(cfg, "test"), tmp)
    plan = snakemake(tmp, "-n", *targets(new_rows))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    planned = record_jobs(plan.stdout)
    assert planned == {r.conversation_id for r in new_rows} - {r.conversation_id for r in rows}
    assert {r.pairing for r in new_rows if r.conversation_id in planned} == {"talker+newbie", "quiet+newbie", "newbie+newbie"}
