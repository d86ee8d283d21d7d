"""n and 95% intervals on every number read as a result beyond the score matrices (issue 26, item 2):
turn-taking and audio-health cells, profile lines; and every table states beside itself its n and
the answers it left out and why."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import synthetic_analysis as S
from analysis_helpers import settings as make_settings
from dyafdb.analysis import columns as C
from dyafdb.analysis import products as P
from dyafdb.analysis.render import interval_text, matrix_html
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import Matrix, score_matrix, turn_taking_matrix

MODELS = ("alpha", "beta")
TASKS = (*C.MAIN_TASKS, "T4-3", "T4-4")


def _measures() -> pd.DataFrame:
    m = S.measures(S.Spec(models=MODELS, tasks=TASKS, scenarios=3, judges=("judge-main",)))
    m[C.CHECK] = ""
    m[C.QUALITY] = ""
    # two T1-1 answers contradicted (adherence "yes" with a deviation time): left out by the default policy
    t11 = m[(m[C.ARCHETYPE] == "T1-1") & (m[C.MEASURE] == C.ROLE_ADHERENCE)]
    for cid in t11[C.CONVERSATION].unique()[:2]:
        rows = (m[C.CONVERSATION] == cid) & (m[C.SIDE] == "a") & (m[C.JUDGE] == "judge-main")
        m.loc[rows & m[C.MEASURE].isin([C.ROLE_ADHERENCE, C.IN_ROLE, C.ROLE_ENTRY, C.ROLE_EXIT]), C.CHECK] = \
            "role adherence yes with a deviation time"
    from dyafdb.analysis.io import normalise_measures

    return normalise_measures(m.astype(str))


@pytest.fixture(scope="module")
def runs():
    st = make_settings(models=MODELS, bootstrap=200)
    return build_runs(_measures(), st), st


def test_turn_taking_and_health_cells_carry_n_and_an_interval(runs):
    from dyafdb.analysis.health import health_matrix

    table, st = runs
    for m in (turn_taking_matrix(table, C.TOR_PAUSE, st), health_matrix(table.assign(**{C.HEALTH[0]: table[C.TOR_PAUSE]}), C.HEALTH[0], st)):
        assert m.lower is not None and m.avg_lower is not None, m.name
        v, lo, hi = (x.loc["alpha", "beta"] for x in (m.values, m.lower, m.upper))
        assert lo <= v <= hi and lo < hi
        back = Matrix.from_frame(m.to_frame())
        assert back.upper.loc["alpha", "beta"] == hi
        page = matrix_html(m, st)
        assert interval_text(lo, hi) in page and f"n={int(m.n.loc['alpha', 'beta'])}" in page
    # the per-model health table prints each average with the matrix's own row interval and n
    from dyafdb.analysis.health import health_models, health_models_wide

    with_health = table.assign(**{h: table[C.TOR_PAUSE] for h in C.HEALTH})
    per_model = health_models(with_health, st)
    wide = health_models_wide(per_model, st).set_index("model")
    hm = health_matrix(with_health, C.HEALTH[0], st)
    cell = wide.loc[st.label("alpha"), C.HEALTH_LABELS[C.HEALTH[0]]]
    assert interval_text(hm.avg_lower["alpha"], hm.avg_upper["alpha"]) in cell and f"n={int(hm.n.loc['alpha'].sum())}" in cell


def test_profile_lines_carry_n_and_the_interval_of_the_matrix_they_read(runs):
    from dyafdb.analysis.profiles import profiles_table, profiles_wide

    table, st = runs
    prof = profiles_table(table, st).set_index(["model", "key"])
    t11 = score_matrix(table, "T1-1", st)
    # one number in two places, from one function: the profile's line is the matrix's row average
    assert prof.loc[("alpha", "holds_role"), "value"] == t11.row_avg["alpha"]
    assert prof.loc[("alpha", "holds_role"), "lower"] == t11.avg_lower["alpha"]
    assert prof.loc[("alpha", "holds_role"), "upper"] == t11.avg_upper["alpha"]
    assert prof.loc[("alpha", "holds_role"), "n"] == int(t11.n.loc["alpha"].sum())
    for key in ("digressing", "decides", "decides_right", "takes_floor", "yields_floor", "presses", "prevails",
                "extracts", "leaks", "drifts", "enters_role", C.TOR_PAUSE):
        row = prof.loc[("alpha", key)]
        assert row["n"] > 0, key
        if np.isfinite(row["value"]):
            assert np.isfinite(row["lower"]) and np.isfinite(row["upper"]), key
    wide = profiles_wide(prof.reset_index(), st).set_index("question")
    cell = wide.loc[prof.loc[("alpha", "holds_role"), "question"], "Alpha" if "Alpha" in wide.columns else "alpha"]
    assert interval_text(t11.avg_lower["alpha"], t11.avg_upper["alpha"]) in cell and f"n={prof.loc[('alpha', 'holds_role'), 'n']}" in cell


READS_T1 = ("timing", "windows", "profiles", "variance")
PRODUCTS = ("timing", "action-success", "windows", "balance", "profiles", "rating", "variance", "health-models")


@pytest.mark.parametrize("product", PRODUCTS)
def test_every_table_states_its_n_and_the_answers_it_left_out(runs, product, tmp_path: Path):
    table, st = runs
    st.windows_s = [60.0]
    health = {h: table[C.TOR_PAUSE] for h in C.HEALTH}
    table = table.assign(**health)
    html = tmp_path / "t.html"
    given = {"curves": tmp_path / "curves.tsv", "effects": tmp_path / "effects.tsv"}
    P._call_run_product(product, table, st, tmp_path / "t.tsv", html, given)
    text = html.read_text()
    assert "n = " in text, product
    if product in READS_T1:
        # two seats, each with two questions (adherence, role timing) whose rows carry the check
        assert "4 left out (role adherence yes with a deviation time 4)" in text, product
    elif product == "health-models":
        assert "no judge answer enters, none left out" in text
    else:  # tables of tasks without a left-out answer say so, with their count of answers
        assert re.search(r"\d+ judge answers; 0 left out", text), product
