"""Several participants in one analysis: the person as a row and column of its own beside the models.

Each participant's sessions are conversations of their own, ``<design row id>__p001`` (the id a
participant's config gives them, ``dyafdb.seat.study``), so two participants who drew the same variant
of a cell never share an id. Pooling gathers, into one results folder ``<results_dir>/pool``, every
complete recording of the chosen participants and every complete model-model recording of the main
results folder, and writes the folder's config beside it (``seat-config.yaml``): the seat's config with
each suite cut to the gathered ids. That config's design makes exactly the rows the recordings were
made from, so every provenance digest in their meta.json holds as it is (nothing is rewritten) and
`dyafdb verify` checks the pool like any run; the counterbalancing is the one each participant was
given. Scores already made beside a recording travel with it (their digests name the recording), the
rest are scored here, and the pipeline then runs on the pool unchanged (measures, judge, analysis:
the person's label counts the distinct participants and sessions, ``dyafdb.analysis.people``).

The pool folder belongs to pooling alone: a rerun adds new sessions, replaces a recording whose
source was recorded again, and removes what no longer belongs (a participant left out).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dyafdb.errors import InputError
from dyafdb.paths import Results, results_of
from dyafdb.record.recording import is_complete, read_meta
from dyafdb.seat.study import REGISTRY, check_participant, participant_config, participants_dir
from dyafdb.suite.design import Conversation, build_design, is_person

POOL = "pool"


def registered(config: Mapping[str, Any], root: Path) -> list[str]:
    """The participant ids of the study's registry, in order."""
    path = participants_dir(config, root) / REGISTRY
    if not path.exists():
        raise InputError(f"{path}: no participant is registered yet; start one with `dyafdb seat -c CONFIG "
                         "--participant new`")
    return [line.split("\t")[0] for line in path.read_text().splitlines()[1:] if line.strip()]


@dataclass
class Pooled:
    config: dict[str, Any]
    sources: dict[str, Results]  # conversation id -> the results folder its recording comes from
    people: list[str] = field(default_factory=list)  # participants with at least one session
    not_recorded: dict[str, int] = field(default_factory=dict)  # participant -> sessions of their share still to do


def pool_config(config: Mapping[str, Any], root: Path, participants: Sequence[str]) -> Pooled:
    """The pool's config and where each of its recordings lies: every participant's recorded sessions, and
    the main folder's recorded model-model conversations (the models the person sits beside)."""
    for pid in participants:
        check_participant(pid)
    main = results_of(config, root)
    sources: dict[str, Results] = {}
    suite_of: dict[str, str] = {}

    def take(row: Conversation, results: Results) -> bool:
        if not is_complete(Path(results.recording(row.conversation_id))):
            return False
        sources[row.conversation_id], suite_of[row.conversation_id] = results, row.suite
        return True

    for row in build_design(dict(config), root):
        if not (is_person(dict(config), row.model_a) or is_person(dict(config), row.model_b)):
            take(row, main)
    pooled = Pooled(config={}, sources=sources)
    for pid in participants:
        own = participant_config(config, root, pid)
        share = build_design(own, root)
        done = [take(row, results_of(own, root)) for row in share]
        if any(done):
            pooled.people.append(pid)
        if not all(done):
            pooled.not_recorded[pid] = done.count(False)
    if not pooled.people:
        raise InputError(f"participants {', '.join(participants) or '(none)'}: no complete recording to pool in "
                         f"{participants_dir(config, root)}; record a session first (`dyafdb seat -c CONFIG "
                         "--participant ID`)")
    suites = {}
    for name, suite in config["suites"].items():
        ids = [cid for cid, s in suite_of.items() if s == name]
        suites[name] = {**suite, "conversations": ids} if ids else {**suite, "enabled": False}
    pooled.config = {**config, "suites": suites, "results_dir": str(Path(config["results_dir"]) / POOL)}
    return pooled


def _per_conversation(results: Results, cid: str) -> list[str]:
    """A conversation's score outputs, the measures last: they are written together, read together."""
    return [results.segments(cid), results.transcript_json(cid), results.transcript_txt(cid), results.measures_json(cid)]


def _link_or_copy(src: str, dst: str) -> None:
    # Recordings and scores are only ever replaced by a rename, never written in place, so a hard link is
    # as safe as a copy and costs no space; another file system gets a copy.
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _forget(results: Results, cid: str) -> None:
    for path in _per_conversation(results, cid)[::-1]:  # the measures first: no score outlives its recording
        Path(path).unlink(missing_ok=True)
    shutil.rmtree(results.recording(cid), ignore_errors=True)


def gather(pooled: Pooled, root: Path, log: Callable[[str], None] = print) -> dict[str, int]:
    """Bring every recording of ``pooled`` (and its scores, when made) into the pool folder."""
    pool = results_of(pooled.config, root)
    counts = {"added": 0, "kept": 0, "replaced": 0, "removed": 0, "scores": 0}
    for shard in pool.shards("recordings"):
        for entry in os.scandir(pool.shard_folder("recordings", shard)):
            if not entry.name.startswith(".") and entry.name not in pooled.sources:
                _forget(pool, entry.name)
                counts["removed"] += 1
    for cid, source in pooled.sources.items():
        src, dst = Path(source.recording(cid)), Path(pool.recording(cid))
        digest = (read_meta(src).get("provenance") or {}).get("recording")
        if is_complete(dst):
            if digest and (read_meta(dst).get("provenance") or {}).get("recording") == digest:
                counts["kept"] += 1
                continue
            _forget(pool, cid)
            counts["replaced"] += 1
        else:
            shutil.rmtree(dst, ignore_errors=True)
            counts["added"] += 1
        # Staged under the record stage's name for unfinished work, so a killed pool leaves no folder that
        # looks complete (`dyafdb verify` names the leftover as partial).
        staging = dst.parent / f".partial-{cid}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(src, staging, copy_function=_link_or_copy)
        os.replace(staging, dst)
        made = _per_conversation(source, cid)
        if all(os.path.exists(p) for p in made):
            for path, target in zip(made, _per_conversation(pool, cid)):
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                tmp = f"{target}.{os.getpid()}.tmp"
                _link_or_copy(path, tmp)
                os.replace(tmp, target)
            counts["scores"] += 1
    log(f"pool {pool.root}: {len(pooled.sources)} conversations ({counts['added']} added, {counts['replaced']} "
        f"replaced, {counts['kept']} kept, {counts['removed']} removed; {counts['scores']} brought their scores) from "
        f"{len(pooled.people)} participants")
    for pid, left in pooled.not_recorded.items():
        log(f"  {pid}: {left} session{'' if left == 1 else 's'} of their share not recorded yet (left out)")
    return counts
