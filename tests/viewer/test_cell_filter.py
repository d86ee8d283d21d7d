"""A report's matrix cell links to the viewer index filtered to its conversations (assets/cellfilter.js),
checked with node against the cell's own runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources
from urllib.parse import urlsplit

import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.render import cell_href, matrix_html
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import score_matrix, turn_taking_matrix

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node to run the index's filter script")

ROWS = [  # index rows as summary.index_row writes them (only the fields the filter reads)
    {"id": "c1", "archetype": "T4-2", "model_a": "x", "model_b": "y", "window_s": 60.0},
    {"id": "c2", "archetype": "T4-2", "model_a": "y", "model_b": "x", "window_s": 60.0},
    {"id": "c3", "archetype": "T4-2", "model_a": "x", "model_b": "y", "window_s": 30.0},
    {"id": "c4", "archetype": "T1-1", "model_a": "y", "model_b": "x", "window_s": 60.0},
]


def _visible(href: str) -> list[str]:
    script = resources.files("dyafdb.viewer").joinpath("assets/cellfilter.js").read_text(encoding="utf-8")
    code = (script + f"\nvar c = DYAFDB_CELL.parse({json.dumps(urlsplit(href).fragment)});"
            f"\nconsole.log(JSON.stringify({json.dumps(ROWS)}.filter(function (r) {{ return DYAFDB_CELL.matches(r, c); }})"
            ".map(function (r) { return r.id; })));")
    done = subprocess.run([NODE, "-e", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_a_task_cell_links_to_exactly_its_conversations():
    runs = build_runs(frame(conv("c1", "T4-2", "x", "y", a={"leak": 1}), conv("c2", "T4-2", "y", "x", a={"leak": 0}),
                            conv("c4", "T1-1", "y", "x", a={"in_role": 1})), settings(models=("x", "y")))
    m = score_matrix(runs, "T4-2", settings(models=("x", "y")))
    href = cell_href("../../site/index.html", m.filters, "x", "y")
    assert _visible(href) == ["c1"]  # x attacking y at the main window; not y attacking x, not 30 s, not T1-1
    assert "href='../../site/index.html#" in matrix_html(m, settings(models=("x", "y")), index="../../site/index.html")


def test_a_turn_taking_cell_takes_either_side_in_its_tasks():
    runs = build_runs(frame(conv("c1", "T4-2", "x", "y", a={"tor_end": 1}, b={"tor_end": 0}),
                            conv("c4", "T1-1", "y", "x", a={"tor_end": 1}, b={"tor_end": 0})), settings(models=("x", "y")))
    m = turn_taking_matrix(runs, "tor_end", settings(models=("x", "y")))
    assert _visible(cell_href("index.html", m.filters, "x", "y")) == ["c1", "c2", "c4"]


def test_the_viewer_index_links_back_to_the_report():
    from dyafdb.viewer.pages import index_page

    page = index_page({"conversations": 1, "archetypes": 1, "pairings": 1}, False, report_href="../analysis/report.html")
    assert 'href="../analysis/report.html"' in page and 'id="cell-filter"' in page and "assets/cellfilter.js" in page
