"""Scenario files: loading, validation, and the prompt each side is given.

One YAML file per scenario under ``scenarios/<archetype>/``; the format is documented in
``scenarios/README.md`` and ``schemas/scenario.schema.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dyafdb.errors import InputError
from dyafdb.schema_check import read_yaml, validate

ARCHETYPES = ("T1-1", "T1-2", "T2", "T3-1", "T3-2", "T4-1", "T4-2", "T4-3", "T4-4")

# Scoring role of side a and side b. Side a is the reported side of every asymmetric archetype.
ARCHETYPE_ROLES: dict[str, tuple[str, str]] = {
    "T1-1": ("holder", "holder"),
    "T1-2": ("holder", "digresser"),
    "T2": ("pooler", "pooler"),
    "T3-1": ("presser", "presser"),
    "T3-2": ("presser", "avoider"),
    "T4-1": ("advocate", "advocate"),
    "T4-2": ("attacker", "defender"),
    "T4-3": ("claimant", "payer"),
    "T4-4": ("seller", "buyer"),
}

# Appended at design time to whichever side opens, never written into scenario files, so it moves
# with the counterbalanced opener.
OPENER_LINE = "You speak first. Begin speaking immediately, without waiting for the other person."

SIDES = ("a", "b")

PROMPT_WORDS = (40, 110)  # inclusive range for every side prompt, counted as whitespace-separated words
# `dyafdb suite check` holds prompts to PROMPT_WORDS; loading refuses only a prompt so far
# beyond it that it is surely a mistake (a pasted document), which would otherwise be recorded.
PROMPT_WORDS_LIMIT = 3 * PROMPT_WORDS[1]


@dataclass(frozen=True)
class Scenario:
    id: str
    archetype: str
    title: str
    situation: str
    sides: dict[str, dict[str, Any]]
    answer_key: dict[str, Any]
    path: Path

    def role(self, side: str) -> str:
        return self.sides[side]["role"]

    def prompt_for(self, side: str, is_opener: bool) -> str:
        """The full text one side's model is given: situation, private role prompt, opener line."""
        parts = [self.situation.strip(), self.sides[side]["prompt"].strip()]
        if is_opener:
            parts.append(OPENER_LINE)
        return "\n\n".join(parts)


def load_scenario(path: Path) -> Scenario:
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: a scenario file must hold a mapping with keys id, archetype, title, situation, sides, answer_key")
    validate(data, "scenario", path)
    archetype = data["archetype"]
    if path.parent.name != archetype:
        raise InputError(f"{path}: field archetype = {archetype!r} but the file lives under {path.parent.name}/; move it to scenarios/{archetype}/")
    prefix = archetype.lower() + "-"
    if not data["id"].startswith(prefix):
        raise InputError(f"{path}: field id = {data['id']!r} must start with {prefix!r} (the archetype in lower case)")
    if path.stem != data["id"]:
        raise InputError(f"{path}: field id = {data['id']!r} must match the file name; rename the file to {data['id']}.yaml")
    expected = ARCHETYPE_ROLES[archetype]
    for side, role in zip(SIDES, expected):
        got = data["sides"][side]["role"]
        if got != role:
            raise InputError(f"{path}: field sides.{side}.role = {got!r}; archetype {archetype} needs {role!r} on side {side}")
    for side in SIDES:
        words = len(str(data["sides"][side]["prompt"]).split())
        if words > PROMPT_WORDS_LIMIT:
            raise InputError(f"{path}: field sides.{side}.prompt has {words} words, far beyond the suite's "
                             f"{PROMPT_WORDS[0]}-{PROMPT_WORDS[1]} (refused above {PROMPT_WORDS_LIMIT}); shorten it "
                             "and run `dyafdb suite check`")
    return Scenario(
        id=data["id"], archetype=archetype, title=data["title"], situation=data["situation"],
        sides=data["sides"], answer_key=data.get("answer_key") or {}, path=path,
    )


def load_suite(root: Path, archetypes: list[str] | tuple[str, ...] = ARCHETYPES) -> dict[str, list[Scenario]]:
    """All scenarios of the given archetypes, each list sorted by id; ids must be unique."""
    out: dict[str, list[Scenario]] = {}
    seen: dict[str, Path] = {}
    for archetype in archetypes:
        folder = root / archetype
        if not folder.is_dir():
            raise InputError(f"{folder}: no scenario folder for archetype {archetype}; create it or remove {archetype} from the suite")
        scenarios = [load_scenario(p) for p in sorted(folder.glob("*.yaml"))]
        for s in scenarios:
            if s.id in seen:
                raise InputError(f"{s.path}: id {s.id!r} is already used by {seen[s.id]}; ids must be unique")
            seen[s.id] = s.path
        out[archetype] = sorted(scenarios, key=lambda s: s.id)
    return out


def find_scenario(root: Path, scenario_id: str) -> Scenario:
    """The scenario with this id (its archetype folder is read off the id prefix)."""
    for archetype in sorted(ARCHETYPES, key=len, reverse=True):
        if scenario_id.startswith(archetype.lower() + "-"):
            path = root / archetype / f"{scenario_id}.yaml"
            if path.exists():
                return load_scenario(path)
    raise InputError(f"scenario {scenario_id!r} not found under {root}/<archetype>/{scenario_id}.yaml")
