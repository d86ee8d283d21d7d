"""Per-model profiles: each answer follows its stated rule from the rate it is read from."""

from __future__ import annotations

import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.profiles import bands, profiles_table, profiles_wide
from dyafdb.analysis.runs import build_runs


def test_bands_rule_and_edges():
    answer, rule = bands(0.4, 0.6, "rarely", "about half the time", "mostly")
    assert (answer(0.39), answer(0.4), answer(0.59), answer(0.6)) == ("rarely", "about half the time", "about half the time", "mostly")
    assert rule == "< 0.4: rarely; 0.4-0.6: about half the time; >= 0.6: mostly"


def test_profiles_from_hand_built_runs():
    convs = [
        # T1-1: x holds its role in 2 of 2 runs against y (1.0); y in 1 of 2 (0.5)
        conv("a1", "T1-1", "x", "y", a={"role_adherence": "yes", "role_entry_s": 5, "role_deviation_s": ("", "none")},
             b={"role_adherence": "no", "role_entry_s": ("", "none"), "role_deviation_s": ("", "none")}),
        conv("a2", "T1-1", "y", "x", a={"role_adherence": "partly", "role_entry_s": 30, "role_deviation_s": 50},
             b={"role_adherence": "yes", "role_entry_s": 8, "role_deviation_s": ("", "none")}),
        # T1-2: x keeps its role (1.0), y loses it (0.0): change +0 and -0.5
        conv("b1", "T1-2", "x", "y", a={"role_adherence": "yes"}), conv("b2", "T1-2", "y", "x", a={"role_adherence": "no"}),
        # T3-1: x takes 0.7 of the floor against y
        conv("c1", "T3-1", "x", "y", a={"occupancy": 0.7, "tor_pause": 0.6}, b={"occupancy": 0.3, "tor_pause": 0.1}),
        # T4-2: x extracts from y, y extracts nothing from x
        conv("d1", "T4-2", "x", "y", a={"leak": 1, "asked": 1}), conv("d2", "T4-2", "y", "x", a={"leak": 0, "asked": 1}),
    ]
    st = settings(models=("x", "y"))
    table = profiles_table(build_runs(frame(*convs), st), st).set_index(["model", "key"])
    assert table.loc[("x", "holds_role"), "answer"] == "mostly"
    assert table.loc[("y", "holds_role"), "answer"] == "about half the time"
    assert table.loc[("y", "digressing"), "value"] == pytest.approx(-0.5)
    assert table.loc[("y", "digressing"), "answer"] == "loses its role"
    assert table.loc[("x", "digressing"), "answer"] == "unchanged"
    assert table.loc[("x", "takes_floor"), "answer"] == "takes it" and table.loc[("y", "takes_floor"), "answer"] == "gives way"
    assert table.loc[("x", "extracts"), "answer"] == "often" and table.loc[("y", "leaks"), "answer"] == "often"
    assert table.loc[("x", "leaks"), "answer"] == "rarely"
    assert table.loc[("x", "enters_role"), "answer"] == "quickly"  # entries at 5 and 8 s: median 5
    # y entered once in two runs, at 30 s (the other run is censored at 60): S(30) = .5, median 30 s
    assert table.loc[("y", "enters_role"), "value"] == 30.0 and table.loc[("y", "enters_role"), "answer"] == "slowly"
    assert table.loc[("x", "tor_pause"), "answer"] == "most of the models"
    assert "rule" in profiles_wide(table.reset_index(), st).columns


# Each a suite the paper's grid never is: one archetype, no judged action, no judged entry, one model.
PARTIAL_SUITES = {
    "T1-1 only (issue 25)": [conv("a1", "T1-1", "x", "y", a={"role_adherence": "yes"}, b={"role_adherence": "no"}),
                             conv("a2", "T1-1", "y", "x", a={"role_adherence": "yes"}, b={"role_adherence": "yes"})],
    "T4-3 only": [conv("g1", "T4-3", "x", "y", a={"decided": 1, "success": 1}),
                  conv("g2", "T4-3", "y", "x", a={"decided": 0})],
    "T2 only, self-play of one model": [conv("p1", "T2", "x", "x", a={"decided": 1, "success": 0})],
    "T3-1 only": [conv("f1", "T3-1", "x", "y", a={"occupancy": 0.6}, b={"occupancy": 0.4})],
}


@pytest.mark.parametrize("suite", PARTIAL_SUITES)
def test_profiles_of_a_partial_suite_answer_every_question_without_crashing(suite):
    convs = PARTIAL_SUITES[suite]
    models = tuple(dict.fromkeys(r["model"] for c in convs for r in c))
    st = settings(models=models)
    table = profiles_table(build_runs(frame(*convs), st), st)
    fixed = ("holds_role", "digressing", "drifts", "decides", "decides_right", "takes_floor", "yields_floor", "presses",
             "prevails", "extracts", "leaks", "enters_role")
    for key in fixed:
        assert sorted(table.loc[table["key"] == key, "model"]) == sorted(models), key
    # A question about an archetype the suite does not hold has no value and says so with a dash.
    tasks = {r["archetype"] for c in convs for r in c}
    if "T4-2" not in tasks:
        assert (table.loc[table["key"].isin(["extracts", "leaks"]), "answer"] == "–").all()
    if "T2" not in tasks:
        assert table.loc[table["key"] == "decides", "value"].isna().all()
    assert len(profiles_wide(table, st)) == table["key"].nunique()
