"""Any subset of archetypes, models or pairings runs the whole default target (issue 25, class 7).

The paper's grid (every main archetype, several models, self-play and cross-play) is what most
tables were written against; a suite that holds only part of it must still end in the report and the
viewer, every empty table and figure saying why in its place. Scripted agents and the local stub
judge keep each case to seconds.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, scripted_config, write_suite
from dyafdb.analysis.figures import read_notes
from dyafdb.analysis.inputs import AnalysisInputs
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design
from stub_chat_server import StubChat
from test_resume import snakemake

MODELS = {
    "talker": {"adapter": "scripted", "params": {"script": [{"start_s": 0.0, "end_s": 1.0, "text": "hello there"}]}},
    "quiet": {"adapter": "scripted", "params": {"script": [{"start_s": 2.0, "end_s": 2.8, "text": "hi"}]}},
}

# Each case leaves out a different part of the grid; together they cover one archetype, one pairing,
# self-play only, cross-play only, a T4-2-only suite and the game-balance archetypes alone. Text
# pairing is on where the suite holds some of its archetypes (T1-1) and where it holds none (T4-3, T4-4).
CASES = {
    "one archetype (T1-1 only)": dict(archetypes=["T1-1"], models=["talker", "quiet"], text=True),
    "one pairing, cross-play only (T2)": dict(archetypes=["T2"], models=["talker", "quiet"], cross_play_only=True),
    "self-play only (one model, T4-2 only)": dict(archetypes=["T4-2"], models=["talker"]),
    "game-balance archetypes only": dict(archetypes=["T4-3", "T4-4"], models=["talker", "quiet"], cross_play_only=True,
                                         text=True),
}

# What frame_html prints when a product gave no reason of its own: not an explanation.
GENERIC_EMPTY = "no rows: nothing in these runs to tabulate"


def _config(case: dict, judge_url: str) -> dict:
    cfg = scripted_config(models={m: MODELS[m] for m in case["models"]}, window_s=4.0, archetypes=case["archetypes"],
                          scenarios_per_archetype=1,
                          **({"cross_play_only": True} if case.get("cross_play_only") else {}))
    judge = {"backend": "openai", "model": "stub-judge", "base_url": judge_url, "api_key_env": None}
    cfg["judge"] = {"judges": {"main": judge}, "prompts_dir": "prompts"}
    # PNG only, at a low resolution: the report embeds the PNG and the notes are read from it; the
    # figure jobs (half the workflow's time) drew a PDF of each figure too, which no assertion reads
    cfg["analysis"] = {"bootstrap": 10, "figure_formats": ["png"], "dpi": 50}
    if case.get("text"):
        text_model = {"backend": "openai", "base_url": judge_url}
        cfg["text_pairing"] = {"enabled": True, "counterbalance": False, "max_turns": 2,
                               "models": {"ta": {**text_model, "model": "talker-a"}, "tb": {**text_model, "model": "talker-b"}}}
    return cfg


def _data_rows(tsv: Path) -> int:
    return len(pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False)) if tsv.stat().st_size else 0


def _sections(report: str, kind: str) -> list[str]:
    return re.findall(rf"<section id='{kind}\d+'>(.*?)</section>", report, re.S)


def _failure(done, root: Path) -> str:
    """What a failed run printed, and the logs of the jobs that failed, so the assertion says why."""
    logs = [p for p in (root / "results" / "logs").rglob("*.log") if "Traceback" in p.read_text(errors="replace")]
    return (done.stdout[-2000:] + done.stderr[-3000:]
            + "".join(f"\n--- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in logs))


@pytest.mark.parametrize("name", CASES)
def test_a_partial_suite_runs_the_whole_workflow_and_says_what_is_empty(tmp_path, name):
    case = CASES[name]
    write_suite(tmp_path, archetypes=case["archetypes"])
    shutil.copytree(REPO / "config" / "judge", tmp_path / "prompts")
    with StubChat() as stub:
        cfg = _config(case, stub.url)
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
        done = snakemake(tmp_path, "--cores", "2")
    assert done.returncode == 0, _failure(done, tmp_path)

    results = tmp_path / "results"
    config = validate_config(cfg, "test")
    rows = build_design(config, tmp_path)
    assert {r.archetype for r in rows} == set(case["archetypes"])
    assert {r.play for r in rows} == ({"cross"} if case.get("cross_play_only") else {"self"} if len(case["models"]) == 1
                                      else {"self", "cross"})
    # The viewer shows every conversation of the design.
    assert (results / "site" / "index.html").exists()
    pages = {p.stem for p in (results / "site" / "c").rglob("*.html")}
    assert pages == {r.conversation_id for r in rows}
    # Profiles answer every question for every model the suite holds.
    profiles = pd.read_csv(results / "analysis" / "tables" / "profiles.tsv", sep="\t")
    assert set(profiles["model"]) == set(case["models"])
    assert not [p for p in (results / "logs").rglob("*.log") if "Traceback" in p.read_text(errors="replace")]

    plan = AnalysisInputs(config, {r.conversation_id: r for r in rows}, "results")
    report = (results / "analysis" / "report.html").read_text()
    tables, figures = _sections(report, "t"), _sections(report, "f")
    # Nothing silently left out: every planned table and figure has its section, even an empty one.
    assert len(tables) == len(plan.tables_html()) and len(figures) == len(plan.figures())
    empty_tables = 0
    for section in tables:
        for table, note in re.findall(r"<table>(.*?)</table>(<p class='note'>.*?</p>)?", section, re.S):
            if "<tbody></tbody>" in table:
                empty_tables += 1
                assert note and GENERIC_EMPTY not in note, f"an empty table without its reason:\n{section[:1500]}"
    # The partial suites leave some tables empty (else this checks nothing), each with its reason.
    assert empty_tables
    for fig, (_, inputs, _) in plan.figures().items():
        png = tmp_path / plan.figure_files(fig)["png"]
        if all(_data_rows(tmp_path / t) == 0 for t in inputs):
            notes = read_notes(png)
            assert notes, f"{fig}: every input table is empty, yet the figure carries no note"
            assert all(html.escape(n) in report for n in notes), fig

    tasks = set(case["archetypes"])
    if not tasks & {"T2", "T3-2", "T4-2"}:
        assert "no T2, T3-2 or T4-2 run" in report
    # Only cross-play runs of a contested archetype are battles for the rating.
    if not tasks & set(config["analysis"]["contested"]) or len(case["models"]) == 1:
        board = (results / "analysis" / "tables" / "leaderboard.html").read_text()
        assert "no contested" in board and "Bradley-Terry over" not in board
    if case.get("text") and not tasks & {"T1-1", "T2", "T3-2", "T4-2"}:
        text_table = (results / "analysis" / "tables" / "text_pairing.html").read_text()
        assert "text pairing" in text_table and GENERIC_EMPTY not in text_table
