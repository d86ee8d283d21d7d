"""Tables and figures declare themselves (dyafdb.analysis.registry): a new one is its module plus its
caption, and the CLI, the analysis plan, the rules and the report pick it up."""

from __future__ import annotations

import textwrap

import pandas as pd
import pytest
import yaml

import synthetic_analysis as S
from conftest import scripted_config, write_suite
from dyafdb import declarations
from dyafdb.analysis import registry
from dyafdb.analysis.inputs import AnalysisInputs
from dyafdb.cli import main
from dyafdb.config import validate_config
from dyafdb.suite.design import build_design

TOY = textwrap.dedent('''
    """A table and a figure that live outside dyafdb: nothing else is edited to add them."""
    from dyafdb.analysis.registry import figure, table
    from dyafdb.fileio import write_text_atomic


    @table("toy-count", title="Toy: runs per model", runs="main", category="Toy", order=115)
    def toy_count_product(runs, settings, out, html):
        counts = runs.groupby("model").size().rename("runs").reset_index()
        counts.to_csv(out, sep="\\t", index=False)
        if html:
            write_text_atomic(html, "<html><body><table><tr><td>" + str(len(runs)) + "</td></tr></table></body></html>")


    @figure("fig_toy", tables=("toy_count",), title="Toy figure: runs per model", category="Toy")
    def toy_figure(table, settings):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.bar(table["model"], table["runs"])
        return fig
''')


@pytest.fixture
def toy(tmp_path, monkeypatch):
    package = tmp_path / "toy_analysis"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "toy.py").write_text(TOY)
    captions = tmp_path / "report"
    captions.mkdir()
    (captions / "toy_count.rst").write_text("How many runs each model played (a toy caption).\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for kind in ("table", "figure"):
        monkeypatch.setitem(declarations.SOURCES, kind, [("toy_analysis", package)])
    registry.clear()
    yield captions
    registry.clear()


def _plan(tmp_path):
    write_suite(tmp_path, archetypes=("T1-1", "T2"))
    cfg = scripted_config()
    cfg["suites"]["t"]["archetypes"] = ["T1-1", "T2"]
    cfg["scenarios_dir"] = str(tmp_path / "scenarios")
    cfg = validate_config(cfg, "test")
    return AnalysisInputs(cfg, {r.conversation_id: r for r in build_design(cfg)}, "results")


def test_the_shipped_declarations_give_todays_lists():
    tables = registry.tables()
    assert list(tables)[:3] == ["runs", "matrix", "turntaking"]
    assert tables["rating"].stem == "leaderboard" and tables["rating"].outputs == {"effects": "rating_effects"}
    assert tables["health-models"].caption == "health.rst" and tables["matrix"].caption == "score.rst"
    assert registry.figure_kinds()[0] == "matrices" and "timing" in registry.figure_kinds()
    assert registry.wildcard_title("score_T2") and registry.wildcard_title("score_T9") is None
    from types import SimpleNamespace

    out = SimpleNamespace(tsv="t.tsv", curves="c.tsv")
    assert tables["timing"].command_options(SimpleNamespace(), out) == "--out t.tsv --curves c.tsv"
    assert tables["matrix"].command_options(SimpleNamespace(task="T2"), SimpleNamespace(tsv="m.tsv")) == "--task T2 --out m.tsv"


def test_a_toy_table_and_figure_appear_everywhere(toy, tmp_path, capsys):
    # the CLI offers them
    with pytest.raises(SystemExit):
        main(["analysis", "--help"])
    assert "toy-count" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["analysis", "figure", "--help"])
    assert "toy" in capsys.readouterr().out

    # the plan lists the table (in its declared place) and the figure, and analysis.smk's loop gets a rule for it
    plan = _plan(tmp_path)
    html = plan.tables_html()
    t = "results/analysis/tables/"
    assert html.index(t + "toy_count.html") == html.index(t + "profiles.html") + 1
    assert plan.figures()["fig_toy"] == ("toy", [t + "toy_count.tsv"], "Toy")
    rule = next(s for s in plan.generated_tables() if s.name == "toy-count")
    assert rule.rule_name == "analysis_toy_count" and plan.table_runs(rule) == plan.runs_of(plan.main_tasks)

    # the CLI computes the table and draws the figure through the declarations
    root = tmp_path / "p"
    root.mkdir()
    (root / "out").mkdir()
    spec = S.Spec(tasks=("T1-1", "T2"), scenarios=1)
    S.write(spec, root / "measures.tsv")
    cfg = {"scenarios_dir": "scenarios", "results_dir": "results", "demo_quality": True,
           "models": {m: {"adapter": "null"} for m in spec.models},
           "suites": {"main": {"models": list(spec.models), "archetypes": ["T1-1", "T2"], "repetitions": 1, "window_s": 60}},
           "analysis": {"dpi": 50, "figure_formats": ["png"]}}
    (root / "config.yaml").write_text(yaml.safe_dump(cfg))
    args = ["--config", str(root / "config.yaml"), "--root", str(root)]
    out = root / "out"
    assert main(["analysis", "runs", "--measures", str(root / "measures.tsv"), "--out", str(out / "runs.tsv"), *args]) == 0
    assert main(["analysis", "toy-count", "--runs", str(out / "runs.tsv"), "--out", str(out / "toy_count.tsv"),
                 "--html", str(out / "toy_count.html"), *args]) == 0
    counts = pd.read_csv(out / "toy_count.tsv", sep="\t")
    assert set(counts["model"]) == set(spec.models) and counts["runs"].gt(0).all()
    assert main(["analysis", "figure", "toy", "--input", str(out / "toy_count.tsv"), "--out-prefix", str(out / "fig_toy"),
                 *args]) == 0
    assert (out / "fig_toy.png").stat().st_size > 0

    # the report titles them and shows the caption
    assert main(["analysis", "report", "--tables", str(out / "toy_count.html"), "--figures", str(out / "fig_toy.png"),
                 "--captions", str(toy), "--out", str(out / "report.html"), *args]) == 0
    page = (out / "report.html").read_text()
    assert "Toy: runs per model" in page and "Toy figure: runs per model" in page and "a toy caption" in page


def test_a_declaration_that_computes_its_arguments_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "bad_analysis"
    package.mkdir()
    (package / "bad.py").write_text('from dyafdb.analysis.registry import table\n\n\n'
                                    '@table("bad", runs=sorted(["T2"]))\ndef bad_product(runs, settings, out, html):\n    pass\n')
    monkeypatch.setitem(declarations.SOURCES, "table", [("bad_analysis", package)])
    registry.clear()
    try:
        with pytest.raises(RuntimeError, match=r"bad\.py:4: .*literals"):
            registry.tables()
    finally:
        registry.clear()
