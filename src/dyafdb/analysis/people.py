"""A person's row and column in the analysis: labelled with how many people and sessions they hold.

A model entry with ``adapter: person`` (``dyafdb seat``, docs/seat.md) is analysed like any model; its
label says how many recordings of this results folder are a person's and how many distinct
participants made them (several in a pool, `dyafdb seat --pool`), so a reader sees the human
reference's n beside its numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dyafdb.paths import results_of
from dyafdb.record.recording import is_complete, read_meta
from dyafdb.suite.design import is_person


def person_sessions(config: Mapping[str, Any], root: Path, model: str) -> tuple[int, int]:
    """(people, sessions): the complete recordings in this results folder with ``model`` as the person, and
    the distinct participants among them (a recording made outside a study counts as one unnamed person)."""
    recordings = Path(results_of(config, root).recordings)
    people, sessions = set(), 0
    for meta_path in sorted(recordings.glob("*/*/meta.json")):
        if not is_complete(meta_path.parent):
            continue
        meta = read_meta(meta_path.parent)
        seat = meta.get("seat") or {}
        side = seat.get("person_side")
        if side and any(ch.get("side") == side and ch.get("model") == model for ch in meta.get("channels", [])):
            sessions += 1
            people.add(seat.get("participant") or "")
    return len(people), sessions


def with_person_counts(config: Mapping[str, Any], root: Path | None, labels: dict[str, str]) -> dict[str, str]:
    """Model labels where a person's says how many people and sessions its row and column hold."""
    out = dict(labels)
    for model in labels:
        if is_person(dict(config), model):
            people, sessions = person_sessions(config, Path(root or "."), model)
            out[model] = (f"{labels[model]} ({people} {'person' if people == 1 else 'people'}, "
                          f"{sessions} session{'' if sessions == 1 else 's'})")
    return out
