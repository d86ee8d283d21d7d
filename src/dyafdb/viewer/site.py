"""Build the static site: ``<site>/index.html``, one page per conversation, the blind annotation.

Layout under the site folder (default ``<results_dir>/site``)::

  index.html  index-data.js          the conversation index and its data (filters run in the browser)
  c/<conversation_id>.html           one page per conversation
  media/<key>.<ogg|flac|wav>         its audio; <key>.json caches the waveform peaks
  annotate/index.html  study.js      the blind annotation study: rater id, progress, CSV export
  annotate/item-<code>.html          one blind page per sampled conversation
  annotation-sample.tsv              which conversation and seats each item code stands for
  assets/                            the CSS and scripts (copied from the package)

``index.html`` is removed first and written last, so a build that dies half-way leaves no index
that looks complete; every file is written under a temporary name and renamed. Files of an earlier
build that this one did not write (a conversation no longer in the design) are removed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from dyafdb.design import Conversation, build_design
from dyafdb.fileio import write_text_atomic
from dyafdb.recording import is_complete
from dyafdb.scenarios import Scenario, find_scenario
from dyafdb.schema_check import InputError
from dyafdb.scoring import conversation_paths
from dyafdb.viewer import pages
from dyafdb.viewer.media import FORMATS, Media, media_key, prepare_media
from dyafdb.viewer.model import model_label, player_data, prompts
from dyafdb.viewer.questions import human_questions
from dyafdb.viewer.sampler import Candidate, Pick, sample
from dyafdb.viewer.settings import ViewerSettings, viewer_settings
from dyafdb.viewer.sources import Sources, load_sources, read_judge_records
from dyafdb.viewer.summary import catalog_entry, headline, measure_values

MANAGED = ("c", "media", "annotate", "assets")


@dataclass
class BuildSummary:
    out: Path
    conversations: int = 0
    not_recorded: int = 0
    items: int = 0
    seats: int = 0
    questions: int = 0
    audio_bytes: int = 0
    seconds: float = 0.0
    removed: int = 0
    written: set[Path] = field(default_factory=set)

    def line(self) -> str:
        parts = [f"{self.conversations} conversation pages"]
        if self.items:
            parts.append(f"{self.items} annotation items ({self.seats} seats, {self.questions} questions)")
        if self.not_recorded:
            parts.append(f"{self.not_recorded} conversations not recorded yet (left out)")
        parts.append(f"audio {self.audio_bytes / 1e6:.1f} MB")
        return f"site {self.out}: " + ", ".join(parts) + f" in {self.seconds:.1f} s"


class _Writer:
    """Atomic writes that remember what this build wrote (for removing stale files)."""

    def __init__(self, out: Path, summary: BuildSummary):
        self.out = out
        self.summary = summary

    def text(self, rel: str, content: str) -> None:
        path = self.out / rel
        write_text_atomic(path, content)
        self.summary.written.add(path)

    def keep(self, path: Path) -> None:
        self.summary.written.add(path)


def _copy_assets(w: _Writer) -> None:
    folder = resources.files("dyafdb.viewer").joinpath("assets")
    for name in pages.ASSET_FILES:
        w.text(f"assets/{name}", folder.joinpath(name).read_text(encoding="utf-8"))


def _encode_ref(conversation_id: str) -> str:
    # Not secret, only not readable at a glance: the export needs the id, a rater should not see it.
    return base64.b64encode(conversation_id.encode("utf-8")).decode("ascii")


def _candidates(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation], archetypes: set[str]) -> list[Candidate]:
    """Conversations a rater can annotate: recorded and transcribed."""
    out = []
    for row in rows:
        if row.archetype not in archetypes:
            continue
        paths = conversation_paths(config, root, row.conversation_id)
        if paths.transcript_json.exists() and is_complete(paths.recording):
            out.append(Candidate(row.conversation_id, row.archetype, row.pairing))
    return out


def _index_row(src: Sources, media: Media, judges: Sequence[str], config: Mapping[str, Any]) -> dict[str, Any]:
    row = src.row
    values, labels = measure_values(src)
    return {
        "id": row.conversation_id, "href": f"c/{row.conversation_id}.html", "archetype": row.archetype,
        "scenario": row.scenario, "title": src.scenario.title, "pairing": row.pairing, "play": row.play,
        "model_a": row.model_a, "model_b": row.model_b,
        "label_a": model_label(config, row.model_a), "label_b": model_label(config, row.model_b),
        "opener": row.opener, "opener_model": row.opener_model, "repetition": row.repetition,
        "window_s": row.window_s, "duration_s": media.duration_s, "end_reason": src.meta.get("end_reason", ""),
        "scored": src.measures is not None, "judged": sorted({r["judge"] for r in src.judged}),
        "headline": headline(row.archetype, values, labels, judges), "_values": values, "_labels": labels,
    }


def _index_data(rows: list[dict[str, Any]], config: Mapping[str, Any], judges: Sequence[str]) -> dict[str, Any]:
    """Rows with their measures as arrays aligned to one catalog (a few MB for the full suite)."""
    keys = sorted({k for r in rows for k in (*r["_values"], *r["_labels"])},
                  key=lambda k: (k.split("|")[2] != "", k.split("|")[2], k.split("|")[0], k.split("|")[1]))
    position = {k: i for i, k in enumerate(keys)}
    out_rows = []
    for r in rows:
        values = [None] * len(keys)
        for k, v in r["_values"].items():
            values[position[k]] = v
        labels = {str(position[k]): v for k, v in r["_labels"].items()}
        out_rows.append({**{k: v for k, v in r.items() if not k.startswith("_")}, "v": values, "l": labels})
    return {"catalog": [catalog_entry(k) for k in keys], "rows": out_rows, "judges": list(judges),
            "demo_quality": bool(config.get("demo_quality")),
            "models": {m: model_label(config, m) for m in (config.get("models") or {})}}


@dataclass
class _Job:
    row: Conversation
    pick: Pick | None
    position: int = 0


def build_site(config: Mapping[str, Any], root: Path = Path("."), settings: ViewerSettings | None = None,
               ids: Sequence[str] | None = None, jobs: int = 1, annotation_only: bool = False,
               log: TextIO = sys.stdout) -> BuildSummary:
    """Write the site (or, with ``annotation_only``, only what a rater needs); returns what was written."""
    t0 = time.perf_counter()
    settings = settings or viewer_settings(config, root)
    if settings.audio not in FORMATS:
        raise InputError(f"config viewer.audio = {settings.audio!r}; use one of {', '.join(FORMATS)}")
    out = Path(settings.out)
    rows = build_design(dict(config), root)
    if ids:
        known = {r.conversation_id for r in rows}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise InputError(f"conversation {unknown[0]!r} is not in the design of this config; "
                             "list them with `dyafdb design`")
        rows = [r for r in rows if r.conversation_id in set(ids)]
    summary = BuildSummary(out=out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.html").unlink(missing_ok=True)
    w = _Writer(out, summary)

    picks: list[Pick] = []
    if settings.annotation or annotation_only:
        candidates = _candidates(config, root, rows, set(settings.sample))
        picks = sample(candidates, settings.sample, settings.seed, settings.questions)
    pick_of = {p.conversation_id: p for p in picks}
    if annotation_only:
        rows = [r for r in rows if r.conversation_id in pick_of]

    scenarios: dict[str, Scenario] = {}
    for scenario_id in sorted({r.scenario for r in rows}):
        scenarios[scenario_id] = find_scenario(Path(root) / config["scenarios_dir"], scenario_id)
    judges, judged = read_judge_records(config, root, sorted({r.archetype for r in rows}))

    codes = [p.code for p in picks]
    item_questions: dict[str, list[dict[str, Any]]] = {}

    def build_one(row: Conversation) -> dict[str, Any] | None:
        src = load_sources(config, root, row, scenarios, judged)
        if src is None:
            return None
        key = media_key(row.conversation_id)
        media = prepare_media(src.recording_dir, out / "media", key, settings.audio, settings.peaks_per_s)
        w.keep(out / "media" / media.file)
        w.keep(out / "media" / f"{key}.json")
        if not annotation_only:
            player = player_data(src, media, f"../media/{media.file}", config, blind=False)
            w.text(f"c/{row.conversation_id}.html", pages.conversation_page(
                row=row, meta=src.meta, player=player, prompts=prompts(src, blind=False), measures=src.measures,
                judges=judges, records=src.judged, garble=src.garble, speakers=src.speakers,
                annotation=bool(picks), demo_quality=bool(config.get("demo_quality"))))
        pick = pick_of.get(row.conversation_id)
        if pick is not None:
            questions = [q.to_json() for q in human_questions(row.archetype, src.scenario.answer_key, src.transcript or {},
                                                              settings.questions) if q.seat in pick.seats]
            item_questions[pick.code] = questions
            i = codes.index(pick.code)
            w.text(f"annotate/item-{pick.code}.html", pages.annotate_item_page(
                code=pick.code, position=i + 1, total=len(codes), prev_code=codes[i - 1] if i else None,
                next_code=codes[i + 1] if i + 1 < len(codes) else None,
                player=player_data(src, media, f"../media/{media.file}", config, blind=True),
                prompts=prompts(src, blind=True), questions=questions))
        return _index_row(src, media, judges, config)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        built = list(pool.map(build_one, rows))
    index_rows = [r for r in built if r is not None]
    summary.not_recorded = sum(1 for r in built if r is None)
    summary.conversations = 0 if annotation_only else len(index_rows)
    summary.audio_bytes = sum(p.stat().st_size for p in summary.written
                              if p.parent.name == "media" and p.suffix != ".json" and p.exists())

    _copy_assets(w)
    if picks:
        _write_study(w, picks, item_questions, summary, annotation_only)
    if annotation_only:
        w.text("index.html", pages.redirect_page("annotate/index.html", "Blind annotation"))
    else:
        counts = {"conversations": len(index_rows), "archetypes": len({r["archetype"] for r in index_rows}),
                  "pairings": len({r["pairing"] for r in index_rows}), "demo_quality": bool(config.get("demo_quality"))}
        if summary.not_recorded:
            counts["missing_note"] = f" ({summary.not_recorded} in the design not recorded yet)"
        data = json.dumps(_index_data(index_rows, config, judges), ensure_ascii=False, separators=(",", ":"))
        w.text("index-data.js", f"window.DYAFDB_INDEX = {data};\n")
        summary.removed = _remove_stale(out, summary.written)
        w.text("index.html", pages.index_page(counts, annotation=bool(picks)))
    if annotation_only:
        summary.removed = _remove_stale(out, summary.written)
    summary.seconds = time.perf_counter() - t0
    print(summary.line(), file=log)
    return summary


def _write_study(w: _Writer, picks: Sequence[Pick], item_questions: Mapping[str, list[dict[str, Any]]],
                 summary: BuildSummary, annotation_only: bool) -> None:
    items = []
    for p in picks:
        qs = item_questions.get(p.code, [])
        items.append({"code": p.code, "ref": _encode_ref(p.conversation_id),
                      "q": [[q["seat"], q["measure"]] for q in qs]})
    fingerprint = json.dumps([[p.code, p.conversation_id, it["q"]] for p, it in zip(picks, items)], sort_keys=True)
    study = hashlib.sha256(fingerprint.encode()).hexdigest()[:12]
    doc = json.dumps({"study": study, "items": items}, separators=(",", ":"))
    w.text("annotate/study.js", f"window.DYAFDB_STUDY = {doc};\n")
    seats = {(p.code, q["seat"]) for p in picks for q in item_questions.get(p.code, [])}
    summary.items, summary.seats = len(picks), len(seats)
    summary.questions = sum(len(v) for v in item_questions.values())
    w.text("annotate/index.html", pages.annotate_index_page(len(picks), len(seats)))
    if not annotation_only:
        lines = ["code\tconversation_id\tarchetype\tpairing\tseats"]
        lines += [f"{p.code}\t{p.conversation_id}\t{p.archetype}\t{p.pairing}\t{','.join(p.seats)}" for p in picks]
        w.text("annotation-sample.tsv", "\n".join(lines) + "\n")


def _remove_stale(out: Path, written: set[Path]) -> int:
    removed = 0
    for folder in MANAGED:
        base = out / folder
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.is_file() and path not in written:
                path.unlink()
                removed += 1
    for name in ("index-data.js", "annotation-sample.tsv"):
        path = out / name
        if path.exists() and path not in written:
            path.unlink()
            removed += 1
    return removed


def site_path(config: Mapping[str, Any], root: Path = Path(".")) -> Path:
    return Path(viewer_settings(config, root).out)


__all__ = ["build_site", "BuildSummary", "site_path"]
