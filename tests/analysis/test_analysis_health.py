"""Audio-health tables: per-pairing matrices, per-model averages, the variance rows, the report title."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis import columns as C
from dyafdb.analysis.health import health_matrix, health_models, health_models_wide
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.variance import variance_table
from dyafdb.errors import InputError

MODELS = ("x", "y", "z")
OWN = {"x": 4.0, "y": 3.0, "z": 2.0}  # DNSMOS OVRL is the model's own
HURT = {"x": 0.0, "y": 0.0, "z": -1.0}  # ... except that z as a partner lowers it by one point
ECHOES = {"z"}


def _measures() -> pd.DataFrame:
    convs = []
    for task in ("T1-1", "T3-1"):
        for ma in MODELS:
            for mb in MODELS:
                def side(m, p, rep):
                    return {"dnsmos_ovrl": OWN[m] + HURT[p], "echo": 0.9 if m in ECHOES else 0.05,
                            "echo_flag": int(m in ECHOES), "no_response": 0.5 if m == "y" else 0.0,
                            "text_wer": None if m == "x" else 0.2, "tor_end": 0.5}
                for rep in (1, 2):
                    convs.append(conv(f"{task}-{ma}-{mb}-{rep}", task, ma, mb, side(ma, mb, rep), side(mb, ma, rep),
                                      rep=rep))
    return frame(*convs)


def test_health_matrix_cells_and_model_averages():
    runs = build_runs(_measures(), settings(MODELS), judge=None)
    m = health_matrix(runs, "dnsmos_ovrl", settings(MODELS))
    assert m.values.loc["x", "y"] == pytest.approx(4.0) and m.values.loc["x", "z"] == pytest.approx(3.0)
    assert m.row_avg["x"] == pytest.approx((4 + 4 + 3) / 3)  # each partner weighs the same
    assert m.column_avg["z"] == pytest.approx((3 + 2 + 1) / 3)  # what z's partners sound like against it
    assert int(m.n.loc["x", "y"]) == 2 * 2 * 2  # archetypes x repetitions x (x on side a, x on side b)
    empty = health_matrix(runs, "text_wer", settings(MODELS))
    assert np.isnan(empty.values.loc["x", "y"]) and empty.values.loc["y", "x"] == pytest.approx(0.2)
    with pytest.raises(InputError, match="audio-health measure"):
        health_matrix(runs, "tor_end", settings(MODELS))


def test_health_models_table_and_wide_page():
    runs = build_runs(_measures(), settings(MODELS), judge=None)
    table = health_models(runs, settings(MODELS))
    row = table[(table["measure"] == "echo_flag") & (table["model"] == "z")].iloc[0]
    assert row["own"] == 1.0 and row["as_partner"] == pytest.approx(1 / 3) and row["self_play"] == 1.0
    nr = table[(table["measure"] == "no_response")].set_index("model")["own"]
    assert nr.to_dict() == {"x": 0.0, "y": 0.5, "z": 0.0}
    wide = health_models_wide(table, settings(MODELS))
    assert list(wide["model"]) == list(MODELS) and C.HEALTH_LABELS["dnsmos_ovrl"] in wide.columns


def test_variance_says_quality_is_the_model_and_the_partner_hurts():
    runs = build_runs(_measures(), settings(MODELS), judge=None)
    table = variance_table(runs, settings(MODELS))
    ovrl = table[(table["measure"] == "dnsmos_ovrl") & (table["kind"] == "health") & (table["variant"] == "all")]
    eta = ovrl.set_index("term")["eta2"]
    # cells = OWN[m] + HURT[p]: model effects 1, 0, -1 (variance 2/3), partner effects 1/3, 1/3, -2/3 (2/9)
    assert eta["model"] == pytest.approx(0.75) and eta["partner"] == pytest.approx(0.25)
    assert eta["model_x_partner"] == pytest.approx(0.0, abs=1e-12) and eta["task"] == pytest.approx(0.0, abs=1e-12)


def test_health_figure_titles_and_report_titles():
    from dyafdb.analysis.report import _title

    assert _title("health_dnsmos_ovrl") == "Audio health: DNSMOS OVRL"
    assert _title("health_models") == "Audio health per model"
