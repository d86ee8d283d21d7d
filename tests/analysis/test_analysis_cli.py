"""The analysis commands end to end on a synthetic measures table: every table, figure and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

import synthetic_analysis as S
from dyafdb.cli import main
from dyafdb.config import validate_config
from dyafdb.errors import InputError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("analysis")
    spec = S.Spec(tasks=S.ALL_TASKS, scenarios=1, windows=(30.0, 60.0), own={"alpha": 0.8}, partner={"beta": 0.5})
    S.write(spec, root / "measures.tsv")
    cfg = {
        "scenarios_dir": "scenarios", "results_dir": "results", "demo_quality": True,
        "models": {m: {"adapter": "null", "label": m.title()} for m in spec.models},
        "suites": {"main": {"models": list(spec.models), "archetypes": list(S.ALL_TASKS), "repetitions": 1, "window_s": 60}},
        "judge": {"judges": {"judge-main": {"backend": "anthropic", "model": "x"}, "judge-second": {"backend": "anthropic", "model": "y"}}},
        "analysis": {"bootstrap": 10, "dpi": 60, "reference_models": ["alpha", "beta"], "anchor_model": "alpha"},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(cfg))
    return root


def run(project: Path, *args: str) -> None:
    assert main([args[0], *args[1:], "--config", str(project / "config.yaml"), "--root", str(project)]) == 0


def test_every_product_figure_and_the_report(project):
    t = project / "out"
    run(project, "analysis", "runs", "--measures", str(project / "measures.tsv"), "--out", str(t / "runs.tsv"))
    runs = str(t / "runs.tsv")
    for task in S.ALL_TASKS:
        run(project, "analysis", "matrix", "--runs", runs, "--task", task, "--out", str(t / f"score_{task}.tsv"),
            "--html", str(t / f"score_{task}.html"))
    for metric in ("tor_pause", "tor_end", "backchannel", "barge_in"):
        run(project, "analysis", "turntaking", "--runs", runs, "--metric", metric, "--out", str(t / f"turntaking_{metric}.tsv"),
            "--html", str(t / f"turntaking_{metric}.html"))
    for product in ("variance", "action-success", "windows", "balance", "profiles"):
        name = product.replace("-", "_")
        run(project, "analysis", product, "--runs", runs, "--out", str(t / f"{name}.tsv"), "--html", str(t / f"{name}.html"))
    run(project, "analysis", "timing", "--runs", runs, "--out", str(t / "timing.tsv"), "--curves", str(t / "curves.tsv"),
        "--html", str(t / "timing.html"))
    run(project, "analysis", "rating", "--runs", runs, "--out", str(t / "leaderboard.tsv"), "--effects", str(t / "effects.tsv"),
        "--html", str(t / "leaderboard.html"))
    run(project, "analysis", "agreement", "--measures", str(project / "measures.tsv"), "--out", str(t / "agreement.tsv"),
        "--html", str(t / "agreement.html"))
    run(project, "analysis", "versions", "--out", str(t / "versions.tsv"), "--config-out", str(t / "config.yaml"))

    board = pd.read_csv(t / "leaderboard.tsv", sep="\t")
    assert list(board["model"][:1]) and set(board["model"]) == {"alpha", "beta", "gamma"}
    assert board.set_index("model").loc["alpha", "rating"] == 1000
    assert not board.set_index("model").loc["gamma", "reference"]  # rated against the reference set
    assert "judge-main vs judge-second" in set(pd.read_csv(t / "agreement.tsv", sep="\t")["comparison"])
    assert set(pd.read_csv(t / "windows.tsv", sep="\t")["window_s"]) == {30.0, 60.0}

    figures = {
        "task_matrices": ("matrices", [str(t / f"score_{task}.tsv") for task in S.ALL_TASKS]),
        "fig2_variance": ("variance", [str(t / "variance.tsv")]),
        "fig3_timing": ("timing", [str(t / "timing.tsv"), str(t / "curves.tsv")]),
        "fig4_action_success": ("action_success", [str(t / "action_success.tsv")]),
        "fig5_windows": ("windows", [str(t / "windows.tsv")]),
        "fig6_balance": ("balance", [str(t / "balance.tsv")]),
        "leaderboard": ("leaderboard", [str(t / "leaderboard.tsv")]),
    }
    for name, (kind, inputs) in figures.items():
        run(project, "analysis", "figure", kind, "--input", *inputs, "--out-prefix", str(t / "figures" / name))
        for ext in ("png", "pdf"):
            assert (t / "figures" / f"{name}.{ext}").stat().st_size > 1000
    tables = sorted(str(p) for p in t.glob("*.html"))
    run(project, "analysis", "report", "--tables", *tables, "--figures", *[str(t / "figures" / f"{n}.png") for n in figures],
        "--captions", str(REPO / "workflow" / "report"), "--versions", str(t / "versions.tsv"),
        "--config-file", str(t / "config.yaml"), "--out", str(t / "report.html"))
    page = (t / "report.html").read_text()
    assert page.count("<section id=") == len(tables) + len(figures) + 2
    assert page.count("<section class='card'") >= 2  # a model card per model (dyafdb.analysis.cards)
    assert "Demo quality" in page and "data:image/png;base64," in page
    assert "Task-score matrix of one archetype" in page  # the caption of score_*.html
    assert "(.50)" in (t / "score_T3-1.html").read_text()


def test_the_same_pdf_twice(project, tmp_path):
    table = project / "out" / "balance.tsv"
    if not table.exists():
        pytest.skip("needs the products of the test above")
    for k in (1, 2):
        run(project, "analysis", "figure", "balance", "--input", str(table), "--out-prefix", str(tmp_path / f"b{k}"))
    assert (tmp_path / "b1.pdf").read_bytes() == (tmp_path / "b2.pdf").read_bytes()


def test_analysis_and_text_pairing_sections_are_validated():
    base = {"scenarios_dir": "s", "models": {"m": {"adapter": "null"}},
            "suites": {"s": {"models": ["m"], "archetypes": ["T2"], "repetitions": 1, "window_s": 4}}}
    with pytest.raises(InputError, match="bootstrap"):
        validate_config({**base, "analysis": {"bootstrap": -1}}, "cfg")
    with pytest.raises(InputError, match="unknown key 'bootstrapp'"):
        validate_config({**base, "analysis": {"bootstrapp": 10}}, "cfg")
    with pytest.raises(InputError, match="contested"):
        validate_config({**base, "analysis": {"contested": ["T1-1"]}}, "cfg")
    with pytest.raises(InputError, match="backend"):
        validate_config({**base, "text_pairing": {"models": {"q": {"backend": "vllm"}}}}, "cfg")
    ok = validate_config({**base, "analysis": {"bootstrap": 0, "windows_s": [30, 60]}}, "cfg")
    assert ok["analysis"]["bootstrap"] == 0


def test_analyze_errors_name_the_fix(project, capsys):
    assert main(["analysis", "matrix", "--config", str(project / "config.yaml"), "--runs", str(project / "missing.tsv"),
                 "--task", "T2", "--out", str(project / "x.tsv")]) == 2
    assert "run `dyafdb analysis runs`" in capsys.readouterr().err
    bad = project / "bad.tsv"
    bad.write_text("conversation_id\tmodel\nc\tm\n")
    assert main(["analysis", "runs", "--config", str(project / "config.yaml"), "--measures", str(bad), "--out", str(project / "r.tsv")]) == 2
    assert "lacks column(s)" in capsys.readouterr().err
    from dyafdb.analysis.settings import from_config
    cfg = yaml.safe_load((project / "config.yaml").read_text())
    cfg["analysis"]["anchor_model"] = "gamma"
    with pytest.raises(InputError, match="anchor_model = 'gamma' must be one of the reference models"):
        from_config(cfg)
