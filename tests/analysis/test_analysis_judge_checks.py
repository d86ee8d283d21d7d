"""Judge checks in the analysis: voided answers count as none; each question's spread and checks counted."""

from __future__ import annotations

from analysis_helpers import conv, settings
from analysis_helpers import frame as _frame
from dyafdb.analysis.judge_checks import judge_checks_table
from dyafdb.analysis.runs import build_runs
from dyafdb.analysis.tables import score_matrix


def frame(*convs):
    return _frame(*[[{"check": "", **r} for r in c] for c in convs])


def _with_check(rows, measure, reason):
    for r in rows:
        if r["measure"] == measure or measure == "*":
            r["check"] = reason
    return rows


def _t2(cid, choice, solved, reason=""):
    rows = conv(cid, "T2", "x", "y", a={"final_choice": ("", choice), "decided": int(choice != "none" and not reason),
                                        "solved": solved})
    return _with_check(rows, "*", reason) if reason else rows


def test_a_voided_choice_counts_as_none_and_the_raw_label_is_kept():
    convs = [_t2("c1", "owl", 0, "choice not named in the transcript"), _t2("c2", "heron", 1), _t2("c3", "none", 0)]
    measures = frame(*convs)
    runs = build_runs(measures, settings())
    a = runs[runs["side"] == "a"].set_index("conversation_id")
    assert a.loc["c1", "decided"] == 0.0 and a.loc["c2", "decided"] == 1.0
    assert score_matrix(runs, "T2", settings()).values.loc["x", "y"] == 1 / 3
    table = judge_checks_table(measures).set_index(["judge", "archetype", "measure"])
    row = table.loc[("main", "T2", "final_choice")]
    assert row["answers"] == 3 and row["failed_checks"] == 1 and row["contradictions"] == 0
    assert "owl 1" in row["spread"] and "choice not named in the transcript 1" in row["reasons"]


def test_contradictions_are_counted_per_judge_and_a_constant_answer_says_so():
    convs = []
    for i in range(8):
        rows = conv(f"g{i}", "T3-2", "x", "y", a={"asked": (0, "no"), "agreement": (1 if i < 2 else 0, "yes" if i < 2 else "no")})
        if i < 2:
            rows = _with_check(rows, "*", "granted without being asked")
        convs.append(rows)
    table = judge_checks_table(frame(*convs)).set_index(["judge", "archetype", "measure"])
    assert table.loc[("main", "T3-2", "agreement"), "contradictions"] == 2
    assert table.loc[("main", "T3-2", "asked"), "note"] == "the judge answered 'no' 8 of 8"
