"""`dyafdb verify BUNDLE`: a bundle checked by what it holds, not by who sent it.

Kinds of problem (each names the member, the field or cell, and both values):

``schema``      results.json does not fit src/dyafdb/schemas/results.schema.json;
``digest``      a member whose bytes are not those results.json lists, a member it does not list, one it
                lists that is missing; the fingerprint that does not match the scenarios and prompts held;
``recording``   a conversation whose meta.json, measures rows or judge answers name another recording
                digest than results.json (and, with full audio, audio and text that hash to another);
``answers``     a judge answer whose rows measures.tsv does not hold with the same value and label;
``numbers``     a table or headline score that the bundle's measures do not give again.

The numbers are recomputed by the analysis's own products (dyafdb.share.recompute), so a bundle
that passes gives the tables it carries, byte for byte.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyafdb.analysis.bundles import (DESIGN, MEASURES, RESULTS_DIR, RESULTS_JSON, Bundle, design_scenarios,
                                     differences, describe_differences, fingerprint)
from dyafdb.errors import InputError
from dyafdb.paths import Results

KINDS = ("schema", "digest", "recording", "answers", "numbers")


@dataclass
class BundleReport:
    path: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, message: str) -> None:
        self.problems.append((kind, message))

    @property
    def ok(self) -> bool:
        return not self.problems

    def format(self, limit: int = 50) -> str:
        if self.ok:
            c = self.counts
            return (f"ok: {self.path}: schema, {c.get('files', 0)} member digests, {c.get('recordings', 0)} recordings, "
                    f"{c.get('answers', 0)} judge answers and {c.get('tables', 0)} tables recomputed from its measures agree")
        lines = [f"{len(self.problems)} problem(s) in {self.path}:"]
        lines += [f"{kind}: {msg}" for kind, msg in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"... and {len(self.problems) - limit} more (--json lists them all)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"bundle": self.path, "ok": self.ok, "counts": self.counts,
                "problems": [{"kind": k, "message": m} for k, m in self.problems]}


def verify_bundle(path: Path | str, numbers: bool = True) -> BundleReport:
    import jsonschema

    from dyafdb.share.bundle import load_results_schema, member_digest

    bundle = Bundle(path)
    report = BundleReport(str(path))
    try:
        doc = json.loads(bundle.text(RESULTS_JSON))
    except ValueError as exc:
        report.add("schema", f"{RESULTS_JSON}: not JSON ({exc})")
        return report
    for err in sorted(jsonschema.Draft202012Validator(load_results_schema()).iter_errors(doc), key=lambda e: list(e.path)):
        report.add("schema", f"{RESULTS_JSON} field {'/'.join(map(str, err.path)) or '(top)'}: {err.message}")
    if report.problems:
        return report
    files = doc["files"]
    names = [n for n in bundle.names() if n != RESULTS_JSON]
    for name in names:
        if name not in files:
            report.add("digest", f"{name}: in the bundle but not listed in results.json files (added after it was written)")
        elif member_digest(bundle.read(name)) != files[name]:
            report.add("digest", f"{name}: its bytes have digest {member_digest(bundle.read(name))}, results.json lists "
                                 f"{files[name]} (changed after the bundle was written)")
    for name in sorted(set(files) - set(names)):
        report.add("digest", f"{name}: listed in results.json files but not in the bundle")
    report.counts["files"] = len(files)
    with tempfile.TemporaryDirectory(prefix="dyafdb-verify-") as tmp:
        root = bundle.extract(Path(tmp))
        _check_fingerprint(doc, root, report)
        measures = _measure_rows(root / MEASURES)
        _check_recordings(doc, root, measures, report)
        _check_answers(root, measures, report)
        if numbers:
            _check_numbers(doc, root, report)
    return report


def _check_fingerprint(doc: dict[str, Any], root: Path, report: BundleReport) -> None:
    from dyafdb.config import validate_config

    try:
        config = validate_config(doc["config"], "results.json config")
    except InputError as exc:
        report.add("schema", f"results.json config: {exc}")
        return
    scenarios = design_scenarios((root / DESIGN).read_text(encoding="utf-8")) if (root / DESIGN).exists() else {}
    held = fingerprint(config, root, scenarios, prompts_dir=root / "prompts")
    diffs = differences(doc["fingerprint"], held)
    if diffs:
        report.add("digest", "results.json fingerprint does not match the scenarios, prompts and config the bundle holds ("
                   + describe_differences(diffs) + ")")


def _measure_rows(path: Path) -> dict[tuple[str, str, str, str], dict[str, str]]:
    import csv

    if not path.exists():
        return {}
    with open(path, encoding="utf-8", newline="") as fh:
        return {(r["conversation_id"], r["side"], r["measure"], r["judge"]): r
                for r in csv.DictReader(fh, delimiter="\t")}


def _check_recordings(doc: dict[str, Any], root: Path, measures: dict, report: BundleReport) -> None:
    from dyafdb.provenance import digest_files

    results = Results(str(root / RESULTS_DIR))
    seen = 0
    by_conv: dict[str, set[str]] = {}
    for (cid, _, _, _), row in measures.items():
        by_conv.setdefault(cid, set()).add(row.get("recording", ""))
    for cid, digest in doc["recordings"].items():
        seen += 1
        meta_path = Path(results.recording_file(cid, "meta.json"))
        if not meta_path.exists():
            report.add("recording", f"{cid}: listed in results.json recordings but its meta.json is not in the bundle")
            continue
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        made = (meta.get("provenance") or {}).get("recording") or ""
        if made != digest:
            report.add("recording", f"{cid}: meta.json records recording {made!r}, results.json lists {digest!r}")
        other = sorted(d for d in by_conv.get(cid, set()) if d and d != digest)
        if other:
            report.add("recording", f"{cid}: measures.tsv rows were computed from recording {other[0]!r}, not {digest!r}")
        wav = Path(results.recording_file(cid, "audio.wav"))
        if wav.exists() and digest:
            actual = digest_files([wav, Path(results.recording_file(cid, "text.jsonl"))])
            if actual != digest:
                report.add("recording", f"{cid}: audio.wav and text.jsonl hash to {actual!r}, meta.json records {digest!r}")
    report.counts["recordings"] = seen


def _same(a: Any, b: str) -> bool:
    if a is None:
        return b == ""
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
    except (TypeError, ValueError):
        return str(a) == b


def _check_answers(root: Path, measures: dict, report: BundleReport) -> None:
    from dyafdb.fileio import read_jsonl

    count = 0
    for batch in sorted(Results(str(root / RESULTS_DIR)).judge_batches()):
        name = batch.relative_to(root).as_posix()
        for _, rec in read_jsonl(batch, "write the bundle again with `dyafdb bundle`"):
            count += 1
            cid, judge = rec.get("conversation_id"), rec.get("judge")
            for row in rec.get("rows") or []:
                key = (cid, row.get("side"), row.get("measure"), judge)
                got = measures.get(key)
                where = f"{name}: conversation {cid} seat {row.get('side')} measure {row.get('measure')}"
                if got is None:
                    report.add("answers", f"{where}: the answer has no row in measures.tsv")
                elif not _same(row.get("value"), got.get("value", "")) or str(row.get("label") or "") != got.get("label", ""):
                    report.add("answers", f"{where}: the judge answered value {row.get('value')!r} label "
                                          f"{row.get('label')!r}, measures.tsv holds value {got.get('value')!r} "
                                          f"label {got.get('label')!r}")
    report.counts["answers"] = count


def _check_numbers(doc: dict[str, Any], root: Path, report: BundleReport) -> None:
    from dyafdb.config import validate_config
    from dyafdb.share.bundle import headline
    from dyafdb.share.recompute import recompute_tables, table_differences
    from dyafdb.suite.design import build_design

    config = validate_config(doc["config"], "results.json config")
    rows = build_design(config, root)
    held = {r.strip().split("\t")[0] for r in (root / DESIGN).read_text(encoding="utf-8").splitlines()[1:] if r.strip()}
    rows = [r for r in rows if r.conversation_id in held]
    out = Results(str(root / ".recomputed"))
    try:
        stems = recompute_tables(config, root, root / MEASURES, out, {r.conversation_id: r for r in rows})
    except InputError as exc:
        report.add("numbers", f"the analysis could not be recomputed from {MEASURES}: {exc}")
        return
    tables = Path(Results(str(root / RESULTS_DIR)).analysis_table("x")).parent
    got = Path(out.analysis_table("x")).parent
    for line in table_differences(tables, got, stems):
        report.add("numbers", line)
    again = headline(got, doc.get("tasks") or [])
    if _rounded(again) != _rounded(doc["headline"]):
        first = next((a for a, b in zip(doc["headline"], again) if _rounded([a]) != _rounded([b])), None)
        report.add("numbers", f"results.json headline scores differ from those recomputed from {MEASURES}"
                   + (f" (first: {first['task']} {first['model']} x {first['partner']}: {first['value']} listed)" if first else ""))
    report.counts["tables"] = len([s for s in stems if (tables / f"{s}.tsv").exists()])


def _rounded(entries: list[dict[str, Any]]) -> list[tuple]:
    def r(v: Any) -> Any:
        return None if v is None else round(float(v), 9)

    return [(e["task"], e["model"], e["partner"], r(e["value"]), r(e["lower"]), r(e["upper"]), e["n"]) for e in entries]
