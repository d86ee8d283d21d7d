"""Rating a new model against the reference set: battles, Bradley-Terry, anchoring, additive effects."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.rating import battles, rank_by_separation, rating_tables
from dyafdb.analysis.runs import build_runs


def test_battle_outcomes_from_runs():
    convs = [
        conv("a", "T3-1", "x", "y", a={"occupancy": 0.6}, b={"occupancy": 0.4}),
        conv("b", "T3-1", "x", "y", a={"occupancy": 0.5}, b={"occupancy": 0.5}),
        conv("c", "T4-1", "x", "y", a={"decided": 0, "won": 0}, b={"decided": 0, "won": 0}),
        conv("d", "T4-1", "x", "y", a={"decided": 1, "won": 0}, b={"decided": 1, "won": 1}),
        conv("e", "T4-2", "x", "y", a={"leak": 1}),
        conv("f", "T4-4", "x", "y", a={"deal": 1, "gap_share": 0.3}),
        conv("g", "T4-4", "x", "y", a={"deal": 0}),
        conv("h", "T4-2", "x", "x", a={"leak": 1}),  # self-play: no battle
    ]
    b = battles(build_runs(frame(*convs), settings()), ["T3-1", "T4-1", "T4-2", "T4-4"])
    got = dict(zip(b.index.map(lambda i: i), b["outcome"]))
    assert list(b["outcome"]) == [1.0, 0.5, 0.5, 0.0, 1.0, 0.0, 0.5]
    assert len(got) == 7


def _t42(ma, mb, leaks, start):
    """Runs with these outcomes; openers alternate within each outcome, so the opener is balanced."""
    out, seen = [], {0: 0, 1: 0}
    for i, leak in enumerate(leaks):
        out.append(conv(f"{ma}-{mb}-{start + i}", "T4-2", ma, mb, a={"leak": leak}, opener="ab"[seen[int(leak)] % 2]))
        seen[int(leak)] += 1
    return out


def test_bradley_terry_by_hand_and_anchored():
    # x beats y in 16 of 20 battles on either side, openers balanced: theta_x - theta_y = ln 4,
    # i.e. 400 * log10(4) = 240.8 rating points; side and opener advantages are 0 by symmetry.
    convs = _t42("x", "y", [1] * 16 + [0] * 4, 0) + _t42("y", "x", [1] * 4 + [0] * 16, 100)
    runs = build_runs(frame(*convs), settings(models=("x", "y")))
    st = settings(models=("x", "y"), contested=["T4-2"], anchor_rating=1000.0, rating_scale=400.0)
    board, _ = rating_tables(runs, st)
    r = board.set_index("model")["rating"]
    assert r["x"] == 1000.0
    assert r["x"] - r["y"] == pytest.approx(400 * math.log10(4), abs=0.5)


def test_adding_a_model_does_not_move_the_references():
    rng = np.random.default_rng(1)
    convs = []
    strength = {"x": 0.0, "y": -0.5, "z": 0.7}
    for k, (ma, mb) in enumerate(itertools.permutations(["x", "y"], 2)):
        p = 1 / (1 + math.exp(-(strength[ma] - strength[mb])))
        convs += _t42(ma, mb, list((rng.random(40) < p).astype(int)), 1000 * k)
    base = build_runs(frame(*convs), settings(models=("x", "y")))
    st = settings(models=("x", "y", "z"), reference_models=["x", "y"], contested=["T4-2"], bootstrap=40)
    before, _ = rating_tables(base, st)
    more = list(convs)
    for k, (ma, mb) in enumerate([("z", "x"), ("x", "z"), ("z", "y"), ("y", "z")]):
        p = 1 / (1 + math.exp(-(strength[ma] - strength[mb])))
        more += _t42(ma, mb, list((rng.random(40) < p).astype(int)), 5000 + 1000 * k)
    after, _ = rating_tables(build_runs(frame(*more), settings(models=("x", "y", "z"))), st)
    b, a = before.set_index("model"), after.set_index("model")
    for m in ("x", "y"):
        assert a.loc[m, "rating"] == pytest.approx(b.loc[m, "rating"])
        assert a.loc[m, "lower"] == pytest.approx(b.loc[m, "lower"], nan_ok=True)  # the anchor has none
    assert not a.loc["z", "reference"] and a.loc["z", "battles"] == 160
    assert a.loc["z", "lower"] <= a.loc["z", "rating"] <= a.loc["z", "upper"]
    assert a.loc["z", "rating"] > a.loc["y", "rating"]


def test_rank_counts_only_clearly_separated_models():
    lower = np.array([1100, 1050, 900, 700])
    upper = np.array([1200, 1150, 1000, 800])
    # model 0: nobody's lower bound is above 1200 -> 1; model 1: 1100 > 1150? no -> 1;
    # model 2: 1100 and 1050 are above 1000 -> 3; model 3: 1100, 1050, 900 above 800 -> 4
    assert list(rank_by_separation(lower, upper)) == [1, 1, 3, 4]


def test_additive_effects_exact_on_noiseless_scores_and_for_a_new_model():
    own = {"x": 0.0, "y": 0.2, "z": -0.1, "w": 0.3}
    partner = {"x": 0.0, "y": -0.15, "z": 0.05, "w": 0.1}
    mu = 0.4
    # T3-2 scores the presser's occupancy: one run per ordered pairing, each exactly mu + own + partner
    convs = []
    for k, (ma, mb) in enumerate(itertools.product(own, repeat=2)):
        score = mu + own[ma] + partner[mb]
        convs.append(conv(f"o{k}", "T3-2", ma, mb, a={"occupancy": score}, b={"occupancy": 1 - score}))
    runs = build_runs(frame(*convs), settings(models=("x", "y", "z", "w")))
    st = settings(models=("x", "y", "z", "w"), reference_models=["x", "y", "z"], anchor_model="x", contested=[], bootstrap=20)
    _, effects = rating_tables(runs, st)
    e = effects[effects["task"] == "T3-2"].set_index("model")
    for m in own:
        assert e.loc[m, "own"] == pytest.approx(own[m], abs=1e-9)
        assert e.loc[m, "partner"] == pytest.approx(partner[m], abs=1e-9)
    assert e.loc["x", "anchor"] and not e.loc["w", "reference"]
    assert e.loc["y", "mu"] == pytest.approx(mu)


def test_the_board_counts_decisive_battles_and_ties_marks_the_anchor_and_rounds():
    convs = [conv(f"w{i}", "T4-2", "x", "y", a={"leak": 1}, opener="ab"[i % 2]) for i in range(4)]
    convs += [conv(f"l{i}", "T4-2", "y", "x", a={"leak": 0}, opener="ab"[i % 2]) for i in range(2)]
    convs += [conv(f"t{i}", "T4-1", "x", "y", a={"decided": 0, "won": 0}, b={"decided": 0, "won": 0}) for i in range(4)]
    st = settings(models=("x", "y"), bootstrap=50)
    board, effects = rating_tables(build_runs(frame(*convs), st), st)
    row = board.set_index("model")
    assert row.loc["x", "battles"] == 10 and row.loc["x", "ties"] == 4 and row.loc["x", "decisive"] == 6
    # the anchor is pinned: no interval pretends to measure it
    assert bool(row.loc["x", "anchor"]) and math.isnan(row.loc["x", "lower"]) and math.isnan(row.loc["x", "upper"])
    assert row.loc["y", "rating"] == round(row.loc["y", "rating"], 1)
    assert all(s.startswith(("separable", "not separable from")) for s in board["separable"])


def test_models_whose_intervals_overlap_are_not_separable():
    from dyafdb.analysis.rating import separability

    got = separability(["x", "y", "z"], np.array([1000, 990, 800]), np.array([1000, 1100, 850]))
    assert got == ["not separable from y", "not separable from x", "separable"]
