"""The judge checks (dyafdb.judge.checks): a choice must be named in the transcript, contradictions flagged."""

from __future__ import annotations

from dyafdb.judge import checks
from dyafdb.judge.rubric import FinalChoice, LandedOption, Verdict

TRANSCRIPT = ("[0.00] Speaker A: I think the heron is our bird.\n"
              "[3.10] Speaker B: Maybe, or the kestrel. Let's settle on the heron.\n")


def _record(question, label, rows, judge="main", seat=None, fields=None):
    return {"conversation_id": "c1", "question": question, "judge": judge, "seat": seat, "label": label,
            "fields": fields or {}, "rows": rows}


class _Ctx:
    def __init__(self, key):
        self.scenario = type("S", (), {"answer_key": key})()

    def speaker(self, side):
        return "Speaker A"


def test_a_choice_the_transcript_never_names_counts_as_none():
    key = {"candidates": ["heron", "kestrel", "swift", "wren", "owl"], "answer": "owl"}
    rows = FinalChoice().rows(Verdict("owl"), _Ctx(key))  # the judge picked the answer nobody said
    [rec] = checks.check_records([_record("final_choice", "owl", rows)], key, TRANSCRIPT)
    values = {r["measure"]: r["value"] for r in rec["rows"] if r["side"] == "a"}
    assert values["solved"] == 0 and values["decided"] == 0
    assert all(r["check"] == checks.CHOICE_NOT_NAMED and r["label"] == "owl" for r in rec["rows"])
    assert rec["checks"] == [checks.CHOICE_NOT_NAMED]
    # a choice that is said passes untouched
    rows = FinalChoice().rows(Verdict("heron"), _Ctx(key))
    [rec] = checks.check_records([_record("final_choice", "heron", rows)], key, TRANSCRIPT)
    assert not rec.get("checks") and all("check" not in r for r in rec["rows"])


def test_a_landed_option_not_said_is_a_loss_for_both():
    key = {"options": {"a": "the lake", "b": "the museum"}}
    rows = LandedOption().rows(Verdict("the museum"), _Ctx(key))
    [rec] = checks.check_records([_record("landed_option", "the museum", rows)], key, "A: the lake it is\n")
    assert {(r["side"], r["measure"]): r["value"] for r in rec["rows"]}[("b", "won")] == 0


def test_contradictions_are_flagged_on_both_answers_and_values_kept():
    adherence = _record("role_adherence", "yes", [{"side": "a", "measure": "role_adherence", "value": 2, "label": "yes"}], seat="a")
    timing = _record("role_timing", "entry=1.00;deviation=9.00",
                     [{"side": "a", "measure": "role_deviation_s", "value": 9.0, "label": "9.00"}], seat="a",
                     fields={"entry_s": 1.0, "deviation_s": 9.0})
    other_seat = _record("role_timing", "entry=1.00;deviation=9.00",
                         [{"side": "b", "measure": "role_deviation_s", "value": 9.0, "label": "9.00"}], seat="b",
                         fields={"entry_s": 1.0, "deviation_s": 9.0})
    out = checks.check_records([adherence, timing, other_seat], {}, TRANSCRIPT)
    assert out[0]["checks"] == out[1]["checks"] == [checks.ADHERENCE_WITH_DEVIATION]
    assert out[0]["rows"][0]["value"] == 2  # kept: which answer is wrong is not known
    assert not out[2].get("checks")  # seat b's deviation says nothing about seat a's adherence
    granted = _record("request_granted", "yes", [{"side": "a", "measure": "agreement", "value": 1, "label": "yes"}])
    asked = _record("request_asked", "no", [{"side": "a", "measure": "asked", "value": 0, "label": "no"}])
    out = checks.check_records([granted, asked], {}, TRANSCRIPT)
    assert out[0]["rows"][0]["check"] == checks.GRANTED_NOT_ASKED


def test_a_price_outside_every_offer_is_voided_with_its_reason():
    key = {"seller_opening": 900, "buyer_opening": 600, "currency": "dollars"}
    rows = [{"side": s, "measure": m, "value": v, "label": "100000000"}
            for s in "ab" for m, v in (("agreed_price", None), ("deal", 0), ("gap_share", None))]
    [rec] = checks.check_records([_record("agreed_price", "100000000", rows, fields={"price": 100000000, "in_transcript": False})],
                                 key, "A: 900 is my price.\nB: I can do 700.\n")
    assert set(rec["checks"]) == {checks.PRICE_NOT_SAID, checks.PRICE_OUTSIDE_OFFERS}
    assert all(r["check"] for r in rec["rows"]) and all(r["label"] == "100000000" for r in rec["rows"])


def test_each_judge_is_checked_on_its_own():
    granted = _record("request_granted", "yes", [{"side": "a", "measure": "agreement", "value": 1, "label": "yes"}], judge="main")
    asked_other = _record("request_asked", "no", [{"side": "a", "measure": "asked", "value": 0, "label": "no"}], judge="second")
    out = checks.check_conversation([granted, asked_other], {}, TRANSCRIPT)
    assert not out[0].get("checks") and not out[1].get("checks")
