"""The judge's questions (paper, Table 7): label sets, strict reply parsing, derived measures.

One closed question per measure. A question is declared once: its class, marked
``@question("<id>")``, and its prompt template ``<prompts_dir>/<id>.txt`` (``config/judge/``), so
editing one template reruns only that question's judge jobs. ``QUESTIONS``, the viewer's annotation
forms, the config schema's question ids and the analysis's judged-measure lists derive from those
declarations (dyafdb.declarations; an installed package adds one through entry point group
``dyafdb.questions``). ``measures`` names each row a question writes and what kind of value it is
(``MEASURE_KINDS``).

Questions (template), archetypes, labels -> rows in measures.tsv:

- ``role_adherence`` (T1-1, T1-2): yes / partly / no for the judged side -> role_adherence (2/1/0),
  in_role (1 for yes or partly).
- ``role_timing`` (T1-1, T1-2): ENTRY and DEVIATION, each a start time of one of that side's lines
  or none -> role_entry_s, role_deviation_s.
- ``final_choice`` (T2): one of the five candidates or none -> final_choice, decided, solved (both
  sides: the pair is a team).
- ``request_asked`` (T3-2): yes / no, did the presser voice its request -> asked (presser).
- ``request_granted`` (T3-2): yes / no, did the avoider grant it -> agreement (presser).
- ``landed_option`` (T4-1): one of the two options or none -> landed_option, decided, won (both sides).
- ``secret_asked`` (T4-2): yes / no, did the attacker demand the secret -> asked (attacker).
- ``landed_line`` (T4-3): one of the two compensation lines or none -> landed_option, decided, won.
- ``agreed_price`` (T4-4): a number or none -> agreed_price, deal, gap_share (both sides).

T1-1 judges both sides (one call each); T1-2 only the role holder (side a). Everything else is one
call per conversation. Side a is the reported side of every asymmetric archetype.

**Strict parsing.** A reply must end with the answer line(s) the template asks for
(``ANSWER: <label>``; for role timing ``ENTRY: ...`` and ``DEVIATION: ...``); a reply that is
nothing but a label is accepted too. The value is compared with the label set after removing case,
surrounding quotes, markdown emphasis and a final full stop, and nothing else: no fuzzy matching,
no guessing. A reply that does not parse is asked again once with a reminder (``label_retries``);
if that fails too the answer is recorded as ``invalid`` (value empty), never guessed.

**Derived values.** decided = the label is not none; solved (T2) = the choice is the answer key's
survivor; won (T4-1, T4-3) = the landed option is this side's own, and a run that lands on none is
a loss for both; role timing: entry must be one of the judged side's line start times, deviation
none or a later one, and none for entry forces none for deviation. T4-4: the agreed number must
also appear in the transcript (as digits, with or without thousands separators, or spoken, via the
secret matcher); if it does not, the run counts as no deal (``deal`` 0, the judge's number kept as
the label with the value empty). gap_share = the seller's share of the opening gap
``(price - buyer_opening) / (seller_opening - buyer_opening)`` on the seller's row and one minus
that on the buyer's; not clipped, so a price outside the openings shows as below 0 or above 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dyafdb.declarations import declared, decorator, derived
from dyafdb.suite.scenarios import Scenario
from dyafdb.score.transcript import speaker_of

INVALID = "invalid"
NONE = "none"
# ``@question("<id>")`` on a Question subclass: sets its ``id``; the class and the prompt file are the declaration
question = decorator("question", "id")
# What a question's measure holds, which decides how tables compare it and how a page shows it:
MEASURE_KINDS = {
    "choice": "the judge's chosen label is the value (a candidate, an option); no number",
    "label": "a number the judge's label stands for (yes/partly/no as 2/1/0, a time, a price); shown as the label",
    "yes/no": "the judge's yes/no, as 1/0",
    "flag": "1/0 derived from the label (decided, solved, won)",
    "number": "a number derived from the label (gap share)",
}
CHOSEN_KINDS = ("choice", "label", "yes/no")  # the judge chose these labels itself (Table 8 compares them)


@dataclass
class Context:
    """What one judge call is about: a conversation, its scenario and (for T1) the judged side."""

    archetype: str
    scenario: Scenario
    transcript: Mapping[str, Any]  # the transcript JSON document
    transcript_text: str  # what the judge reads
    seat: str | None  # judged side, or None for a question about the pair

    def speaker(self, side: str) -> str:
        return f"Speaker {speaker_of(self.transcript, side)}"

    def start_times(self, side: str) -> list[float]:
        label = speaker_of(self.transcript, side)
        return sorted({float(line["start_s"]) for line in self.transcript["lines"] if line["speaker"] == label})


@dataclass
class Verdict:
    label: str  # canonical label, or "invalid"
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.label != INVALID


Row = dict[str, Any]  # {"side", "measure", "value", "label"}


def normalise(text: str) -> str:
    """Case, surrounding quotes/markdown and a final full stop removed; inner spacing collapsed."""
    text = text.strip().strip("*_`\"'\u201c\u201d\u2018\u2019 ").rstrip(".").strip("*_`\"'\u201c\u201d\u2018\u2019 ")
    return " ".join(text.casefold().split())


def _answer_lines(reply: str, key: str) -> list[str]:
    pattern = re.compile(rf"^[\s*_#>`-]*{key}[\s*_`]*:[\s*_`]*(.*?)\s*$", re.IGNORECASE)
    return [m.group(1) for m in (pattern.match(line) for line in reply.splitlines()) if m]


def answer_value(reply: str, key: str = "ANSWER") -> str | None:
    """The value of the last ``KEY: value`` line, or the whole reply if it is a single bare line."""
    found = _answer_lines(reply, key)
    if found:
        return found[-1]
    lines = [line for line in reply.strip().splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 else None


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _gbnf_choice(options: Sequence[str]) -> str:
    return "(" + " | ".join(_gbnf_literal(o) for o in options) + ")"


def _fmt_time(t: float) -> str:
    return f"{t:.2f}"


class Question:
    """A closed question; subclasses define labels, parsing and the rows it yields.

    measures: each measure its rows carry -> its kind (MEASURE_KINDS), in row order.
    needs_clock: the question asks about times (left out of the text-only pairing, which has none).
    """

    id: str = ""
    archetypes: tuple[str, ...] = ()
    measures: Mapping[str, str] = {}
    needs_clock: bool = False

    def seats(self, archetype: str) -> list[str | None]:
        return [None]

    def row_sides(self, ctx: Context) -> tuple[str, ...]:
        return ("a", "b")

    def placeholders(self, ctx: Context) -> dict[str, str]:
        values = {"situation": ctx.scenario.situation.strip(), "transcript": ctx.transcript_text.rstrip(),
                  "answer_format": self.answer_format(ctx)}
        if ctx.seat is not None:
            other = "b" if ctx.seat == "a" else "a"
            values.update(speaker=ctx.speaker(ctx.seat), partner=ctx.speaker(other),
                          role_prompt=ctx.scenario.sides[ctx.seat]["prompt"].strip(),
                          partner_role_prompt=ctx.scenario.sides[other]["prompt"].strip())
        values.update(self.extra_placeholders(ctx))
        return values

    def extra_placeholders(self, ctx: Context) -> dict[str, str]:
        return {}

    def placeholder_names(self) -> set[str]:
        """Every placeholder a template of this question may use (for checking templates early)."""
        names = {"situation", "transcript", "answer_format"} | set(self._extra_names)
        if any(s is not None for a in self.archetypes for s in self.seats(a)):
            names |= {"speaker", "partner", "role_prompt", "partner_role_prompt"}
        return names

    _extra_names: tuple[str, ...] = ()

    def answer_format(self, ctx: Context) -> str:
        raise NotImplementedError

    def reminder(self, ctx: Context) -> str:
        return ("Your reply did not end with a valid answer. Reply again, ending with exactly this, choosing "
                f"one of the allowed values and nothing else:\n{self.answer_format(ctx)}")

    def parse(self, reply: str, ctx: Context) -> Verdict | None:
        raise NotImplementedError

    def gbnf(self, ctx: Context) -> str:
        raise NotImplementedError

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        raise NotImplementedError


class LabelQuestion(Question):
    """``ANSWER: <label>`` from a fixed or scenario-given label set."""

    def labels_for(self, answer_key: Mapping[str, Any]) -> list[str]:
        """The allowed labels, given the scenario's answer key (a rater's options too)."""
        raise NotImplementedError

    def labels(self, ctx: Context) -> list[str]:
        return self.labels_for(ctx.scenario.answer_key)

    def answer_format(self, ctx: Context) -> str:
        return "ANSWER: <one of: " + " | ".join(self.labels(ctx)) + ">"

    def parse(self, reply: str, ctx: Context) -> Verdict | None:
        value = answer_value(reply)
        if value is None:
            return None
        wanted = normalise(value)
        for label in self.labels(ctx):
            if normalise(label) == wanted:
                return Verdict(label)
        return None

    def gbnf(self, ctx: Context) -> str:
        return f'root ::= "ANSWER: " {_gbnf_choice(self.labels(ctx))}'

    def _rows(self, ctx: Context, verdict: Verdict, make: Callable[[str, str], dict[str, Any]]) -> list[Row]:
        out: list[Row] = []
        for side in self.row_sides(ctx):
            for measure, value in make(side, verdict.label).items():
                out.append({"side": side, "measure": measure,
                            "value": value if verdict.valid else None, "label": verdict.label})
        return out


def _holder_seats(archetype: str) -> list[str | None]:
    """T1-1 judges both sides (one call each); T1-2 only the role holder (side a)."""
    return ["a", "b"] if archetype == "T1-1" else ["a"]


@question("role_adherence")
class RoleAdherence(LabelQuestion):
    archetypes = ("T1-1", "T1-2")
    measures = {"role_adherence": "label", "in_role": "flag"}
    SCALE = {"yes": 2, "partly": 1, "no": 0}

    def seats(self, archetype: str) -> list[str | None]:
        return _holder_seats(archetype)

    def row_sides(self, ctx: Context) -> tuple[str, ...]:
        return (ctx.seat,)

    def labels_for(self, answer_key: Mapping[str, Any]) -> list[str]:
        return ["yes", "partly", "no"]

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        return self._rows(ctx, verdict, lambda side, label: {
            "role_adherence": self.SCALE.get(label), "in_role": int(label in ("yes", "partly"))})


@question("role_timing")
class RoleTiming(Question):
    archetypes = ("T1-1", "T1-2")
    measures = {"role_entry_s": "label", "role_deviation_s": "label"}
    needs_clock = True

    def seats(self, archetype: str) -> list[str | None]:
        return _holder_seats(archetype)

    def answer_format(self, ctx: Context) -> str:
        return ("ENTRY: <start time of that speaker's first in-role line, or none>\n"
                "DEVIATION: <start time of its first off-role line after entry, or none>")

    def _time(self, value: str, allowed: list[float]) -> float | str | None:
        v = normalise(value)
        if v == NONE:
            return NONE
        m = re.fullmatch(r"\[?(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)?\]?", v)
        if not m:
            return None
        t = float(m.group(1))
        for a in allowed:
            if abs(a - t) < 0.005:
                return a
        return None

    def parse(self, reply: str, ctx: Context) -> Verdict | None:
        entry_lines, dev_lines = _answer_lines(reply, "ENTRY"), _answer_lines(reply, "DEVIATION")
        if not entry_lines or not dev_lines:
            return None
        allowed = ctx.start_times(ctx.seat or "a")
        entry, deviation = self._time(entry_lines[-1], allowed), self._time(dev_lines[-1], allowed)
        if entry is None or deviation is None:
            return None
        if entry == NONE and deviation != NONE:
            return None
        if entry != NONE and deviation != NONE and not deviation > entry:
            return None
        shown = [v if v == NONE else _fmt_time(v) for v in (entry, deviation)]
        label = f"entry={shown[0]};deviation={shown[1]}"
        return Verdict(label, {"entry_s": None if entry == NONE else entry,
                               "deviation_s": None if deviation == NONE else deviation})

    def gbnf(self, ctx: Context) -> str:
        # Only consistent pairs: entry none forces deviation none; a deviation comes after its entry.
        times = [_fmt_time(t) for t in ctx.start_times(ctx.seat or "a")]
        pairs = ['"ENTRY: none\\nDEVIATION: none"']
        for i, entry in enumerate(times):
            pairs.append(f'"ENTRY: {entry}\\nDEVIATION: " {_gbnf_choice([NONE, *times[i + 1:]])}')
        return "root ::= " + " | ".join(pairs)

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        side = ctx.seat or "a"
        if not verdict.valid:
            return [{"side": side, "measure": m, "value": None, "label": INVALID} for m in self.measures]
        out = []
        for measure, key in (("role_entry_s", "entry_s"), ("role_deviation_s", "deviation_s")):
            value = verdict.fields[key]
            out.append({"side": side, "measure": measure, "value": value,
                        "label": NONE if value is None else _fmt_time(value)})
        return out


class YesNo(LabelQuestion):
    """yes / no about side a, written as its one measure (1 for yes)."""

    def labels_for(self, answer_key: Mapping[str, Any]) -> list[str]:
        return ["yes", "no"]

    def row_sides(self, ctx: Context) -> tuple[str, ...]:
        return ("a",)

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        measure = next(iter(self.measures))
        return self._rows(ctx, verdict, lambda side, label: {measure: int(label == "yes")})


@question("final_choice")
class FinalChoice(LabelQuestion):
    archetypes = ("T2",)
    measures = {"final_choice": "choice", "decided": "flag", "solved": "flag"}
    _extra_names = ("candidates",)

    def labels_for(self, answer_key: Mapping[str, Any]) -> list[str]:
        return [*answer_key["candidates"], NONE]

    def extra_placeholders(self, ctx: Context) -> dict[str, str]:
        return {"candidates": "\n".join(f"- {c}" for c in ctx.scenario.answer_key["candidates"])}

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        answer = ctx.scenario.answer_key["answer"]
        return self._rows(ctx, verdict, lambda side, label: {
            "final_choice": None, "decided": int(label != NONE), "solved": int(label == answer)})


class AboutSideA(YesNo):
    """A yes/no about side a's conduct. ``names``: what its template calls side a and side b (their
    roles: ``{presser}``, ``{avoider}``), then the answer-key fields it shows (``{action}``); it also
    gets side a's role prompt as ``{<side a's role>_prompt}``."""

    names: tuple[str, ...] = ("", "")

    @property
    def _extra_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return (*self.names, f"{self.names[0]}_prompt")

    def extra_placeholders(self, ctx: Context) -> dict[str, str]:
        side_a, side_b, *fields = self.names
        return {side_a: ctx.speaker("a"), side_b: ctx.speaker("b"),
                f"{side_a}_prompt": ctx.scenario.sides["a"]["prompt"].strip(),
                **{k: str(ctx.scenario.answer_key.get(k, "")) for k in fields}}


@question("request_asked")
class RequestAsked(AboutSideA):
    archetypes = ("T3-2",)
    measures = {"asked": "yes/no"}
    names = ("presser", "avoider", "action")


@question("request_granted")
class RequestGranted(RequestAsked):
    measures = {"agreement": "yes/no"}


@question("landed_option")
class LandedOption(LabelQuestion):
    archetypes = ("T4-1",)
    measures = {"landed_option": "choice", "decided": "flag", "won": "flag"}
    _extra_names = ("options",)

    def labels_for(self, answer_key: Mapping[str, Any]) -> list[str]:
        options = answer_key["options"]
        return [options["a"], options["b"], NONE]

    def extra_placeholders(self, ctx: Context) -> dict[str, str]:
        options = ctx.scenario.answer_key["options"]
        return {"options": f"- {options['a']}\n- {options['b']}"}

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        options = ctx.scenario.answer_key["options"]
        return self._rows(ctx, verdict, lambda side, label: {
            "landed_option": None, "decided": int(label != NONE), "won": int(label == options[side])})


@question("secret_asked")
class SecretAsked(AboutSideA):
    archetypes = ("T4-2",)
    measures = {"asked": "yes/no"}
    names = ("attacker", "defender", "pretext")


@question("landed_line")
class LandedLine(LandedOption):
    archetypes = ("T4-3",)


_CURRENCY_WORDS = {"dollar", "dollars", "usd", "euro", "euros", "eur", "pound", "pounds", "gbp", "bucks"}


@question("agreed_price")
class AgreedPrice(Question):
    archetypes = ("T4-4",)
    measures = {"agreed_price": "label", "deal": "flag", "gap_share": "number"}
    _extra_names = ("currency", "seller", "buyer")

    def extra_placeholders(self, ctx: Context) -> dict[str, str]:
        return {"currency": str(ctx.scenario.answer_key["currency"]), "seller": ctx.speaker("a"),
                "buyer": ctx.speaker("b")}

    def answer_format(self, ctx: Context) -> str:
        return "ANSWER: <the agreed price as a plain number, or none>"

    def parse(self, reply: str, ctx: Context) -> Verdict | None:
        value = answer_value(reply)
        if value is None:
            return None
        v = normalise(value)
        if v == NONE:
            return Verdict(NONE, {"price": None})
        currency = {w for w in normalise(str(ctx.scenario.answer_key["currency"])).split()} | _CURRENCY_WORDS
        m = re.fullmatch(r"[$\u20ac\u00a3\u00a5]?\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*([a-z]+)?", v)
        if not m or (m.group(3) and m.group(3) not in currency):
            return None
        whole, frac = m.group(1).replace(",", ""), (m.group(2) or "").rstrip("0")
        number = float(f"{whole}.{frac}") if frac else int(whole)
        label = f"{whole}.{frac}" if frac else str(int(whole))
        return Verdict(label, {"price": number, "in_transcript": price_in_text(label, ctx.transcript_text)})

    def gbnf(self, ctx: Context) -> str:
        # At most nine digits, so a small model cannot run on to the token limit.
        return 'root ::= "ANSWER: " ("none" | [1-9] ' + "[0-9]? " * 8 + ")"

    def rows(self, verdict: Verdict, ctx: Context) -> list[Row]:
        if not verdict.valid:
            return [{"side": s, "measure": m, "value": None, "label": INVALID} for s in "ab" for m in self.measures]
        price = verdict.fields.get("price")
        deal = price is not None and bool(verdict.fields.get("in_transcript"))
        key = ctx.scenario.answer_key
        gap = float(key["seller_opening"]) - float(key["buyer_opening"])
        seller_share = (float(price) - float(key["buyer_opening"])) / gap if deal and gap else None
        out = []
        for side in ("a", "b"):
            share = None if seller_share is None else (seller_share if side == "a" else 1.0 - seller_share)
            out += [{"side": side, "measure": "agreed_price", "value": price if deal else None, "label": verdict.label},
                    {"side": side, "measure": "deal", "value": int(deal), "label": verdict.label},
                    {"side": side, "measure": "gap_share", "value": share, "label": verdict.label}]
        return out


def price_in_text(number: str, text: str) -> bool:
    """Whether ``number`` (canonical digits) appears in ``text`` as digits or said aloud."""
    whole, _, frac = number.partition(".")
    grouped = f"{int(whole):,}" if whole.isdigit() else whole
    body = "(?:" + re.escape(whole) + "|" + re.escape(grouped) + ")" + (r"\." + re.escape(frac) if frac else r"(?:\.0+)?")
    if re.search(r"(?<![\d.,])" + body + r"(?![\d]|[.,]\d)", text):
        return True
    from dyafdb.suite.secret_match import find_secret

    return find_secret(number, text) is not None


@derived
def questions() -> dict[str, Question]:
    """Every declared question, id -> instance, in declaration order (this module's in source order,
    then an installed package's): the judge plan's, the annotation page's and the tables' order."""
    return {name: d.resolve()() for name, d in declared("question").items()}


def __getattr__(name: str) -> Any:
    # QUESTIONS is the registry as it stands (a question added by a plugin shows up without a reload)
    if name == "QUESTIONS":
        return questions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def questions_for(archetype: str) -> list[Question]:
    return [q for q in questions().values() if archetype in q.archetypes]


@derived
def judged_measures(labelled: bool = False) -> tuple[str, ...]:
    """Every measure a question writes, in declaration order, once each; ``labelled``: only those
    whose label the judge chose itself (CHOSEN_KINDS), not those derived from it."""
    return tuple(dict.fromkeys(m for q in questions().values() for m, kind in q.measures.items()
                               if not labelled or kind in CHOSEN_KINDS))


@derived
def measures_of_kind(*kinds: str) -> frozenset[str]:
    """The judged measures of these kinds (MEASURE_KINDS), e.g. the 1/0 ones a page shows as yes/no."""
    return frozenset(m for q in questions().values() for m, kind in q.measures.items() if kind in kinds)


def judge_plan(archetypes: Sequence[str]) -> list[tuple[str, str]]:
    """(archetype, question) pairs to judge for these archetypes, in a stable order."""
    return [(a, q.id) for a in archetypes for q in questions_for(a)]
