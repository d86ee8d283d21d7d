"""The analysis rules: what each job reads, and (slow) the whole workflow from scripted agents to the report."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from conftest import REPO, TEST_PATH, TESTS_DIR, scripted_config, write_suite
from dyafdb.analysis.inputs import AnalysisInputs
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from stub_chat_server import StubChat


def _plan(tmp_path, archetypes=("T1-1", "T2", "T4-2"), **extra):
    write_suite(tmp_path, archetypes=archetypes)
    cfg = scripted_config()
    cfg["suites"]["t"]["archetypes"] = list(archetypes)
    cfg["scenarios_dir"] = str(tmp_path / "scenarios")
    cfg.update(extra)
    cfg = validate_config(cfg, "test")
    conversations = {r.conversation_id: r for r in build_design(cfg)}
    return AnalysisInputs(cfg, conversations, "results"), conversations


def test_a_runs_job_reads_only_its_archetype(tmp_path):
    plan, conversations = _plan(tmp_path)
    files = plan.archetype_files(SimpleNamespace(task="T2"))
    assert "results/scores/mechanical/T2.tsv" in files  # stands for the archetype's measures, meta and garble files
    assert all("T1-1" not in f and "T4-2" not in f for f in files)
    assert "results/judge/main/T2/final_choice.jsonl" in files and "results/judge/second/T2/final_choice.jsonl" in files
    assert plan.runs_of(["T1-1", "T1-2"]) == ["results/analysis/runs/T1-1.tsv"]
    assert plan.runs_of(["T4-3", "T4-4"]) == plan.all_runs  # none present: every archetype, so the table is still made


def test_figures_and_report_inputs(tmp_path):
    plan, _ = _plan(tmp_path, text_pairing={"enabled": True, "archetypes": ["T1-1", "T2"],
                                            "models": {"q": {"backend": "llamacpp"}, "r": {"backend": "llamacpp"}}},
                    analysis={"figure_formats": ["pdf", "svg"]})
    assert plan.figure_formats == ["png", "pdf", "svg"]  # the report embeds PNG
    assert "text_pairing" in plan.figures()
    assert "results/analysis/tables/score_T4-2.html" in plan.tables_html()
    assert "results/analysis/figures/fig3_timing.svg" in plan.figures_other()
    # the validator filled the schema's default in: a rule's params carry the value it really uses
    assert plan.settings("bootstrap") == '{"bootstrap": 1000}'


def _snakemake(root: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(root),
           "--configfile", str(root / "config.yaml"), "--cores", "2", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)


def _job_counts(text: str) -> dict[str, int]:
    block = text.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", block, re.M)}


@pytest.mark.slow
def test_workflow_ends_in_the_report_and_recomputes_only_what_a_prompt_touches(tmp_path):
    write_suite(tmp_path, archetypes=("T1-1", "T2", "T4-2"))
    shutil.copytree(REPO / "config" / "judge", tmp_path / "prompts")
    with StubChat() as stub:
        cfg = scripted_config(window_s=4.0)
        cfg["suites"]["t"]["archetypes"] = ["T1-1", "T2", "T4-2"]
        judge = {"backend": "openai", "model": "stub-judge", "base_url": stub.url, "api_key_env": None}
        cfg["judge"] = {"judges": {"main": judge, "second": {**judge, "temperature": 0.5}}, "prompts_dir": "prompts"}
        cfg["analysis"] = {"bootstrap": 20, "figure_formats": ["png"], "dpi": 50}  # the report embeds PNG; no PDF read
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
        done = _snakemake(tmp_path, "results/analysis/report.html")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        page = (tmp_path / "results" / "analysis" / "report.html").read_text()
        for title in ("T2 information pooling", "Figure 3: role entry and deviation", "Judge agreement", "Leaderboard",
                      "Audio health per model", "Audio health: DNSMOS OVRL", "Audio-health matrices"):
            assert title in page
        (tmp_path / "prompts" / "final_choice.txt").write_text((tmp_path / "prompts" / "final_choice.txt").read_text() + "\nBe brief.\n")
        plan = _snakemake(tmp_path, "results/analysis/report.html", "-n")
        assert plan.returncode == 0, plan.stderr[-3000:]
        jobs = _job_counts(plan.stdout)
        assert jobs["judge"] == 2 and jobs["analysis_runs"] == 1 and jobs["analysis_matrix"] == 1
        for untouched in ("record", "score", "analysis_timing", "analysis_balance", "figure_fig3_timing", "figure_fig6_balance"):
            assert untouched not in jobs

        # One table on its own: only its job is planned.
        (tmp_path / "results" / "analysis" / "tables" / "timing.tsv").unlink()
        plan = _snakemake(tmp_path, "results/analysis/tables/timing.tsv", "-n")
        assert plan.returncode == 0, plan.stderr[-3000:]
        assert _job_counts(plan.stdout) == {"analysis_timing": 1}

        # One edited scenario: its conversations are recorded and scored again, nothing else.
        rows = build_design(validate_config(cfg, "test"), tmp_path)
        edited = tmp_path / "scenarios" / "T2" / "t2-fixture-01.yaml"
        edited.write_text(edited.read_text().replace("situation: ", "situation: It is raining. ", 1))
        plan = _snakemake(tmp_path, "results/scores/measures.tsv", "-n")
        assert plan.returncode == 0, plan.stderr[-3000:]
        jobs = _job_counts(plan.stdout)
        mine = [r for r in rows if r.scenario == "t2-fixture-01"]
        assert mine and jobs["record"] == len(mine) and jobs["score"] == len(mine)
        assert jobs["mechanical_table"] == 1 and jobs["judge"] == 2 and jobs["measures_table"] == 1
