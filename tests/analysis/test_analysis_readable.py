"""Readable pages (issue 26, item 7): one spelling per measure, heatmaps on the measure's own scale
with a colour bar, each report section once in the contents."""

from __future__ import annotations

import pandas as pd

from analysis_helpers import settings
from dyafdb.analysis import columns as C
from dyafdb.analysis.figures import matrices_figure
from dyafdb.analysis.report import build_report
from dyafdb.analysis.tables import Matrix


def _matrix(name: str, a: float, b: float) -> Matrix:
    models = ["x", "y"]
    values = pd.DataFrame([[a, b], [b, a]], index=models, columns=models)
    n = pd.DataFrame(3, index=models, columns=models)
    return Matrix(name=name, title=name, models=models, partners=models, values=values, n=n,
                  row_avg=values.mean(axis=1))


def test_one_spelling_per_measure_in_report_and_viewer():
    from dyafdb.viewer.pages import measures_card
    from dyafdb.viewer.summary import catalog_entry

    assert C.measure_label(C.TOR_PAUSE) == C.TURN_TAKING_LABELS[C.TOR_PAUSE] == "TOR_pause"
    assert catalog_entry("tor_pause|a|")["label"].startswith("TOR_pause · side a")
    card = measures_card({"values": {"a": {"tor_pause": 0.5}, "b": {"tor_pause": 0.2}}}, {"a": "A", "b": "B"})
    assert "<th>TOR_pause</th>" in card and ">tor_pause<" not in card


def test_heatmaps_use_the_measures_scale_and_carry_a_colour_bar():
    mats = [_matrix("health_dnsmos_ovrl", 3.10, 3.28), _matrix("tor_pause", 0.2, 0.4), _matrix("backchannel", 2.0, 6.0)]
    fig = matrices_figure(mats, settings(models=("x", "y")))
    meshes = [ax.collections[0] for ax in fig.axes if ax.get_title()]  # the panels, not their colour bars
    scales = [(mesh.norm.vmin, mesh.norm.vmax) for mesh in meshes]
    assert scales == [(1.0, 5.0), (0.0, 1.0), (0.0, 6.0)]
    assert len(fig.axes) == 2 * len(mats)  # a colour bar beside every panel


def test_each_section_is_listed_once_in_the_contents(tmp_path):
    page = tmp_path / "score_T1-1.html"
    page.write_text("<html><body><table><caption>T1-1</caption></table></body></html>")
    out = tmp_path / "report.html"
    build_report([page, page], [], settings(), out)
    html = out.read_text()
    assert html.count("href='#t") == 1 and html.count("<section id='t") == 1
