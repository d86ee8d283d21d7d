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
