"""``results/scores/measures.tsv``: every measure of every conversation, one row per
(conversation, side, measure, judge), in long format.

Columns: conversation_id, suite, archetype, scenario, pairing, play, window_s, model (this side's
model), partner (the other side's), side, role, opener (true if this side opened), repetition,
attempt (the accepted recording attempt), measure, judge (empty for mechanical measures), value
(number; empty when undefined or invalid), label (the judge's label; for mechanical rows empty),
quality (``demo`` for results of a demo-quality judge or a ``demo_quality`` config, else empty),
check (empty, or why a judge row failed a check of :mod:`dyafdb.judge.checks`: the value is then
voided or flagged as a contradiction, the judge's raw label kept), recording (the digest of the
recording the row was computed from, docs/formats.md "Provenance"; empty for recordings made before it).

Which rows exist:

* mechanical, every side of every conversation: tor_pause, tor_pause_n, tor_end, tor_end_n,
  backchannel, barge_in, barge_in_n, turns, speech_s, exclusive_s, overlap_s, occupancy
  (:mod:`dyafdb.score.turntaking`, :mod:`dyafdb.score.tasks`), and the audio health measures
  (:data:`dyafdb.score.health.MEASURES`: DNSMOS, speech-text agreement, echo, no-response); T4-2 adds
  leak and time_to_leak_s on the attacker's row;
* judged: the rows of :mod:`dyafdb.judge.rubric`, once per judge;
* ``garble_failure`` (1/0) on each side whose model the garble watcher checks.

A run the garble watcher still flags after the last attempt counts as a failure: in T3-1 and T3-2
(occupancy is defined on any audio) all its rows are kept; elsewhere only its garble_failure rows
are written, so it can be counted as a failure of the garbled model but contributes no score.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from dyafdb.suite.design import Conversation
from dyafdb.suite.scenarios import find_scenario
from dyafdb.fileio import read_jsonl, write_text_atomic
from dyafdb.record.garble import failed_sides, read_garble
from dyafdb.judge.checks import check_conversation
from dyafdb.judge.rubric import QUESTIONS, judge_plan
from dyafdb.judge.runner import judge_output_path
from dyafdb.judge.settings import judge_settings
from dyafdb.record.recording import read_meta
from dyafdb.errors import InputError
from dyafdb.schema_check import schema_default
from dyafdb.score.check import check_made_from
from dyafdb.score.conversation import conversation_paths, read_measures

COLUMNS = ["conversation_id", "suite", "archetype", "scenario", "pairing", "play", "window_s", "model", "partner",
           "side", "role", "opener", "repetition", "attempt", "measure", "judge", "value", "label", "quality", "check", "recording"]
# mechanical tables written before the check column existed are still read (their rows have none)
# tables written before the check column, and before the recording digest, are still read
_OLDER_COLUMNS = (COLUMNS[:-2], COLUMNS[:-1])
KEEP_GARBLED = ("T3-1", "T3-2")


def format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.6g}" if abs(value) < 1e6 else repr(value)
    return str(value)


def _side_columns(row: Conversation, side: str, attempt: int) -> dict[str, Any]:
    other = "b" if side == "a" else "a"
    return {
        "conversation_id": row.conversation_id, "suite": row.suite, "archetype": row.archetype,
        "scenario": row.scenario, "pairing": row.pairing, "play": row.play, "window_s": format_value(row.window_s),
        "model": row.model_of(side), "partner": row.model_of(other), "side": side, "role": row.role_of(side),
        "opener": "true" if row.opener == side else "false", "repetition": row.repetition, "attempt": attempt,
    }


def judge_files(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation]) -> list[tuple[str, Path]]:
    """(judge, path) of every judge batch the design needs, for the judges the config runs."""
    settings = judge_settings(config, root)
    archetypes = sorted({r.archetype for r in rows})
    return [(judge, judge_output_path(config, root, judge, a, q)) for judge in settings.run for a, q in judge_plan(archetypes)]


def table_rows(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation],
               with_judge: bool = True) -> Iterator[dict[str, Any]]:
    demo_config = bool(config.get("demo_quality", schema_default("config", "demo_quality")))
    kept: dict[str, tuple[Conversation, int]] = {}
    for row in sorted(rows, key=lambda r: r.conversation_id):
        paths = conversation_paths(config, root, row.conversation_id)
        meta = read_meta(paths.recording)
        attempt = int(meta.get("attempt", row.attempt))
        recording = recording_of(meta)
        garble = read_garble(paths.recording)
        failed = failed_sides(garble)
        if not failed or row.archetype in KEEP_GARBLED:
            kept[row.conversation_id] = (row, attempt, recording)
            doc = read_measures(paths.measures)
            cid = row.conversation_id
            check_made_from(paths.measures, doc, {"conversation_id": cid, **({"recording": recording} if recording else {})},
                            f"fix: delete it and rerun Snakemake (or `dyafdb score all --id {cid}`)")
            for side in ("a", "b"):
                base = _side_columns(row, side, attempt)
                for measure, value in doc["values"][side].items():
                    yield {**base, "measure": measure, "judge": "", "value": format_value(value), "label": "",
                           "quality": "demo" if demo_config else "", "check": "", "recording": recording}
        for side in (garble or {}).get("checked_sides", []):
            yield {**_side_columns(row, side, attempt), "measure": "garble_failure", "judge": "",
                   "value": format_value(int(side in failed)), "label": "", "quality": "demo" if demo_config else "",
                   "check": "", "recording": recording}
    if with_judge:
        yield from _judge_rows(config, root, rows, kept)


def recording_of(meta: Mapping[str, Any]) -> str:
    """The recording digest a recording's meta.json carries ("" for recordings made before it)."""
    provenance = meta.get("provenance")
    return str(provenance.get("recording") or "") if isinstance(provenance, Mapping) else ""


def _judge_rows(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation],
                kept: Mapping[str, tuple[Conversation, int, str]]) -> Iterator[dict[str, Any]]:
    """Judge rows of the kept conversations (those with mechanical rows), for every judge the config
    runs, after the judge checks (:mod:`dyafdb.judge.checks`) of each conversation's answers."""
    demo_config = bool(config.get("demo_quality", schema_default("config", "demo_quality")))
    records: dict[str, list[dict[str, Any]]] = {}
    for judge, path in judge_files(config, root, rows):
        if not path.exists():
            raise InputError(f"{path}: judge results not found; run `dyafdb judge --judge {judge}` "
                             "(or build the table without judge rows: `dyafdb measures --no-judge`)")
        archetype, question = path.parent.name, path.stem
        seats = QUESTIONS[question].seats(archetype)
        planned = {cid: seats for cid, (row, _, _) in kept.items() if row.archetype == archetype}
        fix = f"judge the batch again: `dyafdb judge --judge {judge} --archetype {archetype} --question {question}`"
        for cid, rec in read_judge_batch(path, planned, fix):
            if cid in kept and rec.get("recording") not in (None, "", kept[cid][2]):
                raise InputError(f"{path}: the answer about {cid} has field recording = {rec['recording']!r}, but the "
                                 f"recording now has digest {kept[cid][2]!r}: it judged another recording's "
                                 f"transcript; fix: {fix}")
            # only what the checks and the rows need: the full suite holds every answer at once here
            keep = {k: rec.get(k) for k in ("question", "seat", "label", "fields", "rows", "demo_quality")}
            records.setdefault(cid, []).append({**keep, "judge": judge})
    scenarios: dict[str, Any] = {}
    for cid in sorted(records):
        row, attempt, recording = kept[cid]
        if row.scenario not in scenarios:
            scenarios[row.scenario] = find_scenario(Path(root) / config["scenarios_dir"], row.scenario)
        transcript = conversation_paths(config, root, cid).transcript_txt
        text = transcript.read_text(encoding="utf-8") if transcript.exists() else ""
        for rec in check_conversation(records[cid], scenarios[row.scenario].answer_key, text):
            quality = "demo" if (rec.get("demo_quality") or demo_config) else ""
            for r in rec["rows"]:
                yield {**_side_columns(row, r["side"], attempt), "measure": r["measure"], "judge": rec["judge"],
                       "value": format_value(r["value"]), "label": r.get("label") or "", "quality": quality,
                       "check": r.get("check") or "", "recording": recording}


def read_judge_batch(path: Path, planned: Mapping[str, Sequence[str | None]],
                     fix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(conversation id, record) of a judge batch's records for the ``planned`` conversations, each of
    whose seats (``None``: the pair) must be answered exactly once; records of other conversations
    (not in this design, or a garbled failure outside T3) are passed over. A seat answered twice or
    not at all is an InputError naming the file, the line(s) and ``fix``: either would change the
    table's rows without a word."""
    seen: dict[tuple[str, Any], int] = {}
    for n, rec in read_jsonl(path, fix):
        cid = rec.get("conversation_id")
        if not isinstance(cid, str):
            raise InputError(f"{path}: line {n} has no conversation_id; {fix}")
        if cid not in planned:
            continue
        seat = rec.get("seat")
        if (cid, seat) in seen:
            raise InputError(f"{path}: line {n}: conversation {cid} seat {seat or 'pair'} is answered twice (also on "
                             f"line {seen[cid, seat]}); {fix}")
        seen[cid, seat] = n
        yield cid, rec
    for cid in sorted(planned):
        for seat in planned[cid]:
            if (cid, seat) not in seen:
                raise InputError(f"{path}: no record for conversation {cid} seat {seat or 'pair'} (the batch is "
                                 f"incomplete or not of this design); {fix}")


_KEY = ("conversation_id", "side", "measure", "judge")


def check_measures_rows(path: Path, rows: Iterable[Mapping[str, Any]], first_line: int = 2) -> None:
    """Refuse a measures table (rows as read, the header on line ``first_line - 1``) that gives one
    (conversation, side, measure, judge) twice, with equal values or not: one would win, or both count.
    Refuse too a conversation with mechanical rows on one side only: its other seat went missing."""
    fix = "rebuild it (`dyafdb measures`, or delete it and rerun Snakemake) instead of editing it by hand"
    seen: dict[tuple[str, ...], int] = {}
    sides: dict[str, dict[str, int]] = {}
    for n, row in enumerate(rows, first_line):
        key = tuple(str(row.get(k) or "") for k in _KEY)
        if key in seen:
            cid, side, measure, judge = key
            raise InputError(f"{path}: line {n}: conversation {cid} side {side} measure {measure}"
                             f"{f' judge {judge}' if judge else ''} is given twice (value {row.get('value')!r} here, "
                             f"also on line {seen[key]}); {fix}")
        seen[key] = n
        if not key[3] and key[2] != "garble_failure":  # a garbled failure outside T3 keeps only those rows
            sides.setdefault(key[0], {}).setdefault(key[1], n)
    for cid, found in sides.items():
        for side in ("a", "b"):
            if side not in found:
                other = next(iter(found.values()))
                raise InputError(f"{path}: conversation {cid} has mechanical rows (line {other}) but none for side "
                                 f"{side}; {fix}")


def combined_rows(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation], mechanical: Sequence[Path],
                  with_judge: bool = True) -> Iterator[dict[str, Any]]:
    """The whole table from per-archetype mechanical tables (``table_rows(..., with_judge=False)`` of
    each archetype, in archetype order) plus the judge rows: the same rows as :func:`table_rows`,
    without reading every conversation's files again."""
    by_id = {r.conversation_id: r for r in rows}
    kept: dict[str, tuple[Conversation, int, str]] = {}
    for path in mechanical:
        try:
            fh = open(path, encoding="utf-8", newline="")
        except FileNotFoundError:
            raise InputError(f"{path}: mechanical table not found; build it with `dyafdb measures --archetype "
                             f"{Path(path).stem} --no-judge --out {path}`") from None
        with fh:
            reader = csv.DictReader(fh, delimiter="\t")
            if reader.fieldnames not in (COLUMNS, *_OLDER_COLUMNS):
                raise InputError(f"{path}: columns {reader.fieldnames} are not those of a measures table ({COLUMNS}); "
                                 "rebuild it with `dyafdb measures --no-judge`")
            table = list(reader)
        check_measures_rows(path, table)
        for rec in table:
            cid = rec["conversation_id"]
            if cid not in by_id:
                continue  # left over from an earlier design
            if rec["measure"] != "garble_failure":
                kept[cid] = (by_id[cid], int(rec["attempt"]), rec.get("recording") or "")
            yield {**rec, "check": rec.get("check") or "", "recording": rec.get("recording") or ""}
    if with_judge:
        yield from _judge_rows(config, root, rows, kept)


def write_table(path: Path, records: Iterable[Mapping[str, Any]]) -> int:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    n = 0
    for rec in records:
        writer.writerow(rec)
        n += 1
    write_text_atomic(Path(path), buffer.getvalue())
    return n
