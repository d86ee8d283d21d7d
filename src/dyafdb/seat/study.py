"""Who sits in the seat and which conversations they hold.

Outside a study the seat lists every conversation of the design with a person on one side. In a
study each participant has a pseudonymous id (``p001``, ``p002``, ...: the registry keeps the ids and
the day each was made, nothing about the person) and a results folder of their own,
``<results_dir>/participants/<id>``, a complete results folder the workflow scores like any other.
A participant holds one conversation per design cell (scenario x partner model x window), and the
cell's variants (the person's side, so their role, and who opens, and the repetition) rotate with
the participant's number, so that every run of as many participants as a cell has variants covers
each variant once: the design's counterbalancing, across people.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Mapping

import yaml

from dyafdb.errors import InputError
from dyafdb.fileio import write_atomic
from dyafdb.paths import results_of
from dyafdb.schema_check import schema_default
from dyafdb.suite.design import PARTICIPANT, Conversation, build_design, is_person, participant_id

REGISTRY = "participants.tsv"


def person_side(config: Mapping[str, Any], row: Conversation) -> str:
    return "a" if is_person(dict(config), row.model_a) else "b"


def seat_rows(config: Mapping[str, Any], root: Path) -> list[Conversation]:
    """The design's conversations with a person on one side, in design order."""
    rows = [r for r in build_design(dict(config), root) if is_person(dict(config), r.model_a) or is_person(dict(config), r.model_b)]
    if not rows:
        raise InputError("config: no suite pairs a person with a model; add a model entry with `adapter: person` to a "
                         "suite's models (docs/seat.md)")
    return rows


def participants_dir(config: Mapping[str, Any], root: Path) -> Path:
    return Path(results_of(config, root).root) / "participants"


def check_participant(pid: str) -> int:
    """The participant's number; refuses anything that is not a pseudonymous id."""
    match = PARTICIPANT.fullmatch(pid)
    if not match:
        raise InputError(f"--participant {pid!r}: a participant id is 'p' and three or more digits (p001), or 'new'; "
                         "never a name")
    return int(match.group(1))


def new_participant(config: Mapping[str, Any], root: Path) -> str:
    """Register the next id; the registry holds ids and dates only."""
    path = participants_dir(config, root) / REGISTRY
    lines = path.read_text().splitlines()[1:] if path.exists() else []
    number = max((check_participant(line.split("\t")[0]) for line in lines if line.strip()), default=0) + 1
    pid = f"p{number:03d}"
    rows = [*lines, f"{pid}\t{date.today().isoformat()}"]
    write_atomic(path, lambda tmp: tmp.write_text("participant\tcreated\n" + "".join(f"{r}\n" for r in rows)))
    return pid


def participant_config(config: Mapping[str, Any], root: Path, pid: str) -> dict[str, Any]:
    """The participant's config: their own results folder, and each person suite cut to their share
    (``suites.<name>.conversations``, each id tagged with the participant, ``<id>__p001``, so that two
    participants' sessions of one design row stay two conversations when pooled), so every stage of the
    pipeline runs on their folder unchanged; the suites without a person are left out (``enabled: false``)."""
    check_participant(pid)
    share = participant_rows(config, seat_rows(config, root), pid)
    suites = {}
    for name, suite in config["suites"].items():
        ids = [participant_id(r.conversation_id, pid) for r in share if r.suite == name]
        suites[name] = {**suite, "conversations": ids} if ids else {**suite, "enabled": False}
    return {**config, "suites": suites,
            "results_dir": str(Path(config["results_dir"]) / "participants" / pid)}


def write_participant_config(config: Mapping[str, Any], root: Path) -> Path:
    """The participant's config beside their results, for scoring them later (`dyafdb ... -c <this file>`)."""
    path = Path(results_of(config, root).root) / "seat-config.yaml"
    write_atomic(path, lambda tmp: tmp.write_text(yaml.safe_dump(dict(config), sort_keys=False)))
    return path


def participant_rows(config: Mapping[str, Any], rows: list[Conversation], pid: str) -> list[Conversation]:
    """One conversation per cell for participant ``pid``, the variant rotating with the participant's number."""
    number = check_participant(pid)
    cells: dict[tuple[Any, ...], list[Conversation]] = {}
    for row in rows:
        side = person_side(config, row)
        cells.setdefault((row.suite, row.scenario, row.model_of("b" if side == "a" else "a"), row.window_s), []).append(row)
    chosen = []
    for i, variants in enumerate(cells.values()):
        ordered = sorted(variants, key=lambda r: (person_side(config, r), r.opener, r.repetition))
        chosen.append(ordered[(number - 1 + i) % len(ordered)])
    return chosen

