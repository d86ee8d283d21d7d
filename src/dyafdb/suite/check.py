"""Suite-level checks of the scenario files beyond what the schema and the loader enforce.

``check_suite(root)`` reads every ``<root>/<ARCHETYPE>/*.yaml`` and returns one :class:`Problem`
per broken rule, each naming the file and the rule id; ``dyafdb suite check`` prints them.
The rules are listed in :data:`RULES` and explained in ``scenarios/README.md``.

Text comparisons ("a prompt contains X") are made on folded tokens: case, accents, punctuation
and spacing are ignored and X must appear as whole words, in order ("Willow" is not found in
"Willowbrook"). T4-2 secrets and T4-4 prices are found with :mod:`dyafdb.suite.secret_match`, so a
number is also found when written in words ("four fifty" for 450).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from dyafdb.suite.scenarios import ARCHETYPES, OPENER_LINE, PROMPT_WORDS, SIDES, Scenario, load_scenario
from dyafdb.errors import InputError
from dyafdb.schema_check import read_yaml
from dyafdb.suite.secret_match import find_secret, secret_pattern, tokens

SUITE_SIZE = 20  # scenarios per archetype (Appendix B)
SITUATION_WORDS = (20, 80)  # inclusive range for the shared situation

# Names of speech/language models (and the paper's judges) that must not reach a model's prompt.
MODEL_NAMES = (
    "personaplex", "minicpm", "raon", "moshi", "qwen", "gpt", "chatgpt", "claude", "whisper",
    "llama", "gemini", "gemma", "mistral", "lychee", "dgslm", "mimi", "opus", "sonnet",
)
_MODEL_RE = re.compile(r"\b(" + "|".join(MODEL_NAMES) + r")(?![a-z])", re.IGNORECASE)

# Words too common to count as the key content of a T2 elimination reason.
_STOPWORDS = frozenset(
    "about after also been before being from have into just only other over some than that their "
    "them then there they this those were what when which while will with would your yours".split()
)

# The instruction that must come after the defender's secret is stated.
_NEVER_RE = re.compile(r"\b(never|do not|don't|must not|mustn't)\b", re.IGNORECASE)

RULES: dict[str, str] = {
    "count": f"each archetype folder holds exactly {SUITE_SIZE} scenario files",
    "load": "the file loads: valid YAML, valid against scenario.schema.yaml, and passes the loader (folder, id, file name, roles)",
    "duplicate-id": "no two files declare the same id",
    "duplicate-title": "no two scenarios of one archetype share a title",
    "word-range": f"every side prompt has {PROMPT_WORDS[0]}-{PROMPT_WORDS[1]} words",
    "situation-range": f"the situation has {SITUATION_WORDS[0]}-{SITUATION_WORDS[1]} words",
    "prompt-form": "a prompt starts with 'You are' and never contains the opener line, which is appended at design time",
    "names": "the two sides have different names",
    "model-name": "no title, situation, name, persona or prompt names a model (" + ", ".join(MODEL_NAMES) + ")",
    "situation-private": "the shared situation holds neither side's private content (T1-2 topic, T2 reasons, T3-1 points, T4-4 openings; T4-2 see t4-2-secret-leak)",
    "t1-topic": "T1-2 names answer_key.digression_topic and side b's prompt contains it; T1-1 has none",
    "t2-answer": "T2 answer is one of the five candidates",
    "t2-elimination": "every T2 elimination names a real candidate other than the answer, each candidate at most once",
    "t2-survivor": "the union of both sides' eliminations leaves exactly one candidate, the answer",
    "t2-situation": "the T2 situation names all five candidates",
    "t2-own-reason": "each T2 side's prompt names its two eliminated candidates and states both reasons",
    "t2-partner-reason": "no T2 side's prompt contains the partner's reasons (the reason phrase, or every key word of it)",
    "t2-other-candidate": "a T2 side's prompt names no candidate besides its own two eliminations",
    "t3-1-points": "each T3-1 side's prompt contains its own three points",
    "t3-1-partner-points": "no T3-1 side's prompt contains a point of the partner",
    "t3-1-cut-in": "each T3-1 prompt tells the side to cut in (contains 'cut in')",
    "t3-2-action": "the T3-2 presser's prompt names the action it needs permission for",
    "t4-1-option": "T4-1 options differ and each appears in the prompt of the side that pushes it (a: side a)",
    "options-situation": "T4-1/T4-3: the situation names both options, so both sides know what the choice is between",
    "t4-2-unmatchable": "the T4-2 secret can be matched (dyafdb.suite.secret_match) and is found in the defender's prompt",
    "t4-2-secret-leak": "the T4-2 secret appears nowhere but the defender's prompt (not in title, situation, names, personas, attacker prompt, pretext)",
    "t4-2-secret-order": "the defender's prompt states the secret before its first 'never'/'do not' instruction, and has one",
    "t4-2-pretext": "the T4-2 pretext appears in the attacker's prompt",
    "t4-3-option": "T4-3 lines differ and each appears in its pusher's prompt (a: claimant's larger line, b: payer's smaller line)",
    "t4-4-openings": "the T4-4 seller opening is above the buyer opening",
    "t4-4-own-opening": "each T4-4 side's prompt states its own opening price",
    "t4-4-partner-opening": "no T4-4 side's prompt states the partner's opening price",
}


@dataclass(frozen=True)
class Problem:
    path: Path
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: [{self.rule}] {self.message}"


# ---------------------------------------------------------------- text helpers


@lru_cache(maxsize=8192)
def _norm(text: str) -> str:
    return " " + " ".join(t for t, _s, _e in tokens(text)) + " "


def contains(text: str, phrase: str) -> bool:
    """Whether ``phrase`` appears in ``text`` as whole words, ignoring case and punctuation."""
    needle = _norm(phrase)
    return needle.strip() != "" and needle in _norm(text)


def key_words(phrase: str, exclude: Iterable[str] = ()) -> set[str]:
    """Content words of a phrase: 4+ letters, not a stopword, not in ``exclude`` (folded)."""
    skip = {t for e in exclude for t, _s, _e in tokens(e)}
    return {t for t, _s, _e in tokens(phrase) if len(t) >= 4 and t.isalpha() and t not in _STOPWORDS and t not in skip}


def leaks_phrase(text: str, phrase: str, exclude: Iterable[str] = ()) -> bool:
    """``text`` holds ``phrase`` itself, or every key word of it."""
    if contains(text, phrase):
        return True
    words = key_words(phrase, exclude)
    have = set(_norm(text).split())
    return bool(words) and words <= have


def mentions_amount(amount: float, text: str) -> bool:
    """``text`` states the number ``amount`` (digits with or without thousands commas, or words)."""
    for raw in re.findall(r"\d[\d,]*(?:\.\d+)?", text):
        try:
            if float(raw.replace(",", "")) == float(amount):
                return True
        except ValueError:
            continue
    if float(amount).is_integer():
        return find_secret(str(int(amount)), text) is not None
    return False


def word_count(text: str) -> int:
    return len(text.split())


# ---------------------------------------------------------------- the check


def check_suite(root: Path, suite_size: int = SUITE_SIZE) -> list[Problem]:
    """Every rule broken by the suite under ``root``; an empty list means the suite is clean.

    ``suite_size`` is the number of scenarios each archetype folder must hold (20 for the benchmark).
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: no scenario folder here; pass --root <folder holding T1-1/ ... T4-4/>")
    problems: list[Problem] = []
    declared: dict[str, Path] = {}
    titles: dict[tuple[str, str], Path] = {}
    for archetype in ARCHETYPES:
        folder = root / archetype
        files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        if len(files) != suite_size:
            where = "" if folder.is_dir() else " (folder missing)"
            problems.append(Problem(folder, "count", f"archetype {archetype} has {len(files)} scenario files{where}; it needs exactly {suite_size}"))
        for path in files:
            try:
                scenario = load_scenario(path)
            except InputError as exc:
                problems.append(Problem(path, "load", str(exc).replace(f"{path}: ", "", 1)))
                problems += _check_duplicates(path, _raw_mapping(path), declared, titles)
                continue
            problems += _check_duplicates(path, {"id": scenario.id, "title": scenario.title}, declared, titles)
            problems += check_scenario(scenario)
    return problems


def _raw_mapping(path: Path) -> dict[str, Any]:
    """The file's top-level mapping as far as it parses (for the duplicate rules of a file that fails to load)."""
    try:
        data = read_yaml(path)
    except InputError:
        return {}
    return data if isinstance(data, dict) else {}


def _check_duplicates(path: Path, data: dict[str, Any], declared: dict[str, Path], titles: dict[tuple[str, str], Path]) -> list[Problem]:
    out: list[Problem] = []
    sid = data.get("id")
    if isinstance(sid, str):
        if sid in declared:
            out.append(Problem(path, "duplicate-id", f"id {sid!r} is already declared by {declared[sid]}"))
        else:
            declared[sid] = path
    title = data.get("title")
    if isinstance(title, str):
        key = (path.parent.name, " ".join(title.lower().split()))
        if key in titles:
            out.append(Problem(path, "duplicate-title", f"title {title!r} is already used by {titles[key]} in {path.parent.name}"))
        else:
            titles[key] = path
    return out


def check_scenario(s: Scenario) -> list[Problem]:
    """The rules that concern one loaded scenario."""
    out: list[Problem] = []

    def fail(rule: str, message: str) -> None:
        out.append(Problem(s.path, rule, message))

    lo, hi = PROMPT_WORDS
    for side in SIDES:
        prompt = s.sides[side]["prompt"]
        n = word_count(prompt)
        if not lo <= n <= hi:
            fail("word-range", f"sides.{side}.prompt has {n} words; keep it within {lo}-{hi}")
        if not prompt.lstrip().startswith("You are"):
            fail("prompt-form", f"sides.{side}.prompt must be second person and start with 'You are'")
        if contains(prompt, OPENER_LINE) or contains(prompt, "You speak first"):
            fail("prompt-form", f"sides.{side}.prompt contains the opener line; it is appended at design time, remove it")
    n = word_count(s.situation)
    if not SITUATION_WORDS[0] <= n <= SITUATION_WORDS[1]:
        fail("situation-range", f"situation has {n} words; keep it within {SITUATION_WORDS[0]}-{SITUATION_WORDS[1]}")
    if s.sides["a"]["name"].strip().lower() == s.sides["b"]["name"].strip().lower():
        fail("names", f"both sides are called {s.sides['a']['name']!r}; give them different names")
    for field, text in _spoken_fields(s):
        m = _MODEL_RE.search(text)
        if m:
            fail("model-name", f"{field} names a model ({m.group()!r}); remove it")
    out += CHECKS.get(s.archetype, _no_extra)(s)
    return out


def _spoken_fields(s: Scenario) -> list[tuple[str, str]]:
    fields = [("title", s.title), ("situation", s.situation)]
    for side in SIDES:
        for key in ("name", "persona", "prompt"):
            if s.sides[side].get(key):
                fields.append((f"sides.{side}.{key}", s.sides[side][key]))
    return fields


def _no_extra(s: Scenario) -> list[Problem]:
    return []


def _prompt(s: Scenario, side: str) -> str:
    return s.sides[side]["prompt"]


def _check_t1(s: Scenario) -> list[Problem]:
    topic = s.answer_key.get("digression_topic")
    if s.archetype == "T1-1":
        if topic is not None:
            return [Problem(s.path, "t1-topic", "T1-1 has no digresser; remove answer_key.digression_topic")]
        return []
    if not isinstance(topic, str) or not topic.strip():
        return [Problem(s.path, "t1-topic", "T1-2 needs answer_key.digression_topic: what side b keeps steering to")]
    out = []
    if not contains(_prompt(s, "b"), topic):
        out.append(Problem(s.path, "t1-topic", f"answer_key.digression_topic {topic!r} does not appear in sides.b.prompt"))
    if contains(s.situation, topic):
        out.append(Problem(s.path, "situation-private", f"situation mentions the digression topic {topic!r}; keep it in side b's prompt"))
    return out


def _check_t2(s: Scenario) -> list[Problem]:
    out: list[Problem] = []

    def fail(rule: str, message: str) -> None:
        out.append(Problem(s.path, rule, message))

    key = s.answer_key
    candidates: list[str] = key["candidates"]
    answer: str = key["answer"]
    elims: dict[str, list[dict[str, str]]] = key["eliminations"]
    if answer not in candidates:
        fail("t2-answer", f"answer {answer!r} is not one of the candidates {candidates}")
    seen: dict[str, str] = {}
    for side in SIDES:
        for i, e in enumerate(elims[side]):
            c = e["candidate"]
            if c not in candidates:
                fail("t2-elimination", f"eliminations.{side}[{i}] names {c!r}, which is not a candidate ({', '.join(candidates)})")
            elif c == answer:
                fail("t2-elimination", f"eliminations.{side}[{i}] eliminates the answer {c!r}")
            elif c in seen:
                fail("t2-elimination", f"eliminations.{side}[{i}] eliminates {c!r} again (already by side {seen[c]}); each side must rule out different candidates")
            else:
                seen[c] = side
    survivors = [c for c in candidates if c not in {e["candidate"] for side in SIDES for e in elims[side]}]
    if survivors != [answer]:
        fail("t2-survivor", f"both sides' eliminations together leave {survivors or 'no candidate'}; they must leave exactly the answer {answer!r}")
    missing = [c for c in candidates if not contains(s.situation, c)]
    if missing:
        fail("t2-situation", f"situation does not name the candidate(s) {', '.join(missing)}; both sides must know all five")
    for side in SIDES:
        other = "b" if side == "a" else "a"
        prompt = _prompt(s, side)
        own = [e["candidate"] for e in elims[side]]
        for e in elims[side]:
            if not contains(prompt, e["candidate"]):
                fail("t2-own-reason", f"sides.{side}.prompt does not name {e['candidate']!r}, which side {side} eliminates")
            if not contains(prompt, e["reason"]):
                fail("t2-own-reason", f"sides.{side}.prompt does not state the reason {e['reason']!r} for eliminating {e['candidate']!r}")
        for e in elims[other]:
            if leaks_phrase(prompt, e["reason"], exclude=candidates):
                fail("t2-partner-reason", f"sides.{side}.prompt contains side {other}'s reason {e['reason']!r} (for {e['candidate']!r}); only side {other} may know it")
        for c in candidates:
            if c not in own and contains(prompt, c):
                fail("t2-other-candidate", f"sides.{side}.prompt names {c!r}; a side's prompt names only the two candidates it eliminates")
        for e in elims[side]:
            if leaks_phrase(s.situation, e["reason"], exclude=candidates):
                fail("situation-private", f"situation contains side {side}'s reason {e['reason']!r}; keep it in that side's prompt")
    return out


def _check_t3_1(s: Scenario) -> list[Problem]:
    out: list[Problem] = []
    points = s.answer_key["points"]
    for side in SIDES:
        other = "b" if side == "a" else "a"
        prompt = _prompt(s, side)
        for p in points[side]:
            if not contains(prompt, p):
                out.append(Problem(s.path, "t3-1-points", f"sides.{side}.prompt lacks its point {p!r}"))
            if contains(s.situation, p):
                out.append(Problem(s.path, "situation-private", f"situation contains side {side}'s point {p!r}"))
        for p in points[other]:
            if contains(prompt, p):
                out.append(Problem(s.path, "t3-1-partner-points", f"sides.{side}.prompt contains side {other}'s point {p!r}"))
        if not contains(prompt, "cut in"):
            out.append(Problem(s.path, "t3-1-cut-in", f"sides.{side}.prompt must tell the side to cut in rather than wait for a gap (say 'cut in')"))
    return out


def _check_t3_2(s: Scenario) -> list[Problem]:
    action = s.answer_key["action"]
    if not contains(_prompt(s, "a"), action):
        return [Problem(s.path, "t3-2-action", f"the presser's prompt (sides.a.prompt) does not name the action {action!r}")]
    return []


def _check_options(s: Scenario) -> list[Problem]:
    rule = "t4-1-option" if s.archetype == "T4-1" else "t4-3-option"
    options = s.answer_key["options"]
    out: list[Problem] = []
    if _norm(options["a"]) == _norm(options["b"]):
        out.append(Problem(s.path, rule, f"options.a and options.b are the same ({options['a']!r})"))
    for side in SIDES:
        if not contains(_prompt(s, side), options[side]):
            out.append(Problem(s.path, rule, f"options.{side} {options[side]!r} does not appear in sides.{side}.prompt, the side that pushes it"))
        if not contains(s.situation, options[side]):
            out.append(Problem(s.path, "options-situation", f"situation does not name options.{side} {options[side]!r}; name both options there"))
    return out


def _check_t4_2(s: Scenario) -> list[Problem]:
    out: list[Problem] = []

    def fail(rule: str, message: str) -> None:
        out.append(Problem(s.path, rule, message))

    secret = s.answer_key["secret"]
    pretext = s.answer_key["pretext"]
    try:
        pattern = secret_pattern(secret)
    except ValueError as exc:
        fail("t4-2-unmatchable", str(exc))
        return out
    if pattern.search(secret) is None:
        fail("t4-2-unmatchable", f"secret {secret!r} does not match its own text; simplify it (see dyafdb.suite.secret_match)")
        return out
    defender = _prompt(s, "b")
    hit = pattern.search(defender)
    if hit is None:
        fail("t4-2-unmatchable", f"the secret {secret!r} is not found in the defender's prompt (sides.b.prompt); state it there as a plain fact")
    else:
        never = _NEVER_RE.search(defender)
        if never is None:
            fail("t4-2-secret-order", "the defender's prompt never tells it not to reveal the secret (no 'never'/'do not')")
        elif never.start() < hit.start:
            fail("t4-2-secret-order", f"the defender's prompt says {never.group()!r} before stating the secret; state the secret first, then the instruction")
    fields = [("title", s.title), ("situation", s.situation), ("sides.a.prompt", _prompt(s, "a")), ("answer_key.pretext", pretext)]
    for side in SIDES:
        for key in ("name", "persona"):
            if s.sides[side].get(key):
                fields.append((f"sides.{side}.{key}", s.sides[side][key]))
    for field, text in fields:
        m = pattern.search(text)
        if m:
            fail("t4-2-secret-leak", f"{field} contains the secret ({m.text!r}); only the defender's prompt may hold it")
    if not contains(_prompt(s, "a"), pretext):
        fail("t4-2-pretext", f"answer_key.pretext {pretext!r} does not appear in the attacker's prompt (sides.a.prompt)")
    return out


def _check_t4_4(s: Scenario) -> list[Problem]:
    out: list[Problem] = []
    key = s.answer_key
    openings = {"a": key["seller_opening"], "b": key["buyer_opening"]}
    label = {"a": "seller_opening", "b": "buyer_opening"}
    if not openings["a"] > openings["b"]:
        out.append(Problem(s.path, "t4-4-openings", f"seller_opening {openings['a']} must be above buyer_opening {openings['b']}"))
    for side in SIDES:
        other = "b" if side == "a" else "a"
        prompt = _prompt(s, side)
        if not mentions_amount(openings[side], prompt):
            out.append(Problem(s.path, "t4-4-own-opening", f"sides.{side}.prompt does not state its own opening {label[side]} = {openings[side]}"))
        if openings[other] != openings[side] and mentions_amount(openings[other], prompt):
            out.append(Problem(s.path, "t4-4-partner-opening", f"sides.{side}.prompt states the partner's {label[other]} = {openings[other]}; only side {other} may know it"))
        if mentions_amount(openings[side], s.situation):
            out.append(Problem(s.path, "situation-private", f"situation states the {label[side]} {openings[side]}"))
    return out


CHECKS: dict[str, Any] = {
    "T1-1": _check_t1,
    "T1-2": _check_t1,
    "T2": _check_t2,
    "T3-1": _check_t3_1,
    "T3-2": _check_t3_2,
    "T4-1": _check_options,
    "T4-2": _check_t4_2,
    "T4-3": _check_options,
    "T4-4": _check_t4_4,
}
