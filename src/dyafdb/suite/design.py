"""The design table: one row per conversation, derived from config and scenarios alone.

Counterbalancing (Appendix B): within every pairing cell, role assignment and speaking order are
crossed. A cross-play pairing records 2 role assignments x 2 openers x R repetitions per scenario,
a self-play pairing 2 openers x R (its role assignments are the same conversation).

Ids are deterministic and readable, made only of ``[a-z0-9_.-]`` so they are safe as file names
and SLURM job names; seeds are hashed from the id, so a rerun of the same row is reproducible.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterable

from dyafdb.suite.scenarios import Scenario, load_suite
from dyafdb.errors import InputError
from dyafdb.fileio import write_atomic
from dyafdb.schema_check import schema_default


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    suite: str
    archetype: str
    scenario: str
    pairing: str
    play: str  # "self" or "cross"
    model_a: str
    model_b: str
    role_a: str
    role_b: str
    opener: str  # side "a" or "b"
    opener_model: str
    repetition: int
    window_s: float
    attempt: int
    seed: int

    def model_of(self, side: str) -> str:
        return self.model_a if side == "a" else self.model_b

    def role_of(self, side: str) -> str:
        return self.role_a if side == "a" else self.role_b


COLUMNS = [f.name for f in fields(Conversation)]


def conversation_id(scenario: str, model_a: str, model_b: str, opener: str, repetition: int, window_s: float) -> str:
    window = f"{window_s:g}".replace(".", "p")
    return f"{scenario}__{model_a}__{model_b}__open-{opener}__rep{repetition}__{window}s"


def derive_seed(conversation: str, attempt: int = 1, salt: str = "") -> int:
    """A 31-bit seed from the id (and attempt), stable across machines and Python versions."""
    digest = hashlib.sha256(f"{conversation}#{attempt}#{salt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


# The adapter of a human seat (dyafdb.agents.person, `dyafdb seat`): declared here, the earliest stage that needs it.
PERSON_ADAPTER = "person"

# A seat participant's pseudonymous id (dyafdb.seat.study). Tagged onto a person's conversation id
# (``<id>__p001``), it makes each participant's session of one design row a conversation of its own, so
# several participants' recordings pool into one results folder with every id, and so every
# provenance digest, unchanged (`dyafdb seat --pool`).
PARTICIPANT = re.compile(r"p(\d{3,})")
_TAGGED = re.compile(r"(?P<base>.+)__(?P<participant>p\d{3,})")


def participant_id(conversation: str, participant: str) -> str:
    """The id of ``participant``'s session of the design row ``conversation``."""
    return f"{conversation}__{participant}"


def split_participant(conversation: str) -> tuple[str, str | None]:
    """(the design row's id, the participant or None); a row id ends in its window (``...__20s``), never in a tag."""
    found = _TAGGED.fullmatch(conversation)
    return (found["base"], found["participant"]) if found else (conversation, None)


def is_person(config: dict[str, Any], model: str) -> bool:
    """Whether ``model`` is a person speaking from the seat's page rather than a model."""
    return ((config.get("models") or {}).get(model) or {}).get("adapter") == PERSON_ADAPTER


def pairings(models: list[str]) -> list[tuple[str, str]]:
    """Unordered pairings with self-play, in config order: (m, m) and (m, n) for m before n."""
    return list(itertools.combinations_with_replacement(models, 2))


def pairing_name(m1: str, m2: str) -> str:
    return f"{m1}+{m2}"


def _select_scenarios(suite_name: str, suite: dict[str, Any], by_archetype: dict[str, list[Scenario]]) -> list[Scenario]:
    chosen: list[Scenario] = []
    if "scenarios" in suite:
        index = {s.id: s for group in by_archetype.values() for s in group}
        for sid in suite["scenarios"]:
            if sid not in index:
                raise InputError(f"suites.{suite_name}.scenarios lists {sid!r}, which is not a scenario of archetypes {', '.join(suite['archetypes'])}")
            chosen.append(index[sid])
        return chosen
    wanted = suite.get("scenarios_per_archetype")
    for archetype in suite["archetypes"]:
        group = by_archetype[archetype]
        if wanted is not None:
            if len(group) < wanted:
                raise InputError(
                    f"suites.{suite_name}.scenarios_per_archetype = {wanted}, but archetype {archetype} has only "
                    f"{len(group)} scenario files; add scenarios or lower the number"
                )
            group = group[:wanted]
        chosen.extend(group)
    return chosen


_IDENTITY = ("scenario", "model_a", "model_b", "opener", "repetition", "window_s")


def _check_same_conversation(kept: Conversation, suite_name: str, scenario: str, model_a: str, model_b: str,
                             opener: str, repetition: int, window_s: float) -> None:
    """A second row with ``kept``'s id must be the same conversation, or one of the two would be dropped."""
    new = dict(zip(_IDENTITY, (scenario, model_a, model_b, opener, repetition, window_s)))
    if all(getattr(kept, k) == v for k, v in new.items()):
        return

    def fields(values: dict[str, Any]) -> str:
        return ", ".join(f"{k} {v:.15g}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items())

    raise InputError(
        f"config: suites.{kept.suite} and suites.{suite_name} make two different conversations with one id "
        f"{kept.conversation_id!r}: ({fields({k: getattr(kept, k) for k in _IDENTITY})}) and ({fields(new)}); "
        "rename the models or scenarios so no name holds '__' or starts or ends with '_' (ids join names with "
        "'__'), or give the suites windows that differ in their first 6 digits")


def build_design(config: dict[str, Any], root: Path | None = None) -> list[Conversation]:
    """Every conversation of every enabled suite, in a stable order.

    A row that two suites both make (same scenario, models, opener, repetition and window) is kept
    once; two different rows with one id are refused, naming both."""
    root = Path(root or ".")
    scenarios_dir = root / config["scenarios_dir"]
    rows: dict[str, Conversation] = {}
    for suite_name, suite in config["suites"].items():
        if not suite.get("enabled", schema_default("config", "suites", "<suite>", "enabled")):
            continue
        lead_in = (config.get("bridge") or {}).get("lead_in_s")
        if lead_in is not None and float(suite["window_s"]) <= float(lead_in):
            raise InputError(f"suites.{suite_name}.window_s = {suite['window_s']} is not longer than bridge.lead_in_s = "
                             f"{lead_in}: the opener's lead-in would fill the whole window and the partner never be heard; "
                             "make window_s longer than the lead-in")
        by_archetype = load_suite(scenarios_dir, suite["archetypes"])
        kept_pairings = [(m1, m2) for m1, m2 in pairings(suite["models"])
                         if not (m1 == m2 and suite.get("cross_play_only", schema_default("config", "suites", "<suite>", "cross_play_only")))
                         # two people talk without this benchmark: a person seat pairs with models only
                         and not (is_person(config, m1) and is_person(config, m2))
                         # only_with: a new model's pairings only, the references' own games are already recorded
                         and not (suite.get("only_with") and not {m1, m2} & set(suite["only_with"]))]
        if not kept_pairings:
            # Every job after the design would fail on empty inputs, or the suite vanish beside others.
            raise InputError(f"suites.{suite_name} makes no conversation: its models {suite['models']} leave no pairing "
                             f"(cross_play_only: {bool(suite.get('cross_play_only', schema_default('config', 'suites', '<suite>', 'cross_play_only')))}, only_with: "
                             f"{suite.get('only_with')}); fix: add a model, drop cross_play_only or only_with, or set "
                             "enabled: false")
        wanted = set(suite.get("conversations") or ())  # a seat participant's share (dyafdb.seat.study)
        sessions: dict[str, list[str | None]] = {}  # design row id -> the participants (None: untagged) wanted
        for tagged in sorted(wanted):
            base, participant = split_participant(tagged)
            sessions.setdefault(base, []).append(participant)
        made: set[str] = set()
        for scenario in _select_scenarios(suite_name, suite, by_archetype):
            for m1, m2 in kept_pairings:
                self_play = m1 == m2
                assignments = [(m1, m2)] if self_play else [(m1, m2), (m2, m1)]
                for (model_a, model_b), opener, rep in itertools.product(assignments, ("a", "b"), range(1, suite["repetitions"] + 1)):
                    base = conversation_id(scenario.id, model_a, model_b, opener, rep, suite["window_s"])
                    made.add(base)
                    if wanted and base not in sessions:
                        continue
                    for participant in sessions.get(base, [None]):
                        if participant and not (is_person(config, model_a) or is_person(config, model_b)):
                            raise InputError(f"suites.{suite_name}.conversations lists {participant_id(base, participant)!r}: "
                                             "a participant tag belongs to a conversation with a person only; list "
                                             f"{base!r} without it")
                        cid = participant_id(base, participant) if participant else base
                        if cid in rows:
                            _check_same_conversation(rows[cid], suite_name, scenario.id, model_a, model_b, opener, rep,
                                                     float(suite["window_s"]))
                            continue  # e.g. a window suite that repeats the main window
                        rows[cid] = Conversation(
                            conversation_id=cid, suite=suite_name, archetype=scenario.archetype, scenario=scenario.id,
                            pairing=pairing_name(m1, m2), play="self" if self_play else "cross",
                            model_a=model_a, model_b=model_b, role_a=scenario.role("a"), role_b=scenario.role("b"),
                            opener=opener, opener_model=model_a if opener == "a" else model_b,
                            repetition=rep, window_s=float(suite["window_s"]), attempt=1, seed=derive_seed(cid),
                        )
        unknown = sorted(w for w in wanted if split_participant(w)[0] not in made)
        if unknown:
            raise InputError(f"suites.{suite_name}.conversations lists {unknown[0]!r}, which the suite does not make"
                             f"{f' (and {len(unknown) - 1} more)' if len(unknown) > 1 else ''}; list ids of its own "
                             "design (`dyafdb suite design`)")
    return list(rows.values())


def write_design(rows: Iterable[Conversation], path: Path) -> None:
    """Write atomically so a killed job never leaves a truncated table behind."""
    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow(asdict(row))

    write_atomic(path, write)


def read_design(path: Path) -> list[Conversation]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        missing = set(COLUMNS) - set(reader.fieldnames or [])
        if missing:
            raise InputError(f"{path}: design table lacks columns {', '.join(sorted(missing))}; regenerate it with `dyafdb suite design`")
        out = []
        for row in reader:
            out.append(Conversation(**{
                **row, "repetition": int(row["repetition"]), "window_s": float(row["window_s"]),
                "attempt": int(row["attempt"]), "seed": int(row["seed"]),
            }))
        return out


def find_conversation(rows: Iterable[Conversation], cid: str) -> Conversation:
    for row in rows:
        if row.conversation_id == cid:
            return row
    raise InputError(f"conversation {cid!r} is not in the design table; run `dyafdb suite design` with the same config")


def count_summary(rows: list[Conversation]) -> dict[str, Any]:
    """Counts per suite and pairing, for the CLI and README."""
    summary: dict[str, Any] = {"total": len(rows), "suites": {}}
    for row in rows:
        suite = summary["suites"].setdefault(row.suite, {"total": 0, "pairings": {}, "archetypes": {}})
        suite["total"] += 1
        suite["pairings"][row.pairing] = suite["pairings"].get(row.pairing, 0) + 1
        suite["archetypes"][row.archetype] = suite["archetypes"].get(row.archetype, 0) + 1
    return summary
