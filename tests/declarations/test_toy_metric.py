"""A turn-taking metric added in one place (a lab's own module, registered by an entry point) is
scored into measures.tsv, gets its analysis table and report title, and shows on the viewer's
conversation page: nothing in dyafdb is edited for it."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import plugins
from dyafdb.analysis import columns as C
from dyafdb.analysis import registry
from results_paths import results_at
from scoring_fixtures import load, write_project, write_recording_from_segments

TOY = textwrap.dedent('''
    """A lab's own turn-taking metric: the share of its speech that overlaps the partner's."""
    from dyafdb.score.turntaking import metric


    @metric("toy_overlap", label="Toy overlap share", unit="share", denominator="toy_overlap_n")
    def toy_overlap(side):
        return side.overlap_frames, side.speech_frames
''')


@pytest.fixture
def toy_metric(tmp_path, monkeypatch):
    plugins.install(tmp_path / "site", monkeypatch, "toy-metric", {"toy_metric": TOY},
                    {"dyafdb.metrics": {"toy_overlap": "toy_metric"}})
    registry.clear()
    yield
    plugins.forget()
    registry.clear()


def test_a_metric_declared_once_reaches_measures_tables_report_and_viewer(tmp_path, toy_metric):
    from dyafdb.cli import main
    from dyafdb.measures.table import table_rows, write_table
    from dyafdb.score.conversation import score_conversation
    from dyafdb.suite.design import build_design
    from dyafdb.viewer.pages import measures_card

    root = tmp_path / "project"
    write_project(root, ["T3-2"])
    config = load(root)
    rows = build_design(config, root)
    for row in rows:  # a speaks 0-20, b 10-40: 10 frames of overlap each
        write_recording_from_segments(Path(results_at(root).recording(row.conversation_id)),
                                      {"a": [(0, 20)], "b": [(10, 40)]}, 60, conversation_id=row.conversation_id,
                                      archetype="T3-2", scenario=row.scenario, opener=row.opener,
                                      models=(row.model_a, row.model_b))
        scored = score_conversation(config, root, row.conversation_id).measures

    # measures.tsv: the metric and its denominator, on every side, after the shipped metrics
    out = root / "results/scores/measures.tsv"
    write_table(out, table_rows(config, root, rows, with_judge=False))
    with open(out) as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    toy = {(t["conversation_id"], t["side"], t["measure"]): t["value"] for t in table if t["measure"].startswith("toy_")}
    cid = rows[-1].conversation_id
    assert toy[cid, "a", "toy_overlap"] == "0.5" and toy[cid, "a", "toy_overlap_n"] == "20"
    assert toy[cid, "b", "toy_overlap"] == "0.333333" and toy[cid, "b", "toy_overlap_n"] == "30"
    assert len(toy) == 4 * len(rows)

    # the analysis: a runs column and its own turn-taking table, titled with its label
    assert "toy_overlap" in C.TURN_TAKING and C.measure_label("toy_overlap") == "Toy overlap share"
    assert "turntaking_toy_overlap" in registry.tables()["turntaking"].stems(["T3-2"])
    assert registry.wildcard_title("turntaking_toy_overlap") == "Turn-taking: Toy overlap share"
    t = root / "out"
    common = ["--config", str(root / "config.yaml"), "--root", str(root)]
    assert main(["analysis", "runs", "--measures", str(out), "--out", str(t / "runs.tsv"), *common]) == 0
    assert main(["analysis", "turntaking", "--runs", str(t / "runs.tsv"), "--metric", "toy_overlap",
                 "--out", str(t / "turntaking_toy_overlap.tsv"), "--html", str(t / "turntaking_toy_overlap.html"), *common]) == 0
    matrix = pd.read_csv(t / "turntaking_toy_overlap.tsv", sep="\t", index_col="row")
    # each pairing played once as side a (.5) and once as side b (1/3): the cell is their mean
    assert matrix.loc["model_x", "model_y"] == pytest.approx((0.5 + 1 / 3) / 2, abs=1e-5)
    assert "Toy overlap share" in (t / "turntaking_toy_overlap.html").read_text()
    assert main(["analysis", "report", "--tables", str(t / "turntaking_toy_overlap.html"), "--out",
                 str(t / "report.html"), *common]) == 0
    assert "Turn-taking: Toy overlap share" in (t / "report.html").read_text()

    # the viewer's conversation page: a row of its own, labelled, in the declared order
    card = measures_card(json.loads(scored.read_text()), {"a": "A", "b": "B"})
    assert "<th>Toy overlap share</th><td>.50</td><td>.33</td>" in card and "<th>toy_overlap_n</th><td>20</td>" in card
    assert card.index("Toy overlap share") > card.index("overlap_s")


def test_without_the_plugin_the_metric_is_gone():
    assert "toy_overlap" not in C.TURN_TAKING


def test_a_misdeclared_metric_is_refused_naming_its_line(tmp_path, monkeypatch):
    from dyafdb.errors import InputError
    from dyafdb.score.turntaking import metrics

    bad = TOY.replace('unit="share"', 'unit="percent"')
    plugins.install(tmp_path / "site", monkeypatch, "toy-metric", {"toy_metric": bad},
                    {"dyafdb.metrics": {"toy_overlap": "toy_metric"}})
    try:
        with pytest.raises(InputError, match=r"toy_metric\.py:\d+: @metric\('toy_overlap'\): unit='percent'; choose one of share"):
            metrics()
    finally:
        plugins.forget()
