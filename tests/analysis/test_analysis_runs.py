"""Per-run scoring conventions (dyafdb.analysis.runs) on hand-built measures."""

from __future__ import annotations

import numpy as np
import pytest

from analysis_helpers import conv, frame, settings
from conftest import REPO
from dyafdb.analysis.runs import build_runs, resolve_judges
from dyafdb.errors import InputError


def _row(runs, cid, side):
    r = runs[(runs["conversation_id"] == cid) & (runs["side"] == side)]
    assert len(r) == 1
    return r.iloc[0]


def test_role_adherence_counts_yes_and_partly_and_reads_the_rubric_scale():
    m = frame(
        conv("c1", "T1-1", "x", "y", a={"role_adherence": (2, "yes")}, b={"role_adherence": (1, "partly")}),
        conv("c2", "T1-1", "x", "y", a={"role_adherence": (0, "no")}, b={"role_adherence": ("", "invalid")}),
        conv("c3", "T1-2", "x", "y", a={"role_adherence": "yes"}, b={"role_adherence": "no"}),
    )
    runs = build_runs(m, settings())
    assert _row(runs, "c1", "a")["score"] == 1.0
    assert _row(runs, "c1", "b")["score"] == 1.0
    assert _row(runs, "c2", "a")["score"] == 0.0
    assert np.isnan(_row(runs, "c2", "b")["score"])  # an off-label answer is no answer
    assert _row(runs, "c3", "a")["score"] == 1.0
    assert np.isnan(_row(runs, "c3", "b")["score"])  # the digresser is not scored


def test_role_timing_none_is_censored_and_empty_is_unknown():
    m = frame(
        conv("c1", "T1-1", "x", "y", a={"role_entry_s": (12.5, "12.50"), "role_deviation_s": ("", "none")},
             b={"role_entry_s": ("", "none"), "role_deviation_s": ("", "none")}),
        conv("c2", "T1-1", "x", "y", a={"role_entry_s": ("", "invalid")}),
    )
    runs = build_runs(m, settings())
    a, b = _row(runs, "c1", "a"), _row(runs, "c1", "b")
    assert (a["entered"], a["entry_s"], a["exited"]) == (1.0, 12.5, 0.0)
    assert b["entered"] == 0.0 and np.isnan(b["exited"])
    assert np.isnan(_row(runs, "c2", "a")["entered"])


def test_team_score_is_symmetric_and_self_play_counts_once():
    m = frame(
        conv("c1", "T2", "x", "y", a={"decided": 1, "solved": 1}, b={"decided": 1, "solved": 1}),
        conv("c2", "T2", "x", "x", a={"final_choice": ("", "Cedar"), "solved": 0}, b={"solved": 0}),
        conv("c3", "T2", "y", "x", a={"final_choice": ("", "none"), "solved": 0}),
    )
    runs = build_runs(m, settings())
    assert _row(runs, "c1", "a")["score"] == _row(runs, "c1", "b")["score"] == 1.0
    assert _row(runs, "c2", "a")["score"] == 0.0 and np.isnan(_row(runs, "c2", "b")["score"])
    assert _row(runs, "c2", "a")["decided"] == 1.0  # read off the label when no decided row exists
    assert _row(runs, "c3", "b")["decided"] == 0.0  # conversation-level answer copied to side b


def test_t3_1_self_play_is_pinned_and_cross_play_reads_occupancy():
    m = frame(
        conv("c1", "T3-1", "x", "x", a={"occupancy": 0.7}, b={"occupancy": 0.3}),
        conv("c2", "T3-1", "x", "y", a={"occupancy": 0.6}, b={"occupancy": 0.4}),
    )
    runs = build_runs(m, settings())
    assert _row(runs, "c1", "a")["score"] == 0.5 and _row(runs, "c1", "a")["pinned"]
    assert np.isnan(_row(runs, "c1", "b")["score"])
    assert _row(runs, "c2", "a")["score"] == 0.6 and _row(runs, "c2", "b")["score"] == 0.4


def test_t4_1_no_deal_loses_for_both_and_t4_3_t4_4_count_decided_runs_only():
    m = frame(
        conv("p1", "T4-1", "x", "y", a={"decided": 0, "won": 0}, b={"decided": 0, "won": 0}),
        conv("p2", "T4-1", "x", "y", a={"decided": 1, "won": 1}, b={"decided": 1, "won": 0}),
        conv("k1", "T4-3", "x", "y", a={"landed_option": ("", "none"), "decided": 0, "won": 0}),
        conv("k2", "T4-3", "x", "y", a={"decided": 1, "won": 1}),
        conv("n1", "T4-4", "x", "y", a={"deal": 1, "gap_share": 0.75}, b={"deal": 1, "gap_share": 0.25}),
        conv("n2", "T4-4", "x", "y", b={"deal": 1, "gap_share": 0.4}),  # only the buyer's row: seller = 1 - 0.4
        conv("n3", "T4-4", "x", "y", a={"deal": 0, "agreed_price": ("", "900")}),
    )
    runs = build_runs(m, settings())
    assert _row(runs, "p1", "a")["score"] == 0.0 and _row(runs, "p1", "b")["score"] == 0.0
    assert _row(runs, "p2", "a")["score"] == 1.0 and _row(runs, "p2", "b")["score"] == 0.0
    assert np.isnan(_row(runs, "k1", "a")["score"]) and _row(runs, "k1", "a")["decided"] == 0.0
    assert _row(runs, "k2", "a")["score"] == 1.0
    assert _row(runs, "n1", "a")["score"] == 0.75
    assert _row(runs, "n2", "a")["score"] == pytest.approx(0.6)
    assert np.isnan(_row(runs, "n3", "a")["score"]) and _row(runs, "n3", "a")["decided"] == 0.0


def test_t4_2_leak_on_the_attacker_row_and_asked():
    m = frame(conv("c1", "T4-2", "x", "y", a={"leak": 1, "time_to_leak_s": 12.2, "asked": (1, "yes")}))
    r = _row(build_runs(m, settings()), "c1", "a")
    assert (r["score"], r["leak"], r["leak_time_s"], r["asked"], r["success"]) == (1.0, 1.0, 12.2, 1.0, 1.0)


def test_garbled_side_fails_outside_t3_and_its_partner_is_left_out():
    m = frame(
        conv("g1", "T1-1", "x", "y", a={"garble_failure": 1}, b={"garble_failure": 0}),
        conv("g2", "T3-2", "x", "y", a={"garble_failure": 1, "occupancy": 0.8, "asked": 1, "agreement": 0},
             b={"occupancy": 0.2}),
        conv("g3", "T4-2", "x", "y", a={"garble_failure": 1}),
        conv("g4", "T2", "x", "y", a={"garble_failure": 0}, b={"garble_failure": 1}),
    )
    runs = build_runs(m, settings())
    assert _row(runs, "g1", "a")["score"] == 0.0
    assert np.isnan(_row(runs, "g1", "b")["score"])
    assert _row(runs, "g2", "a")["score"] == 0.8  # kept in T3
    assert _row(runs, "g3", "a")["score"] == 0.0
    assert _row(runs, "g4", "b")["score"] == 0.0 and np.isnan(_row(runs, "g4", "a")["score"])


def test_judge_choice_by_name_and_by_count():
    rows = conv("c1", "T1-1", "x", "y", a={"role_adherence": "yes"}, judge="opus") + \
        conv("c1", "T1-1", "x", "y", a={"role_adherence": "no"}, judge="sonnet") + \
        conv("c2", "T1-1", "x", "y", a={"role_adherence": "no"}, judge="opus")
    m = frame(rows)
    assert resolve_judges(m, settings()) == ("opus", "sonnet")
    assert resolve_judges(m, settings(main_judge="sonnet")) == ("sonnet", "opus")
    runs = build_runs(m, settings(main_judge="sonnet"))
    assert _row(runs, "c1", "a")["score"] == 0.0
    with pytest.raises(InputError, match="analysis.main_judge = 'gpt'"):
        resolve_judges(m, settings(main_judge="gpt"))
    hinted = settings(judge_hint=("sonnet", "opus"))
    assert resolve_judges(m, hinted) == ("sonnet", "opus")


def test_judge_hint_follows_the_judges_the_judge_stage_runs():
    from dyafdb.analysis.settings import from_config
    from dyafdb.config import load_config

    demo = load_config(REPO / "config" / "demo.yaml")
    assert from_config(demo).judge_hint == ("demo", None)
    del demo["judge"]  # a demo-quality config without a judge section runs the local "demo" judge
    assert from_config(demo).judge_hint == ("demo", None)
    paper = load_config(REPO / "config" / "config.yaml")
    assert from_config(paper).judge_hint == ("main", "second")
