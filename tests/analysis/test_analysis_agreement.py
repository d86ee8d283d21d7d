"""Judge agreement (Table 8): judge vs judge, human majority vote, raters' pairwise agreement."""

from __future__ import annotations

import pytest

from analysis_helpers import conv, frame, settings
from dyafdb.analysis.agreement import agreement_table, majority, read_human_labels
from dyafdb.errors import InputError

# four T1-1 seats: main says yes, yes, partly, no; second says yes, partly, partly, no -> 3 of 4 match.
MAIN = [("c1", "a", "yes"), ("c1", "b", "yes"), ("c2", "a", "partly"), ("c2", "b", "no")]
SECOND = {("c1", "b"): "partly"}


def _measures():
    rows = []
    for cid in ("c1", "c2"):
        for judge in ("main", "second"):
            a = {"role_adherence": (None, next(l for c, s, l in MAIN if c == cid and s == "a"))}
            b = {"role_adherence": (None, next(l for c, s, l in MAIN if c == cid and s == "b"))}
            if judge == "second":
                for (c, s), label in SECOND.items():
                    if c == cid:
                        (a if s == "a" else b)["role_adherence"] = (None, label)
            # the rubric writes the scale 2/1/0 as the value and the word as the label
            a = {k: ({"yes": 2, "partly": 1, "no": 0}[v[1]], v[1]) for k, v in a.items()}
            b = {k: ({"yes": 2, "partly": 1, "no": 0}[v[1]], v[1]) for k, v in b.items()}
            rows += conv(cid, "T1-1", "x", "y", a=a, b=b, judge=judge)
    rows += conv("f1", "T2", "x", "y", a={"final_choice": ("", "Willow"), "decided": 1, "solved": 1},
                 b={"final_choice": ("", "Willow"), "decided": 1, "solved": 1}, judge="main")
    rows += conv("f1", "T2", "x", "y", a={"final_choice": ("", "none"), "decided": 0, "solved": 0},
                 b={"final_choice": ("", "none"), "decided": 0, "solved": 0}, judge="second")
    return frame(rows)


def test_judge_vs_judge_exact_match_and_rho():
    t = agreement_table(_measures(), settings(models=("x", "y")), "main", "second", 60.0)
    row = t[(t["comparison"] == "main vs second") & (t["measure"] == "role_adherence")].iloc[0]
    assert row["n"] == 4 and row["exact_match"] == 0.75
    # ranks of main (2,2,1,0) and second (2,1,1,0): Spearman rho by hand
    from scipy.stats import spearmanr
    assert row["spearman_rho"] == pytest.approx(spearmanr([2, 2, 1, 0], [2, 1, 1, 0]).statistic)
    choice = t[(t["comparison"] == "main vs second") & (t["measure"] == "final_choice")].iloc[0]
    assert choice["n"] == 1 and choice["exact_match"] == 0.0  # a conversation-level answer counts once
    cells = t[t["comparison"] == "main vs second: cells"].set_index("archetype")
    # T1-1 cells: x vs y main (1 + 1)/2 = 1, second 1; y vs x main (1 + 0)/2 = .5, second .5 -> no difference
    assert cells.loc["T1-1", "mean_abs_diff"] == 0.0
    assert cells.loc["T2", "mean_abs_diff"] == 1.0


def test_human_majority_ties_and_pairwise(tmp_path):
    csv = tmp_path / "humans.csv"
    lines = ["rater,conversation_id,seat,measure,label"]
    votes = {("c1", "a"): ["yes", "yes", "no"],          # majority yes
             ("c1", "b"): ["yes", "partly", "no", "no", "yes"],  # tie yes/no -> median of (no,no,partly,yes,yes) = partly
             ("c2", "a"): ["partly", "partly", "partly"],
             ("c2", "b"): ["no", "no", "yes"]}
    for (cid, side), labels in votes.items():
        for r, label in enumerate(labels):
            lines.append(f"r{r},{cid},{side.upper()},role_adherence,{label}")
    csv.write_text("\n".join(lines) + "\n")
    labels = read_human_labels(csv)
    voted, ties = majority(labels)
    got = {(r.conversation_id, r.side): r.label for r in voted.itertuples()}
    assert got == {("c1", "a"): "yes", ("c1", "b"): "partly", ("c2", "a"): "partly", ("c2", "b"): "no"} and ties == 0
    t = agreement_table(_measures(), settings(models=("x", "y")), "main", "second", 60.0, human=csv)
    vs = t[t["comparison"] == "main vs human majority"].iloc[0]
    assert vs["n"] == 4 and vs["exact_match"] == 0.75  # main: yes, yes, partly, no
    vs2 = t[t["comparison"] == "second vs human majority"].iloc[0]
    assert vs2["exact_match"] == 1.0
    pair = t[t["comparison"] == "rater r0 vs rater r1"].iloc[0]
    # r0 and r1 both labelled all four seats: (yes,yes) (yes,partly) (partly,partly) (no,no) -> 3/4
    assert pair["n"] == 4 and pair["exact_match"] == 0.75
    summary = t[t["comparison"] == "raters pairwise (range)"].iloc[0]
    assert "rater pairs" in summary["note"]


def test_nominal_tie_is_left_out(tmp_path):
    csv = tmp_path / "h.csv"
    csv.write_text("rater,conversation_id,side,measure,label\nr1,f1,a,final_choice,Willow\nr2,f1,a,final_choice,Cedar\n")
    voted, ties = majority(read_human_labels(csv))
    assert voted.empty and ties == 1


def test_human_labels_errors_name_the_fix(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("rater,conversation,side,measure,label\n")
    with pytest.raises(InputError, match="lack column\\(s\\) conversation_id"):
        read_human_labels(bad)
    bad.write_text("rater,conversation_id,side,measure,label\nr1,c1,left,role_adherence,yes\n")
    with pytest.raises(InputError, match="'a' or 'b'"):
        read_human_labels(bad)
    with pytest.raises(InputError, match="not found"):
        read_human_labels(tmp_path / "missing.csv")



def test_one_judge_alone_has_nothing_to_compare():
    assert agreement_table(_measures(), settings(models=("x", "y")), "main", None, 60.0).empty


def test_blind_labels_are_placed_through_the_key_file_outside_the_site(tmp_path):
    import json

    from dyafdb.analysis.agreement import read_human_labels
    from dyafdb.analysis.annotation_key import KEY_FORMAT
    from dyafdb.errors import InputError

    key = tmp_path / "site-annotation-key.json"
    key.write_text(json.dumps({"format": KEY_FORMAT, "salt": "00" * 16, "study": "s1",
                               "items": [{"code": "001", "item": "9f2c4e", "conversation_id": "t1-1-a__x__y", "archetype": "T1-1",
                                          "pairing": "x-y", "seats": ["a"]}]}))
    labels = tmp_path / "labels.csv"
    labels.write_text("rater,item,seat,measure,label\nr1,9f2c4e,a,role_adherence,yes\n")
    got = read_human_labels(labels, key)
    assert list(got["conversation_id"]) == ["t1-1-a__x__y"]
    # an annotation-only site beside it has its own key: found without being named
    other = tmp_path / "annotation-site-annotation-key.json"
    other.write_text(json.dumps({"format": KEY_FORMAT, "salt": "11" * 16, "study": "s2",
                                 "items": [{"code": "001", "item": "77aa01", "conversation_id": "t1-2-b__y__x", "archetype": "T1-2",
                                            "pairing": "x-y", "seats": ["a"]}]}))
    labels.write_text("rater,item,seat,measure,label\nr2,77aa01,a,role_adherence,no\n")
    assert list(read_human_labels(labels, key)["conversation_id"]) == ["t1-2-b__y__x"]
    labels.write_text("rater,item,seat,measure,label\nr1,ffffff,a,role_adherence,yes\n")
    with pytest.raises(InputError, match="not in the annotation key"):
        read_human_labels(labels, key)
