"""The report as a reader meets it, built from a small synthetic measures table: the judge checks
beside the tables, a note wherever a panel is empty or constant, captions read from the settings
used and printed once, matrix cells linked to the viewer and the viewer linked."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import synthetic_analysis as S
from dyafdb.analysis import columns as C
from dyafdb.analysis import figures
from dyafdb.analysis.products import agreement_product, matrix_product, runs_product, turntaking_product, variance_product
from dyafdb.analysis.report import build_report
from dyafdb.analysis.settings import from_config
from dyafdb.analysis.tables import Matrix
from dyafdb.config import validate_config

REPO = Path(__file__).resolve().parents[2]
TASKS = ("T1-1", "T2", "T3-2", "T4-2")


def _config(root: Path) -> dict:
    models = ("alpha", "beta")
    return validate_config({
        "scenarios_dir": "scenarios", "results_dir": "results", "demo_quality": True,
        "models": {m: {"adapter": "null", "label": m.title()} for m in models},
        "suites": {"main": {"models": list(models), "archetypes": list(TASKS), "repetitions": 1, "window_s": 60}},
        "judge": {"judges": {"judge-main": {"backend": "anthropic", "model": "x"}, "judge-second": {"backend": "anthropic", "model": "y"}}},
        "analysis": {"bootstrap": 0, "dpi": 50, "figure_formats": ["png"]},
        "text_pairing": {"max_turns": 8},
    }, root / "config.yaml")


def _measures(path: Path) -> pd.DataFrame:
    m = S.measures(S.Spec(models=("alpha", "beta"), tasks=TASKS, scenarios=1))
    m[C.CHECK] = ""
    # T2: the judge never found a decision (a constant matrix), except where it named a candidate
    # the transcript never says: voided by the check, its raw label kept
    t2 = m[C.ARCHETYPE] == "T2"
    m.loc[t2 & m[C.MEASURE].isin([C.DECIDED, C.SOLVED]), C.VALUE] = "0"
    m.loc[t2, C.LABEL] = "none"
    first = m.loc[t2, C.CONVERSATION].iloc[0]
    voided = t2 & (m[C.CONVERSATION] == first) & (m[C.JUDGE] == "judge-main")
    m.loc[voided, C.LABEL] = "Owl"
    m.loc[voided, C.CHECK] = "choice not named in the transcript"
    m.to_csv(path, sep="\t", index=False)
    return m


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    config = _config(root)
    settings = from_config(config, root)
    results = root / "results" / "analysis"
    tables, figs = results / "tables", results / "figures"
    _measures(root / "measures.tsv")
    runs = runs_product([root / "measures.tsv"], settings, results / "runs" / "all.tsv")
    html = []
    for task in TASKS:
        matrix_product(runs, settings, task, tables / f"score_{task}.tsv", tables / f"score_{task}.html")
        html.append(tables / f"score_{task}.html")
    for metric in C.TURN_TAKING:
        turntaking_product(runs, settings, metric, tables / f"turntaking_{metric}.tsv", tables / f"turntaking_{metric}.html")
        html.append(tables / f"turntaking_{metric}.html")
    variance_product(runs, settings, tables / "variance.tsv", tables / "variance.html")
    agreement_product([root / "measures.tsv"], settings, tables / "agreement.tsv", tables / "agreement.html")
    (tables / "text_pairing.html").write_text("<html><body><table><caption>Table 9</caption></table></body></html>")
    html += [tables / "variance.html", tables / "agreement.html", tables / "text_pairing.html"]
    mats = [Matrix.from_frame(pd.read_csv(tables / f"score_{t}.tsv", sep="\t"), t, C.TASK_TITLES[t]) for t in TASKS]
    figures.save(figures.matrices_figure(mats, settings), figs / "task_matrices", settings)
    out = results / "report.html"
    build_report(html, [figs / "task_matrices.png"], settings, out, REPO / "workflow" / "report", config=config)
    return out.read_text()


def test_the_report_shows_the_judge_checks_beside_the_tables(report):
    assert "Judge checks: label spread and failed checks per judge and question" in report
    assert "choice not named in the transcript 1" in report
    assert "the judge answered &#x27;none&#x27;" in report or "the judge answered 'none'" in report


def test_a_constant_matrix_says_why_in_its_table_and_its_figure_panel(report):
    section = report[report.index("T2 information pooling"):]
    assert re.search(r"every cell is (\.00|0): the judge answered", section)
    notes = report[report.index("<ul class='notes'>"):]
    assert "T2 information pooling: team solved rate: every cell is" in notes


def test_captions_read_the_settings_and_are_printed_once(report):
    text = " ".join(report.split())
    assert "at most 8 turns" in text and "20 turns" not in text
    assert report.count("Task-score matrix of one archetype") == 1
    assert report.count("Caption as for") == len(TASKS) - 1 + len(C.TURN_TAKING) - 1


def test_matrix_cells_link_to_the_viewer_and_the_report_links_the_viewer(report):
    # results/analysis/report.html -> results/site/index.html
    assert "href='../site/index.html'" in report
    assert re.search(r"href='\.\./site/index\.html#tasks=T4-2&amp;window=60&amp;side=a&amp;model=alpha&amp;partner=beta'", report)


def test_an_empty_table_says_why(tmp_path):
    from analysis_helpers import conv, frame, settings
    from dyafdb.analysis.products import action_success_product, balance_product
    from dyafdb.analysis.runs import build_runs

    runs = build_runs(frame(conv("c1", "T1-1", "x", "y", a={"in_role": 1}, b={"in_role": 0})), settings())
    balance_product(runs, settings(), tmp_path / "b.tsv", tmp_path / "b.html")
    action_success_product(runs, settings(), tmp_path / "a.tsv", tmp_path / "a.html")
    assert "no asymmetric game (T3-2, T4-2, T4-3, T4-4) with an outcome in this config" in (tmp_path / "b.html").read_text()
    assert "no T2, T3-2 or T4-2 run with a judged action in this config" in (tmp_path / "a.html").read_text()


def test_an_empty_main_window_table_names_the_windows_it_left_out(tmp_path):
    """A task recorded only at another window (a window suite) is not missing: its empty main-window
    tables say where its runs are; with every run at the main window nothing is added."""
    from analysis_helpers import conv, frame, settings
    from dyafdb.analysis.products import action_success_product, matrix_product
    from dyafdb.analysis.runs import build_runs

    at_30 = frame(conv("w1", "T4-2", "x", "y", a={"leak": 1, "asked": 1}, window=30.0),
                  conv("m1", "T1-1", "x", "y", a={"role_adherence": "yes"}, b={"role_adherence": "no"}, window=60.0))
    st = settings(models=("x", "y"))
    runs = build_runs(at_30, st)
    matrix_product(runs[runs["task"] == "T4-2"], st, "T4-2", tmp_path / "m.tsv", tmp_path / "m.html")
    action_success_product(runs, st, tmp_path / "a.tsv", tmp_path / "a.html")
    for page in ("m.html", "a.html"):
        text = (tmp_path / page).read_text()
        assert "runs at 30 s are left out of the main window&#x27;s (60 s) tables" in text, text[-600:]
    only_60 = build_runs(frame(conv("m1", "T1-1", "x", "y", a={"role_adherence": "yes"}, window=60.0)), st)
    action_success_product(only_60, st, tmp_path / "b.tsv", tmp_path / "b.html")
    assert "left out" not in (tmp_path / "b.html").read_text()
