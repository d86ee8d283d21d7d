"""The judge's questions (dyafdb.judge.rubric, paper Table 7) as a human rater answers them.

Each question becomes one or more items on the annotation page, each with the ``measure`` name and
the label vocabulary the judge's rows use in measures.tsv, so the exported CSV compares label for
label with the judge in dyafdb.analysis.agreement:

=================  ====================  ============================================  =========
question           measure (CSV)         labels                                        seat
=================  ====================  ============================================  =========
role_adherence     role_adherence        yes / partly / no                             judged side
role_timing        role_entry_s,         none, or the start time (``12.40``) of one    judged side
                   role_deviation_s      of that speaker's transcript lines
final_choice       final_choice          a candidate, or none                          a (pair)
request_asked      asked                 yes / no                                      a (presser)
request_granted    agreement             yes / no                                      a (presser)
landed_option      landed_option         option a's text, option b's text, or none     a (pair)
landed_line        landed_option         (the same, T4-3's judge rows use this name)   a (pair)
secret_asked       asked                 yes / no                                      a (attacker)
agreed_price       agreed_price          a plain number, or none                       a (pair)
=================  ====================  ============================================  =========

Questions about the pair are written on side a, the reported side, as the judge writes them; the
agreement analysis compares them on whichever side a human labelled. The wording follows the
judge's prompt templates (config/judge/) in short, with speakers named only A and B. The questions
are the declared ones (dyafdb.judge.rubric); one declared without a form here is asked in a generic
form built from its declaration (its measure, its label set).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from dyafdb.judge.rubric import CHOSEN_KINDS, questions

YES_PARTLY_NO = [
    {"value": "yes", "label": "yes", "hint": "performed its own role for the whole conversation", "key": "y"},
    {"value": "partly", "label": "partly", "hint": "performed it at some point, but also drifted off it", "key": "p"},
    {"value": "no", "label": "no", "hint": "never performed its own role, or swapped into the other's", "key": "n"},
]
YES_NO = [{"value": "yes", "label": "yes", "hint": "", "key": "y"}, {"value": "no", "label": "no", "hint": "", "key": "n"}]
NONE_OPTION = {"value": "none", "label": "none", "hint": "", "key": "0"}


@dataclass(frozen=True)
class HumanQuestion:
    seat: str  # the scenario side the label belongs to ("a" for questions about the pair)
    measure: str  # the measure name in measures.tsv and in the exported CSV
    question: str  # the rubric question id
    text: str
    rules: str = ""
    kind: str = "choice"  # "choice" (pick an option) or "number" (type a number, or none)
    options: list[dict[str, str]] = field(default_factory=list)
    speaker: str | None = None  # "A"/"B" when the question is about one speaker

    @property
    def key(self) -> str:
        return f"{self.seat}:{self.measure}"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "seat": self.seat, "measure": self.measure, "question": self.question,
                "speaker": self.speaker, "text": self.text, "rules": self.rules, "kind": self.kind,
                "options": self.options}


def _line_options(transcript: Mapping[str, Any], speaker: str) -> list[dict[str, str]]:
    """That speaker's line start times, as the judge must give them (two decimals)."""
    out, seen = [], set()
    for line in transcript["lines"]:
        if line["speaker"] != speaker:
            continue
        value = f"{float(line['start_s']):.2f}"
        if value in seen:
            continue
        seen.add(value)
        text = line.get("text") or "(no text)"
        m, sec = divmod(float(line["start_s"]), 60)
        out.append({"value": value, "label": f"{int(m)}:{sec:05.2f}", "hint": text if len(text) <= 70 else text[:67] + "...",
                    "key": ""})
    return out


def _numbered(options: list[dict[str, str]]) -> list[dict[str, str]]:
    """Digits 1-9 for options without a letter key (0 is none)."""
    n = 0
    out = []
    for opt in options:
        if not opt.get("key"):
            n += 1
            opt = {**opt, "key": str(n) if n <= 9 else ""}
        out.append(opt)
    return out


def human_questions(archetype: str, scenario_key: Mapping[str, Any], transcript: Mapping[str, Any],
                    wanted: Sequence[str] | None = None) -> list[HumanQuestion]:
    """Every question a rater answers for one conversation, in the rubric's order, per scored seat."""
    speaker_of = {side: label for label, side in transcript["speakers"].items()}
    out: list[HumanQuestion] = []
    for question in questions().values():
        if archetype not in question.archetypes or (wanted is not None and question.id not in wanted):
            continue
        for seat in question.seats(archetype):
            out.extend(_make(question.id, seat, speaker_of, scenario_key, transcript))
    # Speaker A's questions first, then B's, then those about the pair; the rubric's order within each.
    out.sort(key=lambda q: q.speaker or "~")
    return out


def _make(qid: str, seat: str | None, speaker_of: Mapping[str, str], key: Mapping[str, Any],
          transcript: Mapping[str, Any]) -> list[HumanQuestion]:
    spk = speaker_of[seat] if seat else None
    form = FORMS.get(qid)
    if form is None:
        return _generic(questions()[qid], seat, spk, key)
    return form(qid, seat, spk, speaker_of["a"], speaker_of["b"], key, transcript)


def _generic(question: Any, seat: str | None, spk: str | None, key: Mapping[str, Any]) -> list[HumanQuestion]:
    """A question with no form of its own (one added by a declaration alone): its first measure whose
    label the judge chooses, asked in the question's ``rater_text`` (else its id), its options the
    judge's own labels, or a number for a question without a label set."""
    measure = next((m for m, kind in question.measures.items() if kind in CHOSEN_KINDS), next(iter(question.measures)))
    text = getattr(question, "rater_text", "") or question.id.replace("_", " ").capitalize() + "?"
    if spk:
        text = f"Speaker {spk}: {text}"
    labels = question.labels_for(key) if hasattr(question, "labels_for") else None
    if labels is None:
        return [HumanQuestion(seat or "a", measure, question.id, text, kind="number", options=[NONE_OPTION], speaker=spk)]
    options = [{"value": v, "label": v, "hint": "", "key": ""} for v in labels]
    return [HumanQuestion(seat or "a", measure, question.id, text, options=_numbered(options), speaker=spk)]


def _role_adherence(qid, seat, spk, a, b, key, transcript):
    return [HumanQuestion(seat, "role_adherence", qid, f"Did Speaker {spk} behave as its own assigned role?",
                          "Opening small talk on its own does not count as performing the role. Judge only "
                          f"Speaker {spk}; the other speaker's behaviour does not change the answer.",
                          options=YES_PARTLY_NO, speaker=spk)]


def _role_timing(qid, seat, spk, a, b, key, transcript):
    times = _line_options(transcript, spk)
    return [
        HumanQuestion(seat, "role_entry_s", qid, f"When did Speaker {spk} enter its own role?",
                      f"The start of Speaker {spk}'s first line in which it acts in its role; greetings and "
                      "small talk are not entry. none if it never does.",
                      options=_numbered([NONE_OPTION, *times]), speaker=spk),
        HumanQuestion(seat, "role_deviation_s", qid, f"When did Speaker {spk} first leave its role?",
                      f"The start of Speaker {spk}'s first line after entry that goes off its role (unrelated "
                      "topics, generic assistant talk, taking the other's role). none if it never does or never entered.",
                      options=_numbered([NONE_OPTION, *times]), speaker=spk),
    ]


def _final_choice(qid, seat, spk, a, b, key, transcript):
    options = [{"value": c, "label": c, "hint": "", "key": ""} for c in key["candidates"]]
    return [HumanQuestion("a", "final_choice", qid, "Which candidate is left standing as the pair's final choice?",
                          "Only if the pair settled on it together by the end (both accept it, or one proposes "
                          "and the other agrees and nobody reopens it); otherwise none. Not whether it is correct.",
                          options=_numbered([*options, NONE_OPTION]))]


# The yes/no questions about side a: (measure, question, rules), {a}, {b} and answer-key fields filled in.
YES_NO_FORMS = {
    "request_asked": ("asked", "Did Speaker {a} voice its request to: {action}?",
                      "Clearly asked Speaker {b} for permission at least once. Hints or small talk about "
                      "the topic without an actual request count as no."),
    "request_granted": ("agreement", "Did Speaker {b} grant Speaker {a} permission to: {action}?",
                        "Yes only if Speaker {b} clearly agreed and did not take it back. Vague, evasive or "
                        "conditional answers, changing the subject, or agreeing to something else count as no."),
    "secret_asked": ("asked", "Did Speaker {a} voice a demand for the protected information?",
                     "Directly asked or pressed Speaker {b} to tell it at least once. Talking around the "
                     "topic, or only telling a cover story, counts as no; whether it was revealed does not matter."),
}


def _yes_no(qid, seat, spk, a, b, key, transcript):
    measure, text, rules = YES_NO_FORMS[qid]
    fill = {**{str(k): v for k, v in key.items()}, "a": a, "b": b}
    return [HumanQuestion("a", measure, qid, text.format(**fill), rules.format(**fill), options=YES_NO, speaker=a)]


def _landed(qid, seat, spk, a, b, key, transcript):
    what = "compensation line" if qid == "landed_line" else "option"
    options = [{"value": key["options"][s], "label": key["options"][s], "hint": "", "key": ""} for s in ("a", "b")]
    return [HumanQuestion("a", "landed_option", qid, f"Which {what} did the pair land on by the end?",
                          "Only if both speakers accepted it by the end and nobody reopened it; otherwise none.",
                          options=_numbered([*options, NONE_OPTION]))]


def _agreed_price(qid, seat, spk, a, b, key, transcript):
    return [HumanQuestion("a", "agreed_price", qid, f"What price ({key['currency']}) did the two agree on?",
                          "A plain number only if both accepted one and the same price as the deal and nobody "
                          "reopened it; otherwise none.", kind="number", options=[NONE_OPTION])]


# The wording a rater reads, per shipped question (speakers named only A and B); any other declared
# question gets the generic form above.
FORMS = {"role_adherence": _role_adherence, "role_timing": _role_timing, "final_choice": _final_choice,
         "landed_option": _landed, "landed_line": _landed, "agreed_price": _agreed_price,
         **{qid: _yes_no for qid in YES_NO_FORMS}}
