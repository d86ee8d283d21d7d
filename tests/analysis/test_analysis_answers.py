"""One answer policy: a contradicted or voided judge answer has one fate on every page."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analysis_helpers import conv, settings
from analysis_helpers import frame as _frame
from dyafdb.analysis.answers import AnswerPolicy, ledger, policy_of, tally
from dyafdb.analysis.judge_checks import judge_checks_table
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import score_matrix
from dyafdb.config import validate_config
from dyafdb.viewer.summary import measure_values

CONTRA = "role adherence yes with a deviation time"


def frame(*convs):
    return _frame(*[[{"check": "", **r} for r in c] for c in convs])


def _t11(cid: str, contradicted: bool):
    """A T1-1 run; side a's two answers contradict each other when ``contradicted``."""
    rows = conv(cid, "T1-1", "x", "y",
                a={"role_adherence": (2, "yes"), "in_role": 1, "role_entry_s": (1.0, "1.00"),
                   "role_deviation_s": (20.0 if contradicted else "", "20.00" if contradicted else "none")},
                b={"role_adherence": (0, "no"), "in_role": 0, "role_entry_s": ("", "none"), "role_deviation_s": ("", "none")})
    if contradicted:
        for r in rows:
            if r["side"] == "a" and r["judge"]:
                r["check"] = CONTRA
    return rows


def _measures():
    return frame(_t11("c1", True), _t11("c2", True), _t11("c3", False))


def test_contradicted_answers_are_left_out_of_the_tables_by_default_and_the_table_says_so():
    measures = _measures()
    runs = build_runs(measures, settings())
    m = score_matrix(runs, "T1-1", settings())
    # only c3's side a is scored from x's seat: the two contradicted adherence answers are left out
    assert m.n.loc["x", "y"] == 1 and m.values.loc["x", "y"] == 1.0
    assert "4 left out (role adherence yes with a deviation time 4)" in m.note
    assert "n = 4 scored seats" in m.note


def test_the_policy_from_the_config_can_count_contradicted_answers():
    measures = _measures()
    runs = build_runs(measures, settings(answers=AnswerPolicy(failed_check="none", contradicted="count")))
    m = score_matrix(runs, "T1-1", settings())
    assert m.n.loc["x", "y"] == 3 and m.values.loc["x", "y"] == 1.0


def test_the_default_policy_is_the_schemas_and_a_config_may_change_it():
    assert policy_of({}) == AnswerPolicy.default() == AnswerPolicy("none", "leave_out")
    from conftest import scripted_config

    cfg = scripted_config()
    cfg["analysis"] = {"answers": {"contradicted": "count"}}
    config = validate_config(cfg, "test")
    assert policy_of(config) == AnswerPolicy("none", "count")
    cfg["analysis"] = {"answers": {"contradicted": "maybe"}}
    with pytest.raises(Exception):
        validate_config(cfg, "test")


def test_one_answer_has_one_fate_in_the_checks_table_the_runs_the_viewer_and_the_ledger():
    measures = _measures()
    policy = AnswerPolicy.default()
    answers = ledger(measures, policy)
    t = tally(answers)
    # per seat: adherence and timing, 3 runs x 2 sides; c1 and c2's side-a answers are contradicted
    assert t["answers"] == 12 and t["left_out"] == 4 and t["left_out_why"] == {CONTRA: 4}
    checks = judge_checks_table(measures, policy).set_index(["judge", "archetype", "measure"])
    row = checks.loc[("main", "T1-1", "role_adherence")]
    assert row["contradictions"] == 2 and row["left_out"] == 2 and row["counted"] == 4
    runs = build_runs(measures, settings())
    assert int(runs["answers_left_out"].sum()) == 4
    rec = {"judge": "main", "rows": [{"measure": "role_adherence", "side": "a", "value": 2, "label": "yes", "check": CONTRA}]}
    _, labels = measure_values(SimpleNamespace(measures=None, judged=[rec]), policy)
    assert labels["role_adherence|a|main"] == f"withheld: {CONTRA}; left out in the tables"
    counted = AnswerPolicy("none", "count")
    _, labels = measure_values(SimpleNamespace(measures=None, judged=[rec]), counted)
    assert labels["role_adherence|a|main"].endswith("counted as given in the tables")


def test_a_voided_price_is_counted_as_none_or_left_out_as_the_policy_says():
    def t44(cid, reason):
        rows = conv(cid, "T4-4", "x", "y", a={"agreed_price": ("", "5000"), "deal": 0, "gap_share": "", "turns": 5})
        for r in rows:
            if r["judge"]:
                r["check"] = reason
        return rows

    measures = frame(t44("p1", "price outside any offer made"), t44("p2", ""))
    none_runs = build_runs(measures, settings())
    a = none_runs[none_runs["side"] == "a"].set_index("conversation_id")
    assert a.loc["p1", "decided"] == 0.0 and a.loc["p1", "answers_none"] == 1
    out_runs = build_runs(measures, settings(answers=AnswerPolicy("leave_out", "leave_out")))
    a = out_runs[out_runs["side"] == "a"].set_index("conversation_id")
    assert a["decided"].isna()["p1"] and a.loc["p1", "answers_left_out"] == 1


# ------------------------------------------------------------------------- counts are counts

def test_a_cross_play_answer_is_counted_once_in_the_constant_note():
    from analysis_helpers import frame as plain

    convs = []
    for i in range(4):  # 4 cross-play T2 runs, the pair's answer written on both sides
        convs.append(conv(f"t{i}", "T2", "x", "y", a={"final_choice": ("", "none"), "decided": 0, "solved": 0},
                          b={"final_choice": ("", "none"), "decided": 0, "solved": 0}))
    for i in range(2):  # and 2 self-play runs
        convs.append(conv(f"s{i}", "T2", "x", "x", a={"final_choice": ("", "none"), "decided": 0, "solved": 0}))
    runs = build_runs(plain(*convs), settings(models=("x", "y")))
    m = score_matrix(runs, "T2", settings(models=("x", "y")))
    assert "the judge answered 'none' 6 of 6" in m.note


def test_counts_print_as_integers_in_every_table():
    import numpy as np
    import pandas as pd

    from dyafdb.analysis.numbers import fmt
    from dyafdb.analysis.render import frame_body

    assert fmt(0) == "0" and fmt(np.int64(18)) == "18" and fmt(0.0) == ".00"
    html = frame_body(pd.DataFrame({"events": [0.0, 4.0, np.nan], "invalid": [18.0, 0.0, 1.0], "mean": [0.5, 0.25, 1.0]}), "t")
    assert "<td>0</td>" in html and "<td>4</td>" in html and "<td>18</td>" in html and ".00" not in html
    assert "<td>.50</td>" in html


# ------------------------------------------------------------------------- a verdict needs events

def test_a_game_where_nobody_asked_favours_no_one_and_an_unplayed_game_says_why():
    from dyafdb.analysis.balance import balance_table

    convs = [conv(f"k{i}", "T4-2", "x", "y", a={"leak": 0, "asked": (0, "no")}, scenario=f"s{i % 3}") for i in range(6)]
    convs += [conv("d1", "T4-4", "x", "y", a={"deal": 0, "turns": 4})]
    st = settings(models=("x", "y"), bootstrap=50)
    table = balance_table(build_runs(frame(*convs), st), st)
    game = table[table["row"] == "game"].set_index("game")
    assert game.loc["T4-2", "value"] == 0.0 and game.loc["T4-2", "events"] == 0
    assert game.loc["T4-2", "advantaged"] == "no verdict: no run in which the attacker asked for the secret (0 of 6)"
    assert game.loc["T4-4", "advantaged"].startswith("no verdict: no T4-4 run with an outcome")
