"""Action x success, time windows and game balance (section 5), worked out by hand."""

from __future__ import annotations

import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.action_success import action_success_table
from dyafdb.analysis.balance import balance_table
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.windows import windows_table


def test_action_success_split_per_pairing_and_model():
    # T3-2, presser x: against y asked 3 of 4, granted 1 of those 3; against z asked 1 of 2, granted 1.
    convs = []
    for i, (asked, granted) in enumerate([(1, 1), (1, 0), (1, 0), (0, 0)]):
        convs.append(conv(f"y{i}", "T3-2", "x", "y", a={"asked": asked, "agreement": granted, "occupancy": 0.5}))
    for i, (asked, granted) in enumerate([(1, 1), (0, 0)]):
        convs.append(conv(f"z{i}", "T3-2", "x", "z", a={"asked": asked, "agreement": granted, "occupancy": 0.5}))
    runs = build_runs(frame(*convs), settings())
    t = action_success_table(runs, settings()).set_index(["task", "model", "partner"])
    assert t.loc[("T3-2", "x", "y"), "p_action"] == 0.75
    assert t.loc[("T3-2", "x", "y"), "p_success_given_action"] == pytest.approx(1 / 3)
    assert t.loc[("T3-2", "x", "y"), "p_action_and_success"] == 0.25
    assert "p_success" not in t.columns  # the joint rate is named for what it is
    avg = t.loc[("T3-2", "x", "avg")]
    assert avg["p_action"] == pytest.approx((0.75 + 0.5) / 2)
    assert avg["p_success_given_action"] == pytest.approx((1 / 3 + 1.0) / 2)
    assert avg["runs"] == 6 and avg["pairings_with_action"] == 2


def test_t2_decided_and_solved():
    convs = [conv("a", "T2", "x", "y", a={"decided": 1, "solved": 1}), conv("b", "T2", "x", "y", a={"decided": 1, "solved": 0}),
             conv("c", "T2", "x", "y", a={"decided": 0, "solved": 0}), conv("d", "T2", "x", "y", a={"decided": 0, "solved": 0})]
    runs = build_runs(frame(*convs), settings())
    t = action_success_table(runs, settings()).set_index(["task", "model", "partner"])
    # both perspectives of the team see the same numbers
    for m, p in (("x", "y"), ("y", "x")):
        assert t.loc[("T2", m, p), "p_action"] == 0.5
        assert t.loc[("T2", m, p), "p_success_given_action"] == 0.5


def test_windows_means_and_intervals():
    convs = []
    for window, leaks in ((30.0, [0, 0, 0, 1]), (60.0, [1, 1, 0, 1])):
        for i, leak in enumerate(leaks):
            convs.append(conv(f"w{window:g}-{i}", "T4-2", "x", "y", a={"leak": leak, "asked": 1}, window=window))
    runs = build_runs(frame(*convs), settings())
    t = windows_table(runs, settings(bootstrap=200))
    ext = t[(t["measure"] == "t4_2_extracted") & (t["model"] == "x")].set_index("window_s")
    assert ext.loc[30.0, "mean"] == 0.25 and ext.loc[60.0, "mean"] == 0.75
    assert ext.loc[30.0, "lower"] <= 0.25 <= ext.loc[30.0, "upper"]
    assert 0.0 <= ext.loc[60.0, "lower"] and ext.loc[60.0, "upper"] <= 1.0
    only60 = windows_table(runs, settings(bootstrap=0, windows_s=[60.0, 120.0]))
    assert set(only60["window_s"]) == {60.0} and only60["lower"].isna().all()


def test_balance_by_hand_and_the_advantaged_side():
    # T4-2 attacker wins (leaks): x vs y 0/2, y vs x 1/2, x vs x 0/2, y vs y 0/2 -> cells 0, .5, 0, 0: mean .125
    convs = []
    for (ma, mb), leaks in {("x", "y"): [0, 0], ("y", "x"): [1, 0], ("x", "x"): [0, 0], ("y", "y"): [0, 0]}.items():
        for i, leak in enumerate(leaks):
            convs.append(conv(f"{ma}{mb}{i}", "T4-2", ma, mb, a={"leak": leak}))
    # T4-4 seller's share among deals: one cell, .8 and .6 -> .7; the no-deal run is left out
    convs += [conv("n1", "T4-4", "x", "y", a={"deal": 1, "gap_share": 0.8}), conv("n2", "T4-4", "x", "y", a={"deal": 1, "gap_share": 0.6}),
              conv("n3", "T4-4", "x", "y", a={"deal": 0})]
    runs = build_runs(frame(*convs), settings(models=("x", "y")))
    t = balance_table(runs, settings(models=("x", "y"), bootstrap=300))
    game = t[t["row"] == "game"].set_index("game")
    assert game.loc["T4-2", "value"] == pytest.approx(0.125)
    assert game.loc["T4-2", "advantaged"] == "defender"  # all resampled means stay below .5
    assert game.loc["T4-4", "value"] == pytest.approx(0.7)
    assert game.loc["T4-4", "deal_rate"] == pytest.approx(2 / 3)
    per = t[(t["game"] == "T4-2") & (t["row"] != "game")].set_index(["row", "model"])
    assert per.loc[("as_side_a", "y"), "value"] == pytest.approx(0.25)  # y attacking: cells .5 and 0
    # x defending: leaks .5 and 0 against it; value is side a's share on every row, as the title says
    assert per.loc[("as_side_b", "x"), "value"] == pytest.approx(0.25)
    assert per.loc[("as_side_b", "x"), "model_share"] == pytest.approx(1 - 0.25)
    assert game.loc["T4-2", "model_spread"] == pytest.approx(0.25)


def test_t3_2_success_is_one_number_in_every_table():
    # An invalid agreement answer (empty) is left out everywhere, never counted as a failure; a
    # grant the judge saw without the ask still counts as success.
    convs = [conv("s1", "T3-2", "x", "y", a={"asked": 1, "agreement": 1, "occupancy": 0.5}),
             conv("s2", "T3-2", "x", "y", a={"asked": 1, "agreement": ("", "invalid"), "occupancy": 0.5}),
             conv("s3", "T3-2", "x", "y", a={"asked": 0, "agreement": 1, "occupancy": 0.5}),
             conv("s4", "T3-2", "x", "y", a={"asked": 1, "agreement": 0, "occupancy": 0.5})]
    runs = build_runs(frame(*convs), settings(models=("x", "y")))
    acts = action_success_table(runs, settings(models=("x", "y"))).set_index(["task", "model", "partner"])
    game = balance_table(runs, settings(models=("x", "y"))).set_index(["game", "row", "model"])
    rate = acts.loc[("T3-2", "x", "y"), "success_rate"]
    assert rate == pytest.approx(2 / 3)
    assert game.loc[("T3-2", "game", "all"), "value"] == pytest.approx(rate)
    assert acts.loc[("T3-2", "x", "y"), "p_action_and_success"] == pytest.approx(1 / 3)
    assert acts.loc[("T3-2", "x", "y"), "p_success_given_action"] == pytest.approx(1 / 2)
    # one name for the outcome in both tables
    assert acts.loc[("T3-2", "x", "y"), "success"] == game.loc[("T3-2", "game", "all"), "outcome"] == "agreement"


def test_figure_6_draws_the_balance_table_as_it_is():
    from dyafdb.analysis.figures import balance_points

    convs = []
    for (ma, mb), leaks in {("x", "y"): [0, 0], ("y", "x"): [1, 0]}.items():
        for i, leak in enumerate(leaks):
            convs.append(conv(f"{ma}{mb}{i}", "T4-2", ma, mb, a={"leak": leak}))
    s = settings(models=("x", "y"))
    t = balance_table(build_runs(frame(*convs), s), s)
    points = balance_points(t, "T4-2", s).set_index("label")["value"]
    rows = t[t["game"] == "T4-2"]
    for _, r in rows[rows["row"] != "game"].iterrows():
        role = r["side_a"] if r["row"] == "as_side_a" else r["side_b"]
        assert points[f"{r['model']} as {role}"] == pytest.approx(r["value"])
    assert points["x as defender"] == pytest.approx(0.5)  # y leaked once in two against x


def test_table_9_reads_the_same_t3_2_success_as_the_other_tables():
    from dyafdb.analysis.tables import TABLE9, table9

    convs = [conv("s1", "T3-2", "x", "y", a={"asked": 1, "agreement": 1, "occupancy": 0.5}),
             conv("s2", "T3-2", "x", "y", a={"asked": 1, "agreement": 0, "occupancy": 0.5}),
             conv("s3", "T3-2", "x", "z", a={"asked": 0, "agreement": 0, "occupancy": 0.5}),
             conv("s4", "T3-2", "x", "z", a={"asked": 1, "agreement": ("", "invalid"), "occupancy": 0.5})]
    s = settings()
    runs = build_runs(frame(*convs), s)
    column = next(col for col, task, _ in TABLE9 if task == "T3-2")
    assert column == "T3-2 agreement"  # named as action x success and the game balance name it
    t9 = table9(runs, None, s, {}).set_index("model")
    acts = action_success_table(runs, s).set_index(["task", "model", "partner"])
    side_a = balance_table(runs, s).set_index(["game", "row", "model"])
    assert t9.loc["x", column] == pytest.approx(acts.loc[("T3-2", "x", "avg"), "success_rate"])
    assert t9.loc["x", column] == pytest.approx(side_a.loc[("T3-2", "as_side_a", "x"), "value"]) == pytest.approx(0.25)
