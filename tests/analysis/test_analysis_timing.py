"""Kaplan-Meier role timing and time to leak, checked against hand computation."""

from __future__ import annotations

import numpy as np
import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.timing import kaplan_meier, timing_tables


def test_km_median_by_hand():
    # Events at 2, 4, 6, 8 s: S = .75, .5, .25, 0; the median is the first time S <= .5: 4 s.
    summary, curve = kaplan_meier(np.array([2, 4, 6, 8.0]), np.array([1, 1, 1, 1]), window=60, ci=0.95)
    assert summary["median"] == "4" and summary["median_s"] == 4.0
    assert list(curve["share"]) == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    assert summary["share_by_window"] == 1.0


def test_km_median_where_the_curve_touches_exactly_one_half():
    # Six runs, events at 2, 4, 5 s (one censored at 12): S(5) = 5/6 * 4/5 * 3/4 = 1/2, computed in
    # floating point as a hair above .5. The curve reaches one half at 5 s: that is the median.
    times, events = np.array([12, 5, 4, 12, 13, 2.0]), np.array([1, 1, 1, 0, 1, 1])
    summary, _ = kaplan_meier(times, events, window=60, ci=0.95)
    assert summary["median_s"] == 5.0 and summary["median"] == "5"


def test_pooled_and_per_partner_medians_follow_one_rule():
    # The same exact-one-half curve against two partners: each per-partner row and the pooled row
    # read the median at the same point.
    convs = []
    for partner in ("y", "z"):
        for i, (t, event) in enumerate([(12, 1), (5, 1), (4, 1), (12, 0), (13, 1), (2, 1)]):
            entry = t if event else ("", "none")
            convs.append(conv(f"{partner}{i}", "T1-2", "x", partner, a={"role_entry_s": entry, "role_deviation_s": ("", "none")}))
    runs = build_runs(frame(*convs), settings())
    summary, _ = timing_tables(runs, settings())
    entry = summary[(summary["event"] == "entry") & (summary["model"] == "x")].set_index("partner")
    assert entry.loc["y", "median_s"] == entry.loc["z", "median_s"] == entry.loc["*", "median_s"] == 5.0


def test_km_with_censoring_by_hand_and_not_reached():
    # 10 (event), 60 (censored), 20 (event), 60 (censored): at 10 S = 3/4; at 20 S = 3/4 * 2/3 = 1/2.
    summary, _ = kaplan_meier(np.array([10, 60, 20, 60.0]), np.array([1, 0, 1, 0]), window=60, ci=0.95)
    assert summary["median_s"] == 20.0 and summary["events"] == 2
    assert summary["share_by_window"] == pytest.approx(0.5)
    # one event in four, the rest censored at the window: the median is not reached
    summary, _ = kaplan_meier(np.array([5, 60, 60, 60.0]), np.array([1, 0, 0, 0]), window=60, ci=0.95)
    assert summary["median"] == "n.r." and np.isnan(summary["median_s"])
    assert summary["share_by_window"] == pytest.approx(0.25)


def test_entry_deviation_and_leak_per_pairing():
    convs = [
        conv("e1", "T1-1", "x", "y", a={"role_entry_s": 5, "role_deviation_s": ("", "none")},
             b={"role_entry_s": ("", "none"), "role_deviation_s": ("", "none")}),
        conv("e2", "T1-1", "x", "y", a={"role_entry_s": 15, "role_deviation_s": 40},
             b={"role_entry_s": ("", "none"), "role_deviation_s": ("", "none")}),
        conv("l1", "T4-2", "x", "y", a={"leak": 1, "time_to_leak_s": 12.2}),
        conv("l2", "T4-2", "x", "y", a={"leak": 0, "time_to_leak_s": ""}),
    ]
    runs = build_runs(frame(*convs), settings(models=("x", "y")))
    summary, curves = timing_tables(runs, settings(models=("x", "y")))
    s = summary.set_index(["event", "model", "partner"])
    assert s.loc[("entry", "x", "y"), "median_s"] == 5.0  # S(5) = 1/2
    assert s.loc[("entry", "y", "x"), "median"] == "n.r." and s.loc[("entry", "y", "x"), "events"] == 0
    assert s.loc[("deviation", "x", "y"), "n"] == 2 and s.loc[("deviation", "x", "y"), "share_by_window"] == 0.5
    assert s.loc[("leak", "x", "y"), "median_s"] == 12.2
    assert s.loc[("leak", "*", "y"), "n"] == 2  # pooled per defender
    assert set(curves["event"]) == {"entry", "deviation", "leak"}
