"""The answer policy: which judge answers count, declared once (``analysis.answers``) and applied here.

A judge answer is one judge's reply to one question about one seat (T1's role questions) or about
the pair (every other question). Each answer is of one kind:

- ``valid``: counted as given;
- ``invalid``: the judge gave no label of the question's set (after the reminder): no answer, left out;
- ``failed_check``: it failed a transcript check of :mod:`dyafdb.judge.checks` (a choice the
  transcript never names, a price nobody said or outside every offer); ``analysis.answers.failed_check``
  says whether it counts as "none" (the paper's rubric: a price that was not said is no deal) or is
  left out;
- ``contradicted``: it contradicts another answer of the same judge about the same seat (role
  adherence "yes" with a deviation time; "granted" without "asked"); ``analysis.answers.contradicted``
  says whether both are left out (which of the two is wrong is not known) or counted as given.

Every page that shows a judge answer or a number built from one goes through :func:`ledger` (the
tables, figures, profiles and leaderboard through :func:`apply_policy` in the per-run table; the
judge-checks table and summary.md by tallying the ledger) or, for one record in the viewer,
through :func:`classify` and :meth:`AnswerPolicy.shown`: so the fate of an answer reads the same
everywhere.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from dyafdb.judge.checks import CONTRADICTIONS, VOIDING

VALID, INVALID, FAILED_CHECK, CONTRADICTED = "valid", "invalid", "failed_check", "contradicted"
COUNT, AS_NONE, LEAVE_OUT = "count", "none", "leave_out"
KIND_WORDS = {INVALID: "invalid reply", FAILED_CHECK: "failed a transcript check", CONTRADICTED: "contradicted"}
FATE_WORDS = {COUNT: "counted as given", AS_NONE: "counted as none", LEAVE_OUT: "left out"}


@lru_cache(maxsize=1)
def _schema_defaults() -> dict[str, str]:
    from dyafdb.schema_check import load_schema

    props = load_schema("config-analysis")["properties"]["answers"]["properties"]
    return {k: v["default"] for k, v in props.items()}


@dataclass(frozen=True)
class AnswerPolicy:
    """What becomes of each kind of answer: COUNT, AS_NONE or LEAVE_OUT (valid counts, invalid is left out)."""

    failed_check: str
    contradicted: str

    @classmethod
    def default(cls) -> "AnswerPolicy":
        """The paper's policy, as the schema declares it."""
        return cls(**_schema_defaults())

    @classmethod
    def from_section(cls, section: Mapping[str, Any] | None) -> "AnswerPolicy":
        """From a validated ``analysis.answers`` section (keys it omits take the schema's defaults)."""
        return cls(**{**_schema_defaults(), **dict(section or {})})

    def fate(self, kind: str) -> str:
        return {VALID: COUNT, INVALID: LEAVE_OUT, FAILED_CHECK: self.failed_check, CONTRADICTED: self.contradicted}[kind]

    def describe(self) -> str:
        """The policy in one sentence, as every page states it."""
        return ("judge answers: valid ones counted; invalid replies left out; "
                f"failed a transcript check: {FATE_WORDS[self.failed_check]}; "
                f"contradicted by another answer of the same seat: {FATE_WORDS[self.contradicted]}")

    def shown(self, reason: str) -> str:
        """What the viewer shows in place of an answer that failed a check or was contradicted."""
        kind = kind_of_reason(reason)
        return f"withheld: {reason}; {FATE_WORDS[self.fate(kind)]} in the tables"


def policy_of(config: Mapping[str, Any] | None) -> AnswerPolicy:
    """The run's policy from its (validated) config."""
    return AnswerPolicy.from_section(((config or {}).get("analysis") or {}).get("answers"))


def kind_of_reason(reason: str) -> str:
    if reason in VOIDING:
        return FAILED_CHECK
    if reason in CONTRADICTIONS:
        return CONTRADICTED
    # a reason this version does not know: treat it as the stronger verdict, a failed check
    return FAILED_CHECK


def classify(valid: bool, checks: Sequence[str] | str | None) -> tuple[str, str]:
    """(kind, reason) of one answer from its record's ``valid`` and check reason(s)."""
    if isinstance(checks, str):
        checks = [checks] if checks else []
    checks = [c for c in (checks or []) if c]
    if not valid:
        return INVALID, "invalid reply"
    if not checks:
        return VALID, ""
    failed = [c for c in checks if kind_of_reason(c) == FAILED_CHECK]
    reason = (failed or checks)[0]
    return kind_of_reason(reason), reason


# ------------------------------------------------------------------------- measures.tsv

def _question_of(archetype: str, measure: str) -> tuple[str, bool]:
    """(question id, asked per seat) of a judged measure; a measure no question writes is its own."""
    from dyafdb.judge.rubric import questions_for

    for q in questions_for(archetype):
        if measure in q.measures:
            return q.id, any(s is not None for s in q.seats(archetype))
    return measure, False


@lru_cache(maxsize=None)
def _question_cached(archetype: str, measure: str) -> tuple[str, bool]:
    return _question_of(archetype, measure)


def ledger(measures, policy: AnswerPolicy):
    """One row per judge answer in a measures frame: judge, conversation, archetype, side (the seat;
    side a for a question about the pair), model, partner, question, kind, reason, fate.

    Only the accepted recording attempt counts (as in the per-run table)."""
    import pandas as pd

    from dyafdb.analysis import columns as C

    cols = [C.JUDGE, C.CONVERSATION, C.ARCHETYPE, C.SIDE, C.MODEL, C.PARTNER, "question", "kind", "reason", "fate"]
    m = _accepted(measures[measures[C.JUDGE] != ""])
    if m.empty:
        return pd.DataFrame(columns=cols)
    keys = [_question_cached(a, x) for a, x in zip(m[C.ARCHETYPE], m[C.MEASURE])]
    m = m.assign(question=[k[0] for k in keys], per_seat=[k[1] for k in keys])
    # a question about the pair is written on both sides: one answer, placed on side a
    m = m.assign(seat=m[C.SIDE].where(m["per_seat"], "a"))
    rows = []
    for (judge, cid, seat, question), g in m.groupby([C.JUDGE, C.CONVERSATION, "seat", "question"], sort=True):
        invalid = bool(g[C.LABEL].str.lower().eq("invalid").any())
        kind, reason = classify(not invalid, list(dict.fromkeys(g[C.CHECK])))
        first = g[g[C.SIDE] == seat]
        first = first.iloc[0] if len(first) else g.iloc[0]
        model, partner = (first[C.MODEL], first[C.PARTNER]) if first[C.SIDE] == seat else (first[C.PARTNER], first[C.MODEL])
        rows.append((judge, cid, first[C.ARCHETYPE], seat, model, partner, question, kind, reason, policy.fate(kind)))
    return pd.DataFrame(rows, columns=cols)


def _accepted(m):
    """Rows of the accepted (last) recording attempt of each conversation."""
    import pandas as pd

    from dyafdb.analysis import columns as C

    attempts = pd.to_numeric(m[C.ATTEMPT], errors="coerce") if C.ATTEMPT in m else None
    if attempts is None or not attempts.notna().any():
        return m
    last = attempts.groupby(m[C.CONVERSATION]).transform("max")
    return m.loc[attempts.isna() | (attempts == last)]


def apply_policy(measures, policy: AnswerPolicy):
    """The measures frame as the tables read it: answers the policy leaves out are dropped (every row
    they wrote, derived ones too), answers it counts as none read "none"."""
    from dyafdb.analysis import columns as C

    if C.CHECK not in measures or not (measures[C.CHECK] != "").any():
        return measures
    fates = measures[C.CHECK].map(lambda r: policy.fate(kind_of_reason(r)) if r else COUNT)
    keep = fates != LEAVE_OUT
    m = measures.loc[keep].copy()
    none = fates.loc[keep] == AS_NONE
    # a voided answer's derived values were rewritten where it was checked (decided 0, no deal); its
    # own label (the judge's raw words, kept for audit) reads "none" here
    m.loc[none & m[C.MEASURE].isin(C.JUDGE_LABEL_MEASURES) & (m[C.VALUE] == ""), C.LABEL] = "none"
    return m


def tally(answers, by: Sequence[str] = ()) -> dict[str, Any] | Any:
    """Counts of a ledger (or part of one): answers, counted, counted as none, left out, and why."""
    def one(frame) -> dict[str, Any]:
        fates = Counter(frame["fate"])
        why_out = Counter(frame.loc[frame["fate"] == LEAVE_OUT, "reason"])
        why_none = Counter(frame.loc[frame["fate"] == AS_NONE, "reason"])
        return {"answers": int(len(frame)), "counted": int(fates[COUNT]), "as_none": int(fates[AS_NONE]),
                "left_out": int(fates[LEAVE_OUT]), "left_out_why": dict(why_out), "as_none_why": dict(why_none)}

    if not by:
        return one(answers)
    return {key: one(g) for key, g in answers.groupby(list(by), sort=True)}


def _reasons(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{r} {n}" for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def tally_text(t: Mapping[str, Any]) -> str:
    """"36 judge answers: 4 counted as none (price outside any offer made 4), 18 left out (...)"."""
    if not t["answers"]:
        return "no judge answers"
    parts = [f"{t['answers']} judge answers"]
    if t["as_none"]:
        parts.append(f"{t['as_none']} counted as none ({_reasons(t['as_none_why'])})")
    parts.append(f"{t['left_out']} left out" + (f" ({_reasons(t['left_out_why'])})" if t["left_out"] else ""))
    return "; ".join(parts)


def run_columns(answers, runs_index) -> dict[str, list[Any]]:
    """Per-run columns carrying each side's answers through the per-run table, so every table built
    from it can say how many answers it left out and why: ``answers``, ``answers_none``,
    ``answers_left_out`` and ``answers_why`` (reasons as "fate:reason" joined by "|")."""
    by_row: dict[tuple[str, str], list[Any]] = {}
    for cid, side, fate, reason in zip(answers["conversation_id"], answers["side"], answers["fate"], answers["reason"]):
        by_row.setdefault((cid, side), []).append((fate, reason))
    out: dict[str, list[Any]] = {"answers": [], "answers_none": [], "answers_left_out": [], "answers_why": []}
    for key in runs_index:
        got = by_row.get(key, [])
        out["answers"].append(len(got))
        out["answers_none"].append(sum(f == AS_NONE for f, _ in got))
        out["answers_left_out"].append(sum(f == LEAVE_OUT for f, _ in got))
        out["answers_why"].append("|".join(f"{f}:{r}" for f, r in got if f != COUNT))
    return out


def runs_tally(runs) -> dict[str, Any]:
    """The answer counts behind a slice of the per-run table (the columns of :func:`run_columns`)."""
    out = {"answers": 0, "counted": 0, "as_none": 0, "left_out": 0, "left_out_why": Counter(), "as_none_why": Counter()}
    if "answers" not in getattr(runs, "columns", ()):
        return out
    out["answers"] = int(runs["answers"].fillna(0).sum())
    for text in runs["answers_why"].fillna(""):
        for item in filter(None, str(text).split("|")):
            fate, _, reason = item.partition(":")
            out["left_out_why" if fate == LEAVE_OUT else "as_none_why"][reason] += 1
    out["left_out"] = sum(out["left_out_why"].values())
    out["as_none"] = sum(out["as_none_why"].values())
    out["counted"] = out["answers"] - out["left_out"] - out["as_none"]
    return out


def coverage_note(runs, n: int | None = None, unit: str = "runs") -> str:
    """The line every table and figure carries beside itself: its n and the answers left out, and why."""
    parts = [] if n is None else [f"n = {int(n)} {unit}"]
    t = runs_tally(runs)
    if t["answers"]:
        parts.append(tally_text(t))
    return "; ".join(parts)


def mechanical_note(n: int, unit: str = "conversation sides") -> str:
    """The same line for a table of mechanical measures only: its n, and that no judge answer enters it
    (so the answer policy leaves nothing out of it)."""
    return f"n = {int(n)} {unit}; mechanical measures: no judge answer enters, none left out"


def iter_record_fates(records: Iterable[Mapping[str, Any]], policy: AnswerPolicy) -> Iterable[tuple[str, str, str]]:
    """(kind, reason, fate) of each judge record (a JSONL line with ``valid`` and ``checks``)."""
    for rec in records:
        kind, reason = classify(bool(rec.get("valid", False)), rec.get("checks") or [])
        yield kind, reason, policy.fate(kind)
