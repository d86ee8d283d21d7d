"""A results folder walked against its design, every problem named by kind (`dyafdb verify`).

Kinds (docs/reliability.md, "What a run holds"):

``missing``        an output the design calls for is not there (a recording, its measures, segments or
                   transcripts, a judge batch of an archetype whose measures table exists);
``not_in_design``  a recording or measures file whose id the design does not have (another config's,
                   or left from a config edit);
``identity``       a recording that is not the conversation asked for: another id in meta.json,
                   swapped or missing channels, another lead-in or window (dyafdb.score.check);
``stale``          made from other inputs than it should be: a recording whose design row, model
                   entries, scenario, lead-in or garble settings changed since; audio or text replaced
                   after recording; measures computed from another recording;
``rows``           duplicate or missing rows in measures.tsv or a judge batch;
``truncated``      a file cut short or not parseable (meta.json, audio.wav, text.jsonl, a JSON or JSONL);
``partial``        a staging folder or lock left by a record whose process is gone.

It reads meta.json and the measures files whole and stats the audio; it does not hash audio
(`--deep` does: ~20 ms per minute of conversation), so the paper's 7,560 conversations take
seconds (bench/bench_verify.py).
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError
from dyafdb.fileio import read_jsonl
from dyafdb.measures.table import check_measures_rows
from dyafdb.paths import Results, results_of, shard_of
from dyafdb.record.recording import lock_abandoned, owner_gone
from dyafdb.score.check import Mismatch, check_identity, check_made_from, check_recording_digest
from dyafdb.suite.design import Conversation, build_design

KINDS = ("missing", "not_in_design", "identity", "stale", "rows", "truncated", "partial")
# A float WAV as libsndfile writes it: the data plus a header of a few dozen bytes (fmt, fact chunks).
_WAV_HEADER_MAX = 256
_LEFTOVER = re.compile(r"^\.(partial|replaced|lock)-(?P<id>.+?)(?:-(?P<pid>\d+))?$")


@dataclass
class Problem:
    kind: str
    path: str
    message: str

    def line(self) -> str:
        return f"{self.kind}: {self.path}: {self.message}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    def add(self, kind: str, path: Path | str, message: str) -> None:
        self.problems.append(Problem(kind, str(path), message))

    @property
    def ok(self) -> bool:
        return not self.problems

    def by_kind(self) -> dict[str, list[Problem]]:
        grouped: dict[str, list[Problem]] = {k: [] for k in KINDS}
        for p in self.problems:
            grouped[p.kind].append(p)
        return {k: v for k, v in grouped.items() if v}

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "counts": dict(self.counts),
                "problems": {k: [{"path": p.path, "message": p.message} for p in v] for k, v in self.by_kind().items()}}

    def format(self, limit: int = 20) -> str:
        counts = ", ".join(f"{n:,} {k}" for k, n in self.counts.items())
        if self.ok:
            return f"ok: {counts}"
        lines = [f"{len(self.problems):,} problems ({', '.join(f'{len(v)} {k}' for k, v in self.by_kind().items())}); "
                 f"checked {counts}"]
        for kind, problems in self.by_kind().items():
            for p in problems[:limit]:
                lines.append("  " + p.line())
            if len(problems) > limit:
                lines.append(f"  ... and {len(problems) - limit:,} more {kind} (--json lists all)")
        return "\n".join(lines)


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def check_recording_folder(config: Mapping[str, Any], row: Conversation, folder: Path, report: Report,
                           root: Path, deep: bool) -> str | None:
    """Checks one recording; returns its recording digest when it is sound."""
    meta_path = folder / "meta.json"
    try:
        meta = _read_json(meta_path)
    except FileNotFoundError:
        report.add("missing", meta_path, "the recording has no meta.json (never finished); fix: delete the folder and "
                   "rerun Snakemake, or `dyafdb record --id " + row.conversation_id + "`")
        return None
    except (OSError, ValueError) as exc:
        report.add("truncated", meta_path, f"not readable JSON ({exc}); fix: delete the folder {folder} and rerun Snakemake")
        return None
    if not isinstance(meta, dict) or meta.get("complete") is not True:
        report.add("truncated", meta_path, "field complete is not true: the recording never finished; fix: delete the "
                   f"folder {folder} and rerun Snakemake")
        return None
    try:
        check_identity(config, meta, row.conversation_id, row, folder, root)
    except Mismatch as exc:
        report.add("stale" if exc.stale else "identity", meta_path, f"field {exc.field} {exc.detail}")
        return None
    ticks = meta.get("ticks")
    wav = folder / "audio.wav"
    try:
        size = wav.stat().st_size
        data = int(ticks) * FRAME_SAMPLES * 2 * 4
        if not data <= size <= data + _WAV_HEADER_MAX:
            report.add("truncated", wav, f"{size:,} bytes, but field ticks = {ticks} in meta.json needs {data:,} bytes of "
                       f"samples plus a header: the audio is cut short or belongs to another recording; fix: delete "
                       f"the folder {folder} and rerun Snakemake")
            return None
    except FileNotFoundError:
        report.add("missing", wav, f"no audio.wav beside meta.json; fix: delete the folder {folder} and rerun Snakemake")
        return None
    except (TypeError, ValueError):
        report.add("identity", meta_path, f"field ticks = {ticks!r} is not a number of ticks; fix: delete the folder "
                   f"{folder} and rerun Snakemake")
        return None
    text_path = folder / "text.jsonl"
    try:
        with open(text_path, "rb") as fh:
            if fh.seek(0, 2) > 0:
                fh.seek(-1, 2)
                if fh.read(1) != b"\n":
                    report.add("truncated", text_path, "the last line is cut off (no line end); fix: delete the folder "
                               f"{folder} and rerun Snakemake")
                    return None
    except FileNotFoundError:
        report.add("missing", text_path, f"no text.jsonl beside meta.json; fix: delete the folder {folder} and rerun Snakemake")
        return None
    provenance = meta.get("provenance") if isinstance(meta.get("provenance"), dict) else {}
    if deep:
        try:
            check_recording_digest(meta, folder)
        except Mismatch as exc:
            report.add("stale", meta_path, f"field {exc.field} {exc.detail}")
            return None
    report.counts["recordings"] += 1
    return provenance.get("recording")


def check_measures_file(results: Results, cid: str, digest: str | None, report: Report) -> None:
    path = Path(results.measures_json(cid))
    try:
        doc = _read_json(path)
    except (OSError, ValueError) as exc:
        report.add("truncated", path, f"not readable JSON ({exc}); fix: delete it and rerun Snakemake")
        return
    if not isinstance(doc, dict):
        report.add("truncated", path, "not a measures document (a JSON object); fix: delete it and rerun Snakemake")
        return
    try:
        check_made_from(path, doc, {"conversation_id": cid, **({"recording": digest} if digest else {})},
                        f"fix: delete it and rerun Snakemake (or `dyafdb score all --id {cid}`)")
    except Mismatch as exc:
        report.add("stale" if exc.stale else "identity", path, f"field {exc.field} {exc.detail}")
        return
    if doc.get("provenance") is None and doc.get("conversation_id") not in (None, cid):  # measures made before provenance
        report.add("identity", path, f"field conversation_id = {doc.get('conversation_id')!r}, expected {cid!r}; fix: "
                   "delete it and rerun Snakemake")
        return
    for other in (results.segments(cid), results.transcript_json(cid), results.transcript_txt(cid)):
        if not os.path.exists(other):
            report.add("missing", other, "the measures exist but this file made in the same job does not; fix: delete "
                       f"{path} and rerun Snakemake")
    report.counts["measures"] += 1


def check_leftovers(results: Results, shards: Iterable[str], report: Report) -> None:
    for shard in sorted(shards):
        folder = Path(results.shard_folder("recordings", shard))
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            found = _LEFTOVER.match(entry.name)
            if not found:
                continue
            if entry.name.startswith(".lock-"):
                if lock_abandoned(Path(entry.path)):
                    report.add("partial", entry.path, "a lock of a record whose process is gone; fix: delete it "
                               "(`dyafdb record` also takes over such a lock)")
                continue
            pid = found.group("pid")
            if pid is None or owner_gone(Path(entry.path)):
                report.add("partial", entry.path, f"a {found.group(1)} folder of a record whose process ({pid}) is gone; "
                           "fix: delete it (the next record of this conversation also removes it)")


def check_measures_table(results: Results, rows: Sequence[Conversation], report: Report) -> None:
    """measures.tsv by the rule every reader applies (dyafdb.measures.table.check_measures_rows), plus
    what only the design knows: rows of conversations it does not have, conversations with none."""
    path = Path(results.measures_table)
    if not path.exists():
        return
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            table = list(csv.DictReader(fh, delimiter="\t"))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        report.add("truncated", path, f"not a readable measures table ({exc}); fix: delete it and rerun Snakemake")
        return
    for n, rec in enumerate(table, 2):
        if None in rec or any(v is None for v in rec.values()) or "conversation_id" not in rec:
            report.add("truncated", path, f"line {n} does not have the header's fields; fix: delete it and rerun Snakemake")
            return
    try:
        check_measures_rows(path, table)
    except InputError as exc:
        report.add("rows", path, str(exc).split(": ", 1)[1])
    held = {rec["conversation_id"] for rec in table}
    ids = {r.conversation_id for r in rows}
    for cid in sorted(held - ids):
        report.add("not_in_design", path, f"rows of conversation {cid}, which the design does not have; fix: rerun "
                   "Snakemake (the table is rebuilt for the design)")
    for cid in sorted(ids - held):
        report.add("rows", path, f"no rows for conversation {cid}; fix: delete the table and rerun Snakemake")
    report.counts["measures.tsv rows"] += len(table)


def check_judge_batches(results: Results, report: Report) -> None:
    """Every line of every judge batch parses (the reader every stage uses), and no seat is answered twice."""
    fix = "delete the file and rerun Snakemake (cached replies are reused)"
    for path in sorted(results.judge_batches()):
        seats: dict[tuple[Any, ...], int] = {}
        try:
            for n, rec in read_jsonl(path, fix):
                seat = (rec.get("conversation_id"), rec.get("seat"), rec.get("question"))
                if seat in seats:
                    report.add("rows", path, f"line {n} answers conversation {seat[0]} seat {seat[1]} again (line "
                               f"{seats[seat]}); fix: delete the file and rerun Snakemake")
                seats[seat] = n
        except InputError as exc:
            report.add("truncated", path, str(exc).split(": ", 1)[1])
            continue
        except OSError as exc:
            report.add("truncated", path, f"not readable ({exc}); fix: {fix}")
            continue
        report.counts["judge answers"] += len(seats)


def verify(config: Mapping[str, Any], root: Path, deep: bool = False, rows: Sequence[Conversation] | None = None) -> Report:
    """Everything under the config's results folder, checked against its design."""
    results = results_of(config, root)
    rows = list(rows if rows is not None else build_design(config, root))
    by_id = {r.conversation_id: r for r in rows}
    report = Report()
    report.counts["conversations"] = len(rows)
    shards = {shard_of(r.conversation_id) for r in rows}
    on_disk_shards = set(results.shards("recordings")) | set(results.shards("measures"))
    for shard in sorted(on_disk_shards):
        for entry in _scandir(results.shard_folder("recordings", shard)):
            if not entry.name.startswith(".") and entry.name not in by_id:
                report.add("not_in_design", entry.path, "a recording of a conversation this config's design does not "
                           "have; fix: move it out of the results folder, or use the config it was made with")
        for entry in _scandir(results.shard_folder("measures", shard)):
            if entry.name.endswith(".json") and entry.name[:-5] not in by_id:
                report.add("not_in_design", entry.path, "measures of a conversation this config's design does not "
                           "have; fix: move it out of the results folder, or use the config it was made with")
    tables = {a: os.path.exists(results.mechanical_table(a)) for a in {r.archetype for r in rows}}
    for row in rows:
        cid = row.conversation_id
        folder = Path(results.recording(cid))
        measures = Path(results.measures_json(cid))
        if not folder.is_dir():
            report.add("missing", folder, "not recorded; fix: run Snakemake (it plans it), or `dyafdb record --id "
                       f"{cid}`")
            if measures.exists():
                report.add("stale", measures, "measures of a recording that is gone; fix: rerun Snakemake (it records "
                           "and scores the conversation again)")
            continue
        digest = check_recording_folder(config, row, folder, report, root, deep)
        if measures.exists():
            check_measures_file(results, cid, digest, report)
        elif tables[row.archetype]:
            report.add("missing", measures, "not scored, though its archetype's table exists; fix: rerun Snakemake "
                       "(it plans it)")
    check_leftovers(results, on_disk_shards | shards, report)
    check_measures_table(results, rows, report)
    check_judge_batches(results, report)
    return report


def _scandir(folder: str) -> list[os.DirEntry]:
    try:
        return list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
