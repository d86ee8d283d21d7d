"""Which per-conversation outputs a results folder holds: one scan that the workflow plans with and
`dyafdb status` counts with, so the two always agree on what is left.

Snakemake (9.x) checks a job's outputs only when the job is a target or something downstream of it
must run: a recording deleted after its measures and its archetype's table were made is never
missed, since nothing downstream looks stale. :func:`replan_targets` names such holes, and the
workflow adds them to its final targets, so the next run (and `snakemake -n`) records or scores
them again with everything after them. A hole is an output missing while a later product of the
same conversation or archetype exists; a folder in which nothing was run yet is no hole, so a fresh
plan of the paper's suite lists nothing extra (listing 7,560 recordings would cost the plan dearly).

The scan lists each shard folder once (140 for the paper's suite) instead of asking for every file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Mapping

from dyafdb.paths import Results, shard_of
from dyafdb.suite.design import Conversation


def _listing(folder: str) -> set[str]:
    try:
        return {e.name for e in os.scandir(folder)}
    except (FileNotFoundError, NotADirectoryError):
        return set()


@dataclass(frozen=True)
class Holdings:
    """Per conversation: is its recording's meta.json there, are its measures there."""

    recorded: Mapping[str, bool]
    scored: Mapping[str, bool]
    tables: Mapping[str, bool]  # per archetype: its mechanical table exists


def scan(results: Results, rows: Iterable[Conversation]) -> Holdings:
    rows = list(rows)
    shards = {shard_of(r.conversation_id) for r in rows}
    measure_files = {s: _listing(results.shard_folder("measures", s)) for s in shards}
    folders = {s: _listing(results.shard_folder("recordings", s)) for s in shards}
    recorded, scored = {}, {}
    for row in rows:
        cid = row.conversation_id
        shard = shard_of(cid)
        # meta.json is written last, in the same step as the rest (record.recording.publish)
        recorded[cid] = cid in folders[shard] and os.path.exists(results.recording_file(cid, "meta.json"))
        scored[cid] = f"{cid}.json" in measure_files[shard]
    tables = {a: os.path.exists(results.mechanical_table(a)) for a in {r.archetype for r in rows}}
    return Holdings(recorded=recorded, scored=scored, tables=tables)


def replan_targets(results: Results, rows: Iterable[Conversation], holdings: Holdings | None = None) -> list[str]:
    """Outputs missing while something made from them exists (see the module doc), to be made again."""
    rows = list(rows)
    held = holdings or scan(results, rows)
    targets = []
    for row in rows:
        cid = row.conversation_id
        later = held.scored[cid] or held.tables[row.archetype]
        if not held.recorded[cid] and later:
            targets.append(results.recording_file(cid, "meta.json"))
        elif not held.scored[cid] and held.tables[row.archetype]:
            targets.append(results.measures_json(cid))
    return targets


