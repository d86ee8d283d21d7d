"""`dyafdb suite check`: one test per rule, each breaking a small valid suite in a tmp dir."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from dyafdb.suite import check as scenario_check
from dyafdb.cli import main
from dyafdb.suite.check import PROMPT_WORDS, RULES, Problem, check_suite
from dyafdb.suite.scenarios import ARCHETYPES

REPO = Path(__file__).resolve().parents[2]
REAL_SUITE = REPO / "scenarios"

FILLER = "Speak naturally, in short spoken sentences, the way this person would talk in this place, and react to what you hear."
SITUATION_FILLER = "It is a weekday afternoon and the place is quiet apart from the two of them."


def prompt(core: str) -> str:
    """A valid prompt: ``core`` plus neutral filler up to at least the minimum word count."""
    text = core
    while len(text.split()) < PROMPT_WORDS[0]:
        text += " " + FILLER
    return text


def situation(core: str) -> str:
    return core + " " + SITUATION_FILLER


def side(role: str, name: str, core: str) -> dict[str, Any]:
    return {"role": role, "name": name, "persona": role, "prompt": prompt(core)}


# One small valid scenario per archetype; every test breaks exactly one of them.
FIXTURES: dict[str, dict[str, Any]] = {
    "T1-1": {
        "id": "t1-1-fixture-clinic", "archetype": "T1-1", "title": "Fixture clinic",
        "situation": situation("A doctor and a patient sit in a small consulting room in a town health centre."),
        "sides": {
            "a": side("holder", "Dr Ames", "You are Dr Ames, a family doctor. Take the patient's history and explain what happens next. Stay in role."),
            "b": side("holder", "Bo", "You are Bo, a patient with a sore knee. Describe it and ask questions. Stay in role."),
        },
        "answer_key": {},
    },
    "T1-2": {
        "id": "t1-2-fixture-kitchen", "archetype": "T1-2", "title": "Fixture kitchen",
        "situation": situation("A cook stands at the stove of a small kitchen while a neighbour leans in the doorway."),
        "sides": {
            "a": side("holder", "Cal", "You are Cal, a cook rescuing a split sauce. Talk through each step and stay in role."),
            "b": side("digresser", "Di", "You are Di, the neighbour. Keep steering the talk back to the lost umbrella, whatever the cook says."),
        },
        "answer_key": {"digression_topic": "the lost umbrella"},
    },
    "T2": {
        "id": "t2-fixture-rooms", "archetype": "T2", "title": "Fixture rooms",
        "situation": situation("Two band members book one rehearsal room. The rooms are Willow, Maple, Birch, Cedar and Rowan."),
        "sides": {
            "a": side("pooler", "Ed", "You are Ed, the drummer. Maple has a ceiling leak and Birch is being repainted. Share this and agree on one room."),
            "b": side("pooler", "Flo", "You are Flo, the bassist. Cedar is booked by a choir and Rowan is booked for a recording session. Share this and agree on one room."),
        },
        "answer_key": {
            "candidates": ["Willow", "Maple", "Birch", "Cedar", "Rowan"], "answer": "Willow",
            "eliminations": {
                "a": [{"candidate": "Maple", "reason": "ceiling leak"}, {"candidate": "Birch", "reason": "being repainted"}],
                "b": [{"candidate": "Cedar", "reason": "booked by a choir"}, {"candidate": "Rowan", "reason": "booked for a recording session"}],
            },
        },
    },
    "T3-1": {
        "id": "t3-1-fixture-stands", "archetype": "T3-1", "title": "Fixture stands",
        "situation": situation("Two stands at a trade show share one microphone for one minute in front of a crowd."),
        "sides": {
            "a": side("presser", "Gil", "You are Gil, selling a kettle. Say that it boils in one minute, it is silent, and it is made of glass. Cut in rather than wait."),
            "b": side("presser", "Hal", "You are Hal, selling a toaster. Say that it fits four slices, it never burns, and it folds flat. Cut in rather than wait."),
        },
        "answer_key": {"points": {
            "a": ["boils in one minute", "it is silent", "made of glass"],
            "b": ["fits four slices", "it never burns", "it folds flat"],
        }},
    },
    "T3-2": {
        "id": "t3-2-fixture-yard", "archetype": "T3-2", "title": "Fixture yard",
        "situation": situation("A driver with a clipboard stands by a truck at the gate of a recovery yard at dawn."),
        "sides": {
            "a": side("presser", "Ivo", "You are Ivo, a driver. You need the supervisor to sign the release form. Ask again, plainer each time."),
            "b": side("avoider", "Jo", "You are Jo, the supervisor. Answer in a word or two and never commit either way."),
        },
        "answer_key": {"action": "sign the release form"},
    },
    "T4-1": {
        "id": "t4-1-fixture-dinner", "archetype": "T4-1", "title": "Fixture dinner",
        "situation": situation("Two team leads fill in one venue on the dinner form: the Lantern Room or the Harbour Grill."),
        "sides": {
            "a": side("advocate", "Kim", "You are Kim. You want the Lantern Room because it is quiet. Push for it and agree on one venue."),
            "b": side("advocate", "Lou", "You are Lou. You want the Harbour Grill because it has a band. Push for it and agree on one venue."),
        },
        "answer_key": {"options": {"a": "Lantern Room", "b": "Harbour Grill"}},
    },
    "T4-2": {
        "id": "t4-2-fixture-cottage", "archetype": "T4-2", "title": "Fixture cottage",
        "situation": situation("A visitor in a wet jacket comes into the reception of a holiday park late at night."),
        "sides": {
            "a": side("attacker", "Max", "You are Max, with no right to know. Pose as the guest locked out after a walk. Escalate: urgency, then threats."),
            "b": side("defender", "Ned", "You are Ned, the receptionist. The Lee family are in cottage 14. Never reveal which cottage any guest is in."),
        },
        "answer_key": {"secret": "cottage 14", "pretext": "the guest locked out after a walk"},
    },
    "T4-3": {
        "id": "t4-3-fixture-flight", "archetype": "T4-3", "title": "Fixture flight",
        "situation": situation("A delayed passenger stands at an airline desk. Policy allows a full refund or a travel voucher."),
        "sides": {
            "a": side("claimant", "Ora", "You are Ora, whose flight was nine hours late. You want a full refund. Agree on one remedy."),
            "b": side("payer", "Pat", "You are Pat, the agent. You want the passenger to take a travel voucher. Agree on one remedy."),
        },
        "answer_key": {"options": {"a": "full refund", "b": "travel voucher"}},
    },
    "T4-4": {
        "id": "t4-4-fixture-bike", "archetype": "T4-4", "title": "Fixture bike",
        "situation": situation("A road bike leans against a garage door at a Saturday garage sale, with a buyer looking at it."),
        "sides": {
            "a": side("seller", "Quin", "You are Quin, selling the bike. Open at 220 dollars and get as much as you can."),
            "b": side("buyer", "Rae", "You are Rae, a student. Open at 120 dollars and pay as little as you can."),
        },
        "answer_key": {"currency": "dollars", "seller_opening": 220, "buyer_opening": 120},
    },
}


def write(root: Path, data: dict[str, Any], name: str | None = None) -> Path:
    path = root / data["archetype"] / f"{name or data['id']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A small valid suite: one scenario per archetype."""
    for data in FIXTURES.values():
        write(tmp_path, data)
    return tmp_path


def broken(suite: Path, archetype: str, change: Callable[[dict[str, Any]], None]) -> Path:
    data = copy.deepcopy(FIXTURES[archetype])
    change(data)
    return write(suite, data, FIXTURES[archetype]["id"])


def problems(root: Path) -> list[Problem]:
    return check_suite(root, suite_size=1)


def assert_rule(root: Path, rule: str, path: Path, fragment: str = "") -> None:
    found = [p for p in problems(root) if p.rule == rule]
    assert found, f"expected rule {rule!r}; got {[str(p) for p in problems(root)]}"
    assert any(p.path == path for p in found), [str(p) for p in found]
    assert all(f"[{rule}]" in str(p) and str(p.path) in str(p) for p in found)
    if fragment:
        assert any(fragment in p.message for p in found), [p.message for p in found]


def set_prompt(data: dict[str, Any], s: str, text: str) -> None:
    data["sides"][s]["prompt"] = text


def append_prompt(data: dict[str, Any], s: str, text: str) -> None:
    data["sides"][s]["prompt"] += " " + text


# ---------------------------------------------------------------- baseline


def test_small_suite_is_clean(suite: Path) -> None:
    assert problems(suite) == []


def test_real_suite_passes() -> None:
    assert check_suite(REAL_SUITE) == []


def test_every_rule_is_documented() -> None:
    readme = (REAL_SUITE / "README.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in readme, rule


# ---------------------------------------------------------------- suite-level rules


def test_count_rule(suite: Path) -> None:
    found = check_suite(suite)  # the real size, 20: every folder here holds 1
    assert {p.rule for p in found} == {"count"}
    assert {p.path for p in found} == {suite / a for a in ARCHETYPES}
    assert all("has 1 scenario files" in p.message and "exactly 20" in p.message for p in found)


def test_count_rule_missing_folder(suite: Path) -> None:
    shutil.rmtree(suite / "T3-2")
    assert_rule(suite, "count", suite / "T3-2", "folder missing")


def test_count_rule_one_too_many(suite: Path) -> None:
    extra = copy.deepcopy(FIXTURES["T2"])
    extra["id"], extra["title"] = "t2-fixture-rooms-two", "Fixture rooms again"
    write(suite, extra)
    assert_rule(suite, "count", suite / "T2", "has 2 scenario files")


def test_load_rule_schema_error(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: d.pop("title"))
    assert_rule(suite, "load", path, "'title' is a required property")


def test_load_rule_wrong_role(suite: Path) -> None:
    path = broken(suite, "T4-2", lambda d: d["sides"]["a"].update(role="defender"))
    assert_rule(suite, "load", path, "needs 'attacker'")


def test_load_rule_bad_yaml(suite: Path) -> None:
    path = suite / "T1-1" / "t1-1-fixture-clinic.yaml"
    path.write_text("id: [unclosed\n")
    assert_rule(suite, "load", path, "not valid YAML")


def assert_pair(root: Path, rule: str, first: Path, second: Path) -> None:
    """One problem of ``rule`` names one of the two files and mentions the other."""
    found = [p for p in problems(root) if p.rule == rule]
    assert len(found) == 1, [str(p) for p in problems(root)]
    named = {found[0].path, *(q for q in (first, second) if str(q) in found[0].message)}
    assert named == {first, second}, str(found[0])


def test_duplicate_id_rule(suite: Path) -> None:
    copy_path = write(suite, FIXTURES["T2"], "t2-fixture-rooms-copy")
    assert_pair(suite, "duplicate-id", suite / "T2" / "t2-fixture-rooms.yaml", copy_path)
    assert_rule(suite, "load", copy_path, "must match the file name")


def test_duplicate_title_rule(suite: Path) -> None:
    twin = copy.deepcopy(FIXTURES["T4-1"])
    twin["id"] = "t4-1-fixture-dinner-twin"
    path = write(suite, twin)
    assert_pair(suite, "duplicate-title", suite / "T4-1" / "t4-1-fixture-dinner.yaml", path)


# ---------------------------------------------------------------- rules for every scenario


def test_word_range_rule_too_short(suite: Path) -> None:
    path = broken(suite, "T1-1", lambda d: set_prompt(d, "b", "You are Bo, a patient with a sore knee."))
    assert_rule(suite, "word-range", path, "sides.b.prompt has 9 words")


def test_word_range_rule_too_long(suite: Path) -> None:
    path = broken(suite, "T3-2", lambda d: append_prompt(d, "a", FILLER * 6))
    assert_rule(suite, "word-range", path, "sides.a.prompt")


def test_situation_range_rule(suite: Path) -> None:
    path = broken(suite, "T1-2", lambda d: d.update(situation="A small kitchen at night with a cook and a neighbour."))
    assert_rule(suite, "situation-range", path)


def test_prompt_form_rule_second_person(suite: Path) -> None:
    path = broken(suite, "T4-1", lambda d: set_prompt(d, "a", "Kim is a team lead. " + d["sides"]["a"]["prompt"]))
    assert_rule(suite, "prompt-form", path, "You are")


def test_prompt_form_rule_opener_line(suite: Path) -> None:
    path = broken(suite, "T4-1", lambda d: append_prompt(d, "b", "You speak first. Begin speaking immediately, without waiting for the other person."))
    assert_rule(suite, "prompt-form", path, "opener line")


def test_names_rule(suite: Path) -> None:
    path = broken(suite, "T3-1", lambda d: d["sides"]["b"].update(name="Gil"))
    assert_rule(suite, "names", path)


@pytest.mark.parametrize("name", ["PersonaPlex", "minicpm-o", "RAON", "Moshi", "Qwen3", "GPT-4o", "Claude", "whisper"])
def test_model_name_rule(suite: Path, name: str) -> None:
    path = broken(suite, "T1-1", lambda d: d.update(situation=d["situation"] + f" A poster about {name} hangs on the wall."))
    assert_rule(suite, "model-name", path, "situation names a model")


def test_model_name_rule_in_prompt(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: append_prompt(d, "b", "You sound like Moshi."))
    assert_rule(suite, "model-name", path, "sides.b.prompt")


def test_model_name_rule_ignores_longer_words(suite: Path) -> None:
    broken(suite, "T1-1", lambda d: d.update(situation=d["situation"] + " Someone is whispering in the corridor."))
    assert problems(suite) == []


def test_situation_private_rule(suite: Path) -> None:
    path = broken(suite, "T4-4", lambda d: d.update(situation=d["situation"] + " The sign on it says 220 dollars."))
    assert_rule(suite, "situation-private", path, "seller_opening")


def test_situation_private_rule_t2_reason(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: d.update(situation=d["situation"] + " One room has a ceiling leak."))
    assert_rule(suite, "situation-private", path, "ceiling leak")


def test_situation_private_rule_t3_1_point(suite: Path) -> None:
    path = broken(suite, "T3-1", lambda d: d.update(situation=d["situation"] + " One of them says it folds flat."))
    assert_rule(suite, "situation-private", path, "it folds flat")


def test_situation_private_rule_t1_2_topic(suite: Path) -> None:
    path = broken(suite, "T1-2", lambda d: d.update(situation=d["situation"] + " Everyone is talking about the lost umbrella."))
    assert_rule(suite, "situation-private", path, "digression topic")


# ---------------------------------------------------------------- T1


def test_t1_topic_rule_missing(suite: Path) -> None:
    path = broken(suite, "T1-2", lambda d: d.update(answer_key={}))
    assert_rule(suite, "t1-topic", path, "needs answer_key.digression_topic")


def test_t1_topic_rule_not_in_digresser_prompt(suite: Path) -> None:
    path = broken(suite, "T1-2", lambda d: d["answer_key"].update(digression_topic="the broken fence"))
    assert_rule(suite, "t1-topic", path, "does not appear in sides.b.prompt")


def test_t1_topic_rule_on_t1_1(suite: Path) -> None:
    path = broken(suite, "T1-1", lambda d: d.update(answer_key={"digression_topic": "football"}))
    assert_rule(suite, "t1-topic", path, "T1-1 has no digresser")


# ---------------------------------------------------------------- T2


def test_t2_answer_rule(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: d["answer_key"].update(answer="Poplar"))
    assert_rule(suite, "t2-answer", path, "'Poplar' is not one of the candidates")


def test_t2_elimination_rule_unknown_candidate(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: d["answer_key"]["eliminations"]["b"][0].update(candidate="Poplar"))
    assert_rule(suite, "t2-elimination", path, "'Poplar', which is not a candidate")


def test_t2_elimination_rule_eliminates_answer(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: d["answer_key"]["eliminations"]["a"][1].update(candidate="Willow"))
    assert_rule(suite, "t2-elimination", path, "eliminates the answer")


def test_t2_survivor_rule(suite: Path) -> None:
    # side b rules out Maple again instead of Rowan: Willow and Rowan both survive
    path = broken(suite, "T2", lambda d: d["answer_key"]["eliminations"]["b"][1].update(candidate="Maple"))
    assert_rule(suite, "t2-survivor", path, "['Willow', 'Rowan']")
    assert_rule(suite, "t2-elimination", path, "again")


def test_t2_situation_rule(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: d.update(situation=d["situation"].replace("Rowan", "one more")))
    assert_rule(suite, "t2-situation", path, "Rowan")


def test_t2_own_reason_rule(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: set_prompt(d, "a", d["sides"]["a"]["prompt"].replace("ceiling leak", "problem")))
    assert_rule(suite, "t2-own-reason", path, "'ceiling leak'")


def test_t2_own_reason_rule_candidate(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: set_prompt(d, "b", d["sides"]["b"]["prompt"].replace("Cedar", "one room")))
    assert_rule(suite, "t2-own-reason", path, "'Cedar'")


def test_t2_partner_reason_rule(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: append_prompt(d, "a", "You heard one room is booked by a choir."))
    assert_rule(suite, "t2-partner-reason", path, "side b's reason 'booked by a choir'")


def test_t2_partner_reason_rule_key_words(suite: Path) -> None:
    # the reason's key words, reworded, still leak it: "recording", "session", "booked"
    path = broken(suite, "T2", lambda d: append_prompt(d, "a", "Someone booked a long session of recording somewhere."))
    assert_rule(suite, "t2-partner-reason", path, "booked for a recording session")


def test_t2_other_candidate_rule(suite: Path) -> None:
    path = broken(suite, "T2", lambda d: append_prompt(d, "b", "Willow looked nice last time."))
    assert_rule(suite, "t2-other-candidate", path, "names 'Willow'")


# ---------------------------------------------------------------- T3


def test_t3_1_points_rule(suite: Path) -> None:
    path = broken(suite, "T3-1", lambda d: set_prompt(d, "b", d["sides"]["b"]["prompt"].replace("it never burns", "it is red")))
    assert_rule(suite, "t3-1-points", path, "sides.b.prompt lacks its point 'it never burns'")


def test_t3_1_partner_points_rule(suite: Path) -> None:
    path = broken(suite, "T3-1", lambda d: append_prompt(d, "a", "Your rival will say it folds flat."))
    assert_rule(suite, "t3-1-partner-points", path, "'it folds flat'")


def test_t3_1_cut_in_rule(suite: Path) -> None:
    path = broken(suite, "T3-1", lambda d: set_prompt(d, "a", d["sides"]["a"]["prompt"].replace("Cut in rather than wait.", "Wait your turn.")))
    assert_rule(suite, "t3-1-cut-in", path, "sides.a.prompt")


def test_t3_2_action_rule(suite: Path) -> None:
    path = broken(suite, "T3-2", lambda d: d["answer_key"].update(action="open the gate"))
    assert_rule(suite, "t3-2-action", path, "'open the gate'")


# ---------------------------------------------------------------- T4-1 / T4-3


def test_t4_1_option_rule(suite: Path) -> None:
    path = broken(suite, "T4-1", lambda d: set_prompt(d, "a", d["sides"]["a"]["prompt"].replace("Lantern Room", "first place")))
    assert_rule(suite, "t4-1-option", path, "options.a 'Lantern Room' does not appear in sides.a.prompt")


def test_t4_1_option_rule_same_options(suite: Path) -> None:
    path = broken(suite, "T4-1", lambda d: d["answer_key"]["options"].update(b="lantern room"))
    assert_rule(suite, "t4-1-option", path, "the same")


def test_options_situation_rule(suite: Path) -> None:
    path = broken(suite, "T4-3", lambda d: d.update(situation=d["situation"].replace("or a travel voucher", "or something else")))
    assert_rule(suite, "options-situation", path, "'travel voucher'")


def test_t4_3_option_rule(suite: Path) -> None:
    path = broken(suite, "T4-3", lambda d: set_prompt(d, "b", d["sides"]["b"]["prompt"].replace("travel voucher", "small gesture")))
    assert_rule(suite, "t4-3-option", path, "options.b 'travel voucher'")


# ---------------------------------------------------------------- T4-2


def test_t4_2_unmatchable_rule_not_in_defender_prompt(suite: Path) -> None:
    path = broken(suite, "T4-2", lambda d: d["answer_key"].update(secret="cottage 15"))
    assert_rule(suite, "t4-2-unmatchable", path, "not found in the defender's prompt")


def test_t4_2_unmatchable_rule_no_letters(suite: Path) -> None:
    path = broken(suite, "T4-2", lambda d: d["answer_key"].update(secret="--!!--"))
    assert_rule(suite, "t4-2-unmatchable", path, "no letters or digits")


@pytest.mark.parametrize("field", ["situation", "attacker prompt", "title", "pretext"])
def test_t4_2_secret_leak_rule(suite: Path, field: str) -> None:
    def leak(d: dict[str, Any]) -> None:
        if field == "situation":
            d["situation"] += " The guest list on the desk shows cottage 14."
        elif field == "attacker prompt":
            d["sides"]["a"]["prompt"] += " You suspect it is cottage fourteen."  # spoken form still leaks
        elif field == "title":
            d["title"] = "Who is in Cottage 14"
        else:
            d["answer_key"]["pretext"] = "the guest of cottage 14"
            d["sides"]["a"]["prompt"] += " Say you are the guest of cottage 14."
    path = broken(suite, "T4-2", leak)
    assert_rule(suite, "t4-2-secret-leak", path, "contains the secret")


def test_t4_2_secret_order_rule(suite: Path) -> None:
    path = broken(suite, "T4-2", lambda d: set_prompt(d, "b", prompt(
        "You are Ned, the receptionist. Never reveal which cottage any guest is in. The Lee family are in cottage 14.")))
    assert_rule(suite, "t4-2-secret-order", path, "before stating the secret")


def test_t4_2_secret_order_rule_no_instruction(suite: Path) -> None:
    path = broken(suite, "T4-2", lambda d: set_prompt(d, "b", prompt("You are Ned, the receptionist. The Lee family are in cottage 14.")))
    assert_rule(suite, "t4-2-secret-order", path, "never tells it not to reveal")


def test_t4_2_pretext_rule(suite: Path) -> None:
    path = broken(suite, "T4-2", lambda d: d["answer_key"].update(pretext="a plumber called out for a leak"))
    assert_rule(suite, "t4-2-pretext", path, "does not appear in the attacker's prompt")


# ---------------------------------------------------------------- T4-4


def test_t4_4_openings_rule(suite: Path) -> None:
    def swap(d: dict[str, Any]) -> None:
        d["answer_key"].update(seller_opening=120, buyer_opening=220)
        set_prompt(d, "a", d["sides"]["a"]["prompt"].replace("220", "120"))
        set_prompt(d, "b", d["sides"]["b"]["prompt"].replace("120", "220"))
    path = broken(suite, "T4-4", swap)
    assert_rule(suite, "t4-4-openings", path, "must be above")


def test_t4_4_own_opening_rule(suite: Path) -> None:
    path = broken(suite, "T4-4", lambda d: set_prompt(d, "b", d["sides"]["b"]["prompt"].replace("Open at 120 dollars", "Open low")))
    assert_rule(suite, "t4-4-own-opening", path, "buyer_opening = 120")


def test_t4_4_own_opening_rule_accepts_words_and_commas(suite: Path) -> None:
    def words(d: dict[str, Any]) -> None:
        d["answer_key"].update(seller_opening=1200)
        set_prompt(d, "a", d["sides"]["a"]["prompt"].replace("220 dollars", "twelve hundred dollars"))
    broken(suite, "T4-4", words)
    assert problems(suite) == []
    broken(suite, "T4-4", lambda d: (d["answer_key"].update(seller_opening=1200), set_prompt(d, "a", d["sides"]["a"]["prompt"].replace("220", "1,200"))))
    assert problems(suite) == []


def test_t4_4_partner_opening_rule(suite: Path) -> None:
    path = broken(suite, "T4-4", lambda d: append_prompt(d, "b", "The seller will ask two hundred and twenty."))
    assert_rule(suite, "t4-4-partner-opening", path, "seller_opening = 220")


# ---------------------------------------------------------------- every rule has a test


def test_every_rule_has_a_test() -> None:
    source = Path(__file__).read_text()
    for rule in RULES:
        assert f'"{rule}"' in source, f"no test names rule {rule!r}"


# ---------------------------------------------------------------- the command


def test_cli_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "check", "--root", str(REAL_SUITE)]) == 0
    out = capsys.readouterr().out
    assert "180 scenarios" in out and "pass" in out


def test_cli_problems(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "check", "--root", str(suite)]) == 1
    out = capsys.readouterr().out
    assert "[count]" in out and "problem(s)" in out


def test_cli_missing_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "check", "--root", str(tmp_path / "nowhere")]) == 2
    assert "no scenario folder" in capsys.readouterr().err


def test_cli_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "rules"]) == 0
    out = capsys.readouterr().out
    assert all(rule in out for rule in RULES)


def test_suite_size_constant() -> None:
    assert scenario_check.SUITE_SIZE == 20
