"""The viewer withholds a judge answer that failed a check and says why (dyafdb.judge.checks)."""

from __future__ import annotations

from types import SimpleNamespace

from dyafdb.judge.checks import check_records
from dyafdb.viewer.pages import _verdict
from dyafdb.viewer.summary import measure_values

KEY = {"seller_opening": 900, "buyer_opening": 600, "currency": "dollars"}


def _price_record(label: str) -> dict:
    rows = [{"side": s, "measure": m, "value": v, "label": label}
            for s in "ab" for m, v in (("agreed_price", None), ("deal", 0), ("gap_share", None))]
    return {"conversation_id": "c1", "question": "agreed_price", "judge": "main", "seat": None, "label": label,
            "valid": True, "fields": {"price": int(label), "in_transcript": False}, "rows": rows,
            "replies": [f"ANSWER: {label}"]}


def test_a_hallucinated_price_is_withheld_with_its_reason():
    [rec] = check_records([_price_record("100000000")], KEY, "A: 900.\nB: 700 then.\n")
    values, labels = measure_values(SimpleNamespace(measures=None, judged=[rec]))
    assert values["agreed_price|a|main"] is None
    assert labels["agreed_price|a|main"].startswith("withheld: price")
    assert "100000000" not in "".join(labels.values())
    html = _verdict(rec, {"a": "A", "b": "B"})
    shown, raw = html.split("<details>", 1)
    assert "100000000" not in shown and "withheld: price not said in the transcript" in shown
    assert "100000000" in raw  # the raw reply stays for audit, folded away


def test_an_answer_that_passed_is_shown_as_it_was():
    rec = _price_record("700")
    rec["fields"]["in_transcript"] = True
    [rec] = check_records([rec], KEY, "A: 900.\nB: 700 then.\nA: fine, 700.\n")
    values, labels = measure_values(SimpleNamespace(measures=None, judged=[rec]))
    assert labels["agreed_price|a|main"] == "700"


def test_the_viewer_prints_numbers_as_the_report_does():
    from dyafdb.analysis.numbers import fmt as report_fmt
    from dyafdb.viewer.summary import fmt

    for value in (0.5123, 0.0, 12.4, 3.0, -0.25, 0.999):
        assert fmt(value) == report_fmt(value)
