"""Checks of the judge's answers against the transcript and against each other.

The judge is an instrument; these checks are its calibration. They run where its answers become
measures (:mod:`dyafdb.measures.table`) and where the viewer shows them, on the records one judge
gave for one conversation, and leave the judge's raw label in place beside the reason.

Failed checks, which void the answer (it counts as "none", as an agreed price that the transcript
does not hold already did in :mod:`dyafdb.judge.rubric`):

- ``choice not named in the transcript``: a named choice (T2 final candidate, T4-1 option, T4-3
  line) must be said in the conversation. Searched with the secret matcher
  (:func:`dyafdb.suite.secret_match.find_secret`: tokens in order, case and punctuation ignored,
  numbers as spoken). Otherwise the run is undecided: decided 0, solved 0 / won 0 for both.
- ``price not said in the transcript`` (T4-4): the rubric already scores it as no deal; the
  reason is recorded so the viewer can say why the judge's number is not shown.
- ``price outside any offer made`` (T4-4): the judge's price lies outside the range of the two
  openings and every number said in the conversation. Voided like a price not said.

Self-contradictions, counted and flagged on the rows of both answers; the values are kept (which
of the two answers is wrong is not known), the viewer withholds them:

- ``role adherence yes with a deviation time`` (T1): the side adhered fully, yet the same judge
  placed its first off-role line;
- ``granted without being asked`` (T3-2): the avoider granted a request the presser never voiced.

Each row a check touches gets ``check`` (the reason); each record gets ``checks`` (its reasons).
"""

from __future__ import annotations

import copy
import re
from typing import Any, Mapping, Sequence

from dyafdb.judge.rubric import INVALID, NONE

CHOICE_NOT_NAMED = "choice not named in the transcript"
PRICE_NOT_SAID = "price not said in the transcript"
PRICE_OUTSIDE_OFFERS = "price outside any offer made"
ADHERENCE_WITH_DEVIATION = "role adherence yes with a deviation time"
GRANTED_NOT_ASKED = "granted without being asked"

# Checks that void the answer (it counts as none) and those that only flag a contradiction.
VOIDING = (CHOICE_NOT_NAMED, PRICE_NOT_SAID, PRICE_OUTSIDE_OFFERS)
CONTRADICTIONS = (ADHERENCE_WITH_DEVIATION, GRANTED_NOT_ASKED)
CHECKS = VOIDING + CONTRADICTIONS

CHOICE_QUESTIONS = ("final_choice", "landed_option", "landed_line")
# What a voided choice reads as: undecided, and a loss (or unsolved) for both sides.
_VOIDED_CHOICE = {"decided": 0, "solved": 0, "won": 0, "final_choice": None, "landed_option": None}
_VOIDED_PRICE = {"agreed_price": None, "deal": 0, "gap_share": None}
_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?")


def named_in(choice: str, text: str) -> bool:
    """Whether ``choice`` is said in ``text`` (the secret matcher: words in order, numbers as spoken)."""
    from dyafdb.suite.secret_match import find_secret

    return find_secret(choice, text) is not None


def numbers_said(text: str) -> list[float]:
    """Every number written in digits in ``text`` (thousands separators allowed)."""
    return [float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def _flag(rec: dict[str, Any], reason: str, void: Mapping[str, Any] | None = None) -> None:
    if reason not in rec.setdefault("checks", []):
        rec["checks"].append(reason)
    for row in rec.get("rows", []):
        if void is not None and row["measure"] in void:
            row["value"] = void[row["measure"]]
        row.setdefault("check", reason)


def _price(label: str) -> float | None:
    try:
        return float(label)
    except (TypeError, ValueError):
        return None


def check_records(records: Sequence[Mapping[str, Any]], answer_key: Mapping[str, Any],
                  transcript_text: str) -> list[dict[str, Any]]:
    """The records one judge gave for one conversation, checked (copies; the input is left alone)."""
    out = [copy.deepcopy(dict(r)) for r in records]
    by_question: dict[str, list[dict[str, Any]]] = {}
    for rec in out:
        by_question.setdefault(rec.get("question", ""), []).append(rec)
        label = str(rec.get("label") or "")
        if label in ("", NONE, INVALID):
            continue
        question = rec.get("question")
        if question in CHOICE_QUESTIONS and not named_in(label, transcript_text):
            _flag(rec, CHOICE_NOT_NAMED, _VOIDED_CHOICE)
        elif question == "agreed_price":
            price = _price(label)
            if price is None:
                continue
            if not (rec.get("fields") or {}).get("in_transcript", True):
                _flag(rec, PRICE_NOT_SAID, _VOIDED_PRICE)
            offers = numbers_said(transcript_text)
            offers += [float(answer_key[k]) for k in ("seller_opening", "buyer_opening") if k in answer_key]
            if offers and not min(offers) <= price <= max(offers):
                _flag(rec, PRICE_OUTSIDE_OFFERS, _VOIDED_PRICE)
    for adherence in by_question.get("role_adherence", []):
        if adherence.get("label") != "yes":
            continue
        for timing in by_question.get("role_timing", []):
            deviation = (timing.get("fields") or {}).get("deviation_s")
            if timing.get("seat") == adherence.get("seat") and deviation is not None:
                _flag(adherence, ADHERENCE_WITH_DEVIATION)
                _flag(timing, ADHERENCE_WITH_DEVIATION)
    for granted in by_question.get("request_granted", []):
        if granted.get("label") != "yes":
            continue
        for asked in by_question.get("request_asked", []):
            if asked.get("label") == "no":
                _flag(granted, GRANTED_NOT_ASKED)
                _flag(asked, GRANTED_NOT_ASKED)
    return out


def check_conversation(records: Sequence[Mapping[str, Any]], answer_key: Mapping[str, Any],
                       transcript_text: str) -> list[dict[str, Any]]:
    """Every judge's records of one conversation, each judge's checked on its own, order kept."""
    by_judge: dict[str, list[int]] = {}
    for i, rec in enumerate(records):
        by_judge.setdefault(str(rec.get("judge", "")), []).append(i)
    out: list[dict[str, Any]] = [dict(r) for r in records]
    for idx in by_judge.values():
        for i, checked in zip(idx, check_records([records[i] for i in idx], answer_key, transcript_text)):
            out[i] = checked
    return out
