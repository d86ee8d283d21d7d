"""Score matrices and their averages, worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.render import matrix_html
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import Matrix, model_average, score_matrix, turn_taking_matrix


def _runs(*convs, **kw):
    return build_runs(frame(*convs), settings(**kw))


def test_t1_1_cells_and_row_average():
    # x vs y: x's adherence in two runs (yes, no) -> 0.5; y's (partly, partly) -> 1.0.
    # x vs x (self-play): both sides are x: yes, yes, no, yes -> 0.75.
    runs = _runs(
        conv("c1", "T1-1", "x", "y", a={"role_adherence": "yes"}, b={"role_adherence": "partly"}),
        conv("c2", "T1-1", "y", "x", a={"role_adherence": "partly"}, b={"role_adherence": "no"}),
        conv("c3", "T1-1", "x", "x", a={"role_adherence": "yes"}, b={"role_adherence": "yes"}),
        conv("c4", "T1-1", "x", "x", a={"role_adherence": "no"}, b={"role_adherence": "yes"}),
        models=("x", "y"),
    )
    m = score_matrix(runs, "T1-1", settings(models=("x", "y")))
    assert m.values.loc["x", "y"] == 0.5
    assert m.values.loc["y", "x"] == 1.0
    assert m.values.loc["x", "x"] == 0.75
    assert np.isnan(m.values.loc["y", "y"])
    assert m.n.loc["x", "x"] == 4 and m.n.loc["x", "y"] == 2
    assert m.row_avg["x"] == pytest.approx((0.75 + 0.5) / 2)
    assert m.row_avg["y"] == 1.0  # the empty self-play cell is skipped
    assert m.column_avg is None  # symmetric roles have no bottom row


def test_t3_1_averages_leave_out_the_pinned_self_play():
    # The paper's T3-1 row averages are the means of the cross cells: (.52 + .25) / 2 = .385 for MCPM.
    runs = _runs(
        conv("s", "T3-1", "x", "x", a={"occupancy": 0.9}, b={"occupancy": 0.1}),
        conv("c1", "T3-1", "x", "y", a={"occupancy": 0.52}, b={"occupancy": 0.48}),
        conv("c2", "T3-1", "x", "z", a={"occupancy": 0.25}, b={"occupancy": 0.75}),
    )
    m = score_matrix(runs, "T3-1", settings())
    assert m.values.loc["x", "x"] == 0.5 and ("x", "x") in m.pinned
    assert m.row_avg["x"] == pytest.approx(0.385)
    assert m.values.loc["y", "x"] + m.values.loc["x", "y"] == pytest.approx(1.0)
    assert "(.50)" in matrix_html(m, settings())


def test_asymmetric_bottom_row_averages_the_defender_column():
    # Attacker rows x, y against defender columns x, y: leaks 1/1, 0/2 ... cells chosen by hand.
    runs = _runs(
        conv("a1", "T4-2", "x", "x", a={"leak": 1}), conv("a2", "T4-2", "x", "y", a={"leak": 0}),
        conv("a3", "T4-2", "x", "y", a={"leak": 1}), conv("a4", "T4-2", "y", "x", a={"leak": 0}),
        conv("a5", "T4-2", "y", "y", a={"leak": 0}),
        models=("x", "y"),
    )
    m = score_matrix(runs, "T4-2", settings(models=("x", "y")))
    assert m.values.loc["x", "x"] == 1.0 and m.values.loc["x", "y"] == 0.5
    assert m.values.loc["y", "x"] == 0.0 and m.values.loc["y", "y"] == 0.0
    assert m.column_label == "defender avg"
    assert m.column_avg["x"] == 0.5 and m.column_avg["y"] == 0.25
    assert m.row_avg["x"] == 0.75


def test_decided_only_tables_report_n_of_runs():
    runs = _runs(
        conv("k1", "T4-3", "x", "y", a={"decided": 1, "won": 1}),
        conv("k2", "T4-3", "x", "y", a={"decided": 1, "won": 0}),
        conv("k3", "T4-3", "x", "y", a={"decided": 0, "won": 0}),
        models=("x", "y"),
    )
    m = score_matrix(runs, "T4-3", settings(models=("x", "y")))
    assert m.values.loc["x", "y"] == 0.5
    assert m.n.loc["x", "y"] == 2 and m.runs.loc["x", "y"] == 3
    back = Matrix.from_frame(m.to_frame())
    assert back.values.loc["x", "y"] == 0.5 and back.runs.loc["x", "y"] == 3 and back.column_label == "payer avg"


def test_turn_taking_averages_tasks_with_equal_weight():
    # x against y: T1-1 has three runs at 0.2, T2 one run at 0.8. Pooled would be 0.35; equal task weight is 0.5.
    runs = _runs(
        conv("t1", "T1-1", "x", "y", a={"tor_pause": 0.2}), conv("t2", "T1-1", "x", "y", a={"tor_pause": 0.2}),
        conv("t3", "T1-1", "x", "y", a={"tor_pause": 0.2}), conv("t4", "T2", "x", "y", a={"tor_pause": 0.8}),
        models=("x", "y"),
    )
    m = turn_taking_matrix(runs, "tor_pause", settings(models=("x", "y")))
    assert m.values.loc["x", "y"] == pytest.approx(0.5)
    assert m.n.loc["x", "y"] == 4


def test_model_average_weights_partners_equally():
    runs = _runs(
        conv("c1", "T4-2", "x", "y", a={"leak": 1}), conv("c2", "T4-2", "x", "y", a={"leak": 1}),
        conv("c3", "T4-2", "x", "y", a={"leak": 1}), conv("c4", "T4-2", "x", "z", a={"leak": 0}),
    )
    assert model_average(runs, "T4-2")["x"] == pytest.approx(0.5)
