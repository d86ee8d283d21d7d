"""`dyafdb bundle`: one archive holding a run's results, checkable by anyone (docs/formats.md, "Results bundle").

The archive is a project root: ``results.json`` (what the run is: config and scenario digests,
code and package versions, every headline score with its n and interval, the answer policy, the
judges, a digest of every other member), ``results/`` in the layout of dyafdb.paths (design table,
measures.tsv, judge answers, transcripts, text channels, segments, per-conversation measures,
meta.json with each recording's provenance, the analysis tables, optionally audio), the scenario
files under ``scenarios/`` and the judge prompts under ``prompts/``. Its config names those folders
relatively, so the unpacked bundle is a project `dyafdb verify` and `dyafdb viewer --share` run in.

What never enters it: the judge's reply cache, logs, benchmarks, the run record (run.json holds
absolute paths), any secret the environment holds (a member that contains one is refused), and the
absolute path of the project, the results folder or the home folder (rewritten relative).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

from dyafdb.analysis.answers import policy_of
from dyafdb.analysis.bundles import FORMAT, MEASURES, DESIGN, RESULTS_DIR, RESULTS_JSON, fingerprint
from dyafdb.errors import InputError
from dyafdb.fileio import read_jsonl
from dyafdb.paths import Results, results_of
from dyafdb.provenance import code_version, digest_json
from dyafdb.schema_check import load_schema

AUDIO = ("none", "preview", "full")
# The packages whose versions results.json names (the analysis's versions table names the same).
PACKAGES = ("dyafdb", "numpy", "scipy", "pandas", "statsmodels", "lifelines", "soundfile", "snakemake", "xllamacpp",
            "anthropic", "openai", "faster-whisper")
# Preview audio: OGG/Vorbis at libsndfile's strongest compression (soundfile writes it with no new
# dependency); both channels kept, so the viewer still shows and plays each side.
PREVIEW = {"format": "OGG", "subtype": "VORBIS", "compression_level": 1.0}
PREVIEW_NAME = "audio.ogg"
# Config keys that name local places, replaced in the bundle's config by the bundle's own layout.
LOCAL_KEYS = {("analysis", "human_labels"), ("analysis", "annotation_key"), ("analysis", "bundles"), ("viewer", "out"),
              ("judge", "cache_dir")}


def member_digest(data: bytes) -> str:
    """A member's digest in results.json: 16 hex digits of SHA-256 over its bytes."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Written:
    path: Path
    members: int
    size: int
    conversations: int
    audio: str


def bundle_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The run's config as the bundle holds it: its own folders, no local places."""
    out = json.loads(json.dumps(dict(config), default=str))
    out["scenarios_dir"] = "scenarios"
    out["results_dir"] = RESULTS_DIR
    out.setdefault("judge", {})["prompts_dir"] = "prompts"
    for section, key in LOCAL_KEYS:
        if isinstance(out.get(section), dict):
            out[section].pop(key, None)
    return out


def _filter_tsv(text: str, keep: set[str], column: str = "conversation_id") -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    idx = lines[0].rstrip("\n").split("\t").index(column)
    return "".join([lines[0], *(ln for ln in lines[1:] if ln.rstrip("\n").split("\t")[idx] in keep)])


def _preview(wav: Path) -> bytes:
    import soundfile as sf

    data, rate = sf.read(str(wav), dtype="float32", always_2d=True)
    buf = io.BytesIO()
    sf.write(buf, data, rate, **PREVIEW)
    return buf.getvalue()


def headline(tables: Path, tasks: Iterable[str]) -> list[dict[str, Any]]:
    """Every score cell and model average of the task-score tables with its n and interval, as the
    report and summary.md print them (read from the same TSVs, dyafdb.analysis.run_summary)."""
    from dyafdb.analysis.run_summary import _number, _read_tsv

    out = []
    for task in tasks:
        path = Path(tables) / f"score_{task}.tsv"
        if not path.exists():
            continue
        for r in _read_tsv(path):
            model = r.get("row")
            partners = [k[2:] for k in r if k.startswith("n:")]
            if not model or not partners or r.get(f"n:{partners[0]}", "") == "":
                continue  # a column-average row (avoider avg, ...): no n, the rows' cells say it
            for p in partners:
                n = _number(r.get(f"n:{p}"))
                out.append({"task": task, "model": model, "partner": p, "value": _number(r.get(p)),
                            "lower": _number(r.get(f"lo:{p}")), "upper": _number(r.get(f"hi:{p}")),
                            "n": int(n) if n is not None else 0})
            n_all = sum(int(_number(r.get(f"n:{p}")) or 0) for p in partners)
            out.append({"task": task, "model": model, "partner": "avg", "value": _number(r.get("avg")),
                        "lower": _number(r.get("avg_lo")), "upper": _number(r.get("avg_hi")), "n": n_all})
    return out


def leaderboard(tables: Path) -> list[dict[str, Any]]:
    from dyafdb.analysis.run_summary import _number, _read_tsv

    path = Path(tables) / "leaderboard.tsv"
    rows = _read_tsv(path) if path.exists() else []
    return [{"model": r["model"], "rating": _number(r.get("rating")), "lower": _number(r.get("lower")),
             "upper": _number(r.get("upper")), "n": int(_number(r.get("battles")) or 0),
             "anchor": str(r.get("anchor", "")).lower() == "true"} for r in rows if r.get("model")]


def packages() -> dict[str, str]:
    out = {}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def results_document(config: Mapping[str, Any], root: Path, rows: list, members: Mapping[str, bytes],
                     tables: Path, audio: str, recordings: Mapping[str, str], created: str) -> dict[str, Any]:
    """results.json (schema: src/dyafdb/schemas/results.schema.json)."""
    from dyafdb.judge.settings import judge_settings

    scenarios = {r.scenario: r.archetype for r in rows}
    fp = fingerprint(config, root, scenarios)
    js = judge_settings(dict(config), root)
    policy = policy_of(config)
    tasks = sorted({r.archetype for r in rows})
    models = sorted({m for r in rows for m in r.pairing.split("+")})
    specs = config.get("models") or {}
    return {
        "format": FORMAT,
        "created_utc": created,
        "code": code_version(),
        "packages": packages(),
        "config_digest": digest_json(dict(config)),
        "scenarios_digest": digest_json(fp["scenarios"]),
        "fingerprint": fp,
        "config": bundle_config(config),
        "models": {m: {"label": (specs.get(m) or {}).get("label", m), "adapter": (specs.get(m) or {}).get("adapter", ""),
                       "description": str((specs.get(m) or {}).get("description", ""))} for m in models},
        "judges": {n: {"backend": s.backend, "model": s.model, "demo_quality": bool(s.demo_quality)}
                   for n, s in js.judges.items() if n in js.run},
        "main_judge": js.main_judge,
        "answer_policy": {"fates": {k: policy.fate(k) for k in ("valid", "invalid", "failed_check", "contradicted")},
                          "text": policy.describe()},
        "conversations": len(rows),
        "tasks": tasks,
        "audio": audio,
        "headline": headline(tables, tasks),
        "leaderboard": leaderboard(tables),
        "recordings": dict(sorted(recordings.items())),
        "files": {name: member_digest(data) for name, data in sorted(members.items())},
    }


def _clean(name: str, data: bytes, local: list[str]) -> bytes:
    """A text member with the local absolute paths made relative; refused when it holds a secret."""
    from dyafdb.llm.secrets import scrub

    if name.endswith((".wav", ".ogg", ".flac")):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    for prefix in local:
        text = text.replace(prefix + "/", "").replace(prefix, ".")
    if scrub(text) != text:
        raise InputError(f"{name}: holds the value of a secret from the environment (an API key); nothing was "
                         "written; fix: remove it from that file, or unset the variable if it is no secret")
    return text.encode("utf-8")


def collect(config: Mapping[str, Any], root: Path, models: list[str] | None = None,
            audio: str = "none") -> tuple[dict[str, bytes], list, dict[str, str]]:
    """The members of a run's bundle (results.json aside), its design rows and recording digests."""
    from dyafdb.judge.settings import judge_settings
    from dyafdb.suite.design import build_design

    if audio not in AUDIO:
        raise InputError(f"audio {audio!r}: choose one of {', '.join(AUDIO)}")
    results = results_of(config, root)
    res_root = Path(results.root)
    rows = [r for r in build_design(dict(config), root) if Path(results.recording_file(r.conversation_id, "meta.json")).exists()]
    if models:
        unknown = [m for m in models if m not in (config.get("models") or {})]
        if unknown:
            raise InputError(f"--model {unknown[0]}: not a model of this config; models: {', '.join(config.get('models') or {})}")
        rows = [r for r in rows if set(r.pairing.split("+")) & set(models)]
    if not rows:
        raise InputError(f"{res_root}: no recorded conversation{' of ' + ', '.join(models) if models else ''}; "
                         "fix: run the workflow first (`snakemake`), or check --model")
    ids = {r.conversation_id for r in rows}
    local = sorted({str(Path(p).resolve()) for p in (root, res_root, Path.home())}, key=len, reverse=True)
    members: dict[str, bytes] = {}
    bundle_results = Results(RESULTS_DIR)

    def add(name: str, path: Path | str, data: bytes | None = None) -> None:
        members[name] = _clean(name, Path(path).read_bytes() if data is None else data, local)

    def rel(path: str) -> str:
        return path  # Results(RESULTS_DIR) spells member paths

    design = Path(results.design)
    if not design.exists():
        raise InputError(f"{design}: missing; fix: run `dyafdb suite design` (the workflow writes it)")
    add(DESIGN, design, _filter_tsv(design.read_text(encoding="utf-8"), ids).encode())
    measures = Path(results.measures_table)
    if not measures.exists():
        raise InputError(f"{measures}: missing; fix: run the measures stage (`snakemake`) before bundling")
    add(MEASURES, measures, _filter_tsv(measures.read_text(encoding="utf-8"), ids).encode())
    for batch in sorted(results.judge_batches()):
        kept = [line for line in batch.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("conversation_id") in ids]
        if kept:
            add(str(Path(RESULTS_DIR) / batch.relative_to(res_root)), batch, ("\n".join(kept) + "\n").encode())
    recordings: dict[str, str] = {}
    for r in rows:
        cid = r.conversation_id
        for name, path in ((bundle_results.segments(cid), results.segments(cid)),
                           (bundle_results.transcript_txt(cid), results.transcript_txt(cid)),
                           (bundle_results.transcript_json(cid), results.transcript_json(cid)),
                           (bundle_results.measures_json(cid), results.measures_json(cid))):
            if Path(path).exists():
                add(rel(name), path)
        for f in ("meta.json", "text.jsonl", "garble.json"):
            path = Path(results.recording_file(cid, f))
            if path.exists():
                add(bundle_results.recording_file(cid, f), path)
        meta = json.loads(Path(results.recording_file(cid, "meta.json")).read_text(encoding="utf-8"))
        recordings[cid] = str((meta.get("provenance") or {}).get("recording") or "")
        wav = Path(results.recording_file(cid, "audio.wav"))
        if audio == "full" and wav.exists():
            add(bundle_results.recording_file(cid, "audio.wav"), wav)
        elif audio == "preview" and wav.exists():
            members[bundle_results.recording_file(cid, PREVIEW_NAME)] = _preview(wav)
    scenarios_dir = Path(root) / str(config["scenarios_dir"])
    for sid, arch in sorted({(r.scenario, r.archetype) for r in rows}):
        path = scenarios_dir / arch / f"{sid}.yaml"
        if path.exists():
            add(f"scenarios/{arch}/{sid}.yaml", path)
    prompts = judge_settings(dict(config), root).prompts_dir
    for path in sorted(prompts.glob("*.txt")) if prompts.is_dir() else []:
        add(f"prompts/{path.name}", path)
    return members, rows, recordings


def write_bundle(config: Mapping[str, Any], root: Path, out: Path, audio: str = "none",
                 models: list[str] | None = None, created: str | None = None) -> Written:
    """Write the bundle of a run (all of it, or the conversations of ``models``) to ``out`` (.tar.gz or .zip)."""
    from dyafdb.share.recompute import recompute_tables

    root = Path(root)
    out = Path(out)
    members, rows, recordings = collect(config, root, models, audio)
    results = results_of(config, root)
    tables = Path(results.analysis_table("x")).parent
    with tempfile.TemporaryDirectory(prefix="dyafdb-bundle-") as tmp:
        if models or not (tables / "leaderboard.tsv").exists():
            # a subset of the run (or a run not analysed yet): its own tables, from its own measures
            measures = Path(tmp) / "measures.tsv"
            measures.write_bytes(members[MEASURES])
            subset = {k: v for k, v in dict(config).items()}
            recompute_tables(subset, root, measures, Results(str(Path(tmp) / "r")),
                                     {r.conversation_id: r for r in rows})
            tables = Path(Results(str(Path(tmp) / "r")).analysis_table("x")).parent
        for path in sorted(tables.glob("*.tsv")):
            members[f"{RESULTS_DIR}/analysis/tables/{path.name}"] = _clean(path.name, path.read_bytes(), [])
        created = created or _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc = results_document(config, root, rows, members, tables, audio, recordings, created)
    check_document(doc, str(out))
    local = sorted({str(Path(p).resolve()) for p in (root, results.root, Path.home())}, key=len, reverse=True)
    # the config may name local places too (a model's weights): written relative, secrets refused
    body = _clean(RESULTS_JSON, json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False).encode("utf-8"), local)
    members = {RESULTS_JSON: body, **members}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(f".{out.name}.partial-{os.getpid()}")
    try:
        _write_archive(tmp_out, members, zip_=out.suffix == ".zip")
        os.replace(tmp_out, out)
    finally:
        if tmp_out.exists():
            tmp_out.unlink()
    return Written(out, len(members), out.stat().st_size, len(rows), audio)


def _write_archive(path: Path, members: Mapping[str, bytes], zip_: bool) -> None:
    """Members in name order with a fixed time stamp, so the same results give the same archive."""
    if zip_:
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(members, key=lambda n: (n != RESULTS_JSON, n)):
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, members[name])
        return
    with open(path, "wb") as raw:
        import gzip

        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
                for name in sorted(members, key=lambda n: (n != RESULTS_JSON, n)):
                    info = tarfile.TarInfo(name)
                    info.size = len(members[name])
                    info.mode = 0o644
                    info.mtime = 0
                    tf.addfile(info, io.BytesIO(members[name]))


def check_document(doc: Any, source: str) -> list[str]:
    """results.json against its schema; an InputError naming the field when it does not fit."""
    import jsonschema

    schema = load_results_schema()
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(map(str, first.path)) or "(top)"
        raise InputError(f"{source}: results.json field {where}: {first.message}; fix: write the bundle again "
                         "with `dyafdb bundle` (docs/formats.md, \"Results bundle\")")
    return []


def load_results_schema() -> dict[str, Any]:
    path = Path(__file__).resolve().parents[1] / "schemas" / "results.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


__all__ = ["write_bundle", "collect", "results_document", "check_document", "load_results_schema", "member_digest",
           "AUDIO", "PREVIEW_NAME", "read_jsonl", "load_schema"]
