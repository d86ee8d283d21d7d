"""``results/scores/measures.tsv``: every measure of every conversation, one row per
(conversation, side, measure, judge), in long format.

Columns: conversation_id, suite, archetype, scenario, pairing, play, window_s, model (this side's
model), partner (the other side's), side, role, opener (true if this side opened), repetition,
attempt (the accepted recording attempt), measure, judge (empty for mechanical measures), value
(number; empty when undefined or invalid), label (the judge's label; for mechanical rows empty),
quality (``demo`` for results of a demo-quality judge or a ``demo_quality`` config, else empty),
check (empty, or why a judge row failed a check of :mod:`dyafdb.judge.checks`: the value is then
voided or flagged as a contradiction, the judge's raw label kept).

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
import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from dyafdb.suite.design import Conversation
from dyafdb.suite.scenarios import find_scenario
from dyafdb.fileio import write_text_atomic
from dyafdb.record.garble import failed_sides, read_garble
from dyafdb.judge.checks import check_conversation
from dyafdb.judge.rubric import judge_plan
from dyafdb.judge.runner import judge_output_path
from dyafdb.judge.settings import judge_settings
from dyafdb.record.recording import read_meta
from dyafdb.errors import InputError
from dyafdb.score.conversation import conversation_paths, read_measures

COLUMNS = ["conversation_id", "suite", "archetype", "scenario", "pairing", "play", "window_s", "model", "partner",
           "side", "role", "opener", "repetition", "attempt", "measure", "judge", "value", "label", "quality", "check"]
# mechanical tables written before the check column existed are still read (their rows have none)
_COLUMNS_BEFORE_CHECKS = COLUMNS[:-1]
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
    demo_config = bool(config.get("demo_quality", False))
    kept: dict[str, tuple[Conversation, int]] = {}
    for row in sorted(rows, key=lambda r: r.conversation_id):
        paths = conversation_paths(config, root, row.conversation_id)
        attempt = int(read_meta(paths.recording).get("attempt", row.attempt))
        garble = read_garble(paths.recording)
        failed = failed_sides(garble)
        if not failed or row.archetype in KEEP_GARBLED:
            kept[row.conversation_id] = (row, attempt)
            doc = read_measures(paths.measures)
            for side in ("a", "b"):
                base = _side_columns(row, side, attempt)
                for measure, value in doc["values"][side].items():
                    yield {**base, "measure": measure, "judge": "", "value": format_value(value), "label": "",
                           "quality": "demo" if demo_config else "", "check": ""}
        for side in (garble or {}).get("checked_sides", []):
            yield {**_side_columns(row, side, attempt), "measure": "garble_failure", "judge": "",
                   "value": format_value(int(side in failed)), "label": "", "quality": "demo" if demo_config else "",
                   "check": ""}
    if with_judge:
        yield from _judge_rows(config, root, rows, kept)


def _judge_rows(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation],
                kept: Mapping[str, tuple[Conversation, int]]) -> Iterator[dict[str, Any]]:
    """Judge rows of the kept conversations (those with mechanical rows), for every judge the config
    runs, after the judge checks (:mod:`dyafdb.judge.checks`) of each conversation's answers."""
    demo_config = bool(config.get("demo_quality", False))
    records: dict[str, list[dict[str, Any]]] = {}
    for judge, path in judge_files(config, root, rows):
        if not path.exists():
            raise InputError(f"{path}: judge results not found; run `dyafdb judge --judge {judge}` "
                             "(or build the table without judge rows: `dyafdb measures --no-judge`)")
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = json.loads(line)
                if rec["conversation_id"] not in kept:
                    continue  # not in this design, or a garbled failure outside T3
                # only what the checks and the rows need: the full suite holds every answer at once here
                keep = {k: rec.get(k) for k in ("question", "seat", "label", "fields", "rows", "demo_quality")}
                records.setdefault(rec["conversation_id"], []).append({**keep, "judge": judge})
    scenarios: dict[str, Any] = {}
    for cid in sorted(records):
        row, attempt = kept[cid]
        if row.scenario not in scenarios:
            scenarios[row.scenario] = find_scenario(Path(root) / config["scenarios_dir"], row.scenario)
        transcript = conversation_paths(config, root, cid).transcript_txt
        text = transcript.read_text(encoding="utf-8") if transcript.exists() else ""
        for rec in check_conversation(records[cid], scenarios[row.scenario].answer_key, text):
            quality = "demo" if (rec.get("demo_quality") or demo_config) else ""
            for r in rec["rows"]:
                yield {**_side_columns(row, r["side"], attempt), "measure": r["measure"], "judge": rec["judge"],
                       "value": format_value(r["value"]), "label": r.get("label") or "", "quality": quality,
                       "check": r.get("check") or ""}


def combined_rows(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation], mechanical: Sequence[Path],
                  with_judge: bool = True) -> Iterator[dict[str, Any]]:
    """The whole table from per-archetype mechanical tables (``table_rows(..., with_judge=False)`` of
    each archetype, in archetype order) plus the judge rows: the same rows as :func:`table_rows`,
    without reading every conversation's files again."""
    by_id = {r.conversation_id: r for r in rows}
    kept: dict[str, tuple[Conversation, int]] = {}
    for path in mechanical:
        try:
            fh = open(path, encoding="utf-8", newline="")
        except FileNotFoundError:
            raise InputError(f"{path}: mechanical table not found; build it with `dyafdb measures --archetype "
                             f"{Path(path).stem} --no-judge --out {path}`") from None
        with fh:
            reader = csv.DictReader(fh, delimiter="\t")
            if reader.fieldnames not in (COLUMNS, _COLUMNS_BEFORE_CHECKS):
                raise InputError(f"{path}: columns {reader.fieldnames} are not those of a measures table ({COLUMNS}); "
                                 "rebuild it with `dyafdb measures --no-judge`")
            for rec in reader:
                cid = rec["conversation_id"]
                if cid not in by_id:
                    continue  # left over from an earlier design
                if rec["measure"] != "garble_failure":
                    kept[cid] = (by_id[cid], int(rec["attempt"]))
                yield {**rec, "check": rec.get("check") or ""}
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
