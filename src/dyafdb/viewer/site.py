"""Build the static site: ``<site>/index.html``, one page per conversation, the blind annotation.

Layout under the site folder (default ``<results_dir>/site``)::

  index.html  index-data.js          the conversation index and its data (filters run in the browser)
  c/<scenario>/<conversation_id>.html  one page per conversation, a folder per scenario
  media/<tt>/<key>.<ogg|flac|wav>    its audio; <key>.json caches the waveform peaks; <tt> is the
                                     first two characters of the salted token <key>
  annotate/index.html  study.js      the blind annotation study: rater id, progress, CSV export
  annotate/item-<code>.html          one blind page per sampled conversation
  assets/                            the CSS and scripts (copied from the package)

(per-conversation files one folder down, so no folder holds an entry per conversation; why and
how the sub-folders are named, blind site included: :mod:`dyafdb.viewer.layout`),
and, beside the site folder (never inside it), ``<site>-annotation-key.json``: the site's secret
salt and which conversation and seats each item stands for (:mod:`dyafdb.viewer.study`).

``index.html`` is removed first and written last, so a build that dies half-way leaves no index
that looks complete; every file is written under a temporary name and renamed. Files of an earlier
build that this one did not write (a conversation no longer in the design) are removed.

With ``annotation_only`` the site holds only what a rater needs (annotate/, the sampled
conversations' media, assets/, and an index.html that forwards to annotate/), to hand out
without the full pages next to it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from dyafdb.analysis.answers import policy_of
from dyafdb.analysis.settings import report_path
from dyafdb.suite.design import Conversation, build_design
from dyafdb.fileio import write_text_atomic
from dyafdb.record.recording import is_complete
from dyafdb.suite.scenarios import Scenario, find_scenario
from dyafdb.agents.worker import die_with_parent
from dyafdb.errors import InputError, located
from dyafdb.score.conversation import conversation_paths
from dyafdb.viewer import pages
from dyafdb.viewer.layout import CONVERSATION_ROOT, conversation_page, media_name
from dyafdb.viewer.media import FORMATS, Media, media_key, prepare_media
from dyafdb.viewer.model import player_data, prompts
from dyafdb.viewer.questions import human_questions
from dyafdb.viewer.sampler import Candidate, Pick, sample
from dyafdb.viewer.settings import ViewerSettings, viewer_settings
from dyafdb.viewer.sources import Sources, load_sources, read_judge_records
from dyafdb.viewer.study import key_file, site_salt, study_doc, study_js, write_key
from dyafdb.viewer.summary import index_data, index_row

MANAGED = ("c", "media", "annotate", "assets")
# annotation-sample.tsv is no longer written (the key file outside the site replaced it); listed so
# that a copy left by an earlier build is removed
TOP_FILES = ("index-data.js", "annotation-sample.tsv")


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
    written: set[Path] = field(default_factory=set, repr=False)

    def line(self) -> str:
        parts = [f"{self.conversations} conversation pages"] if self.conversations or not self.items else []
        if self.items:
            parts.append(f"{self.items} annotation items ({self.seats} seats, {self.questions} questions)")
        if self.not_recorded:
            parts.append(f"{self.not_recorded} conversations not recorded yet (left out)")
        parts.append(f"audio {self.audio_bytes / 1e6:.1f} MB")
        return f"site {self.out}: " + ", ".join(parts) + f" in {self.seconds:.1f} s"


class _Writer:
    """Atomic writes under the site folder, remembering what this build wrote (to remove the rest)."""

    def __init__(self, out: Path, summary: BuildSummary):
        self.out = out
        self.summary = summary

    def text(self, rel: str, content: str) -> None:
        path = self.out / rel
        write_text_atomic(path, content)
        self.summary.written.add(path)

    def keep(self, rel: str) -> None:
        self.summary.written.add(self.out / rel)

    def remove_stale(self) -> int:
        removed = 0
        stale = [p for folder in MANAGED if (self.out / folder).is_dir() for p in (self.out / folder).rglob("*")]
        stale += [self.out / name for name in TOP_FILES]
        for path in stale:
            if path.is_file() and path not in self.summary.written:
                path.unlink()
                removed += 1
        # sub-folders left empty (a scenario no longer in the design, a site of the flat layout)
        for path in sorted((p for p in stale if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            if not any(path.iterdir()):
                path.rmdir()
        return removed


@dataclass
class _Context:
    config: Mapping[str, Any]
    root: Path
    settings: ViewerSettings
    annotation_only: bool
    judges: list[str]
    judged: dict[str, list[dict[str, Any]]]
    scenarios: dict[str, Scenario]
    picks: list[Pick]
    salt: str = ""

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.picks]


# ----------------------------------------------------------------------------- selection


def _select_rows(config: Mapping[str, Any], root: Path, ids: Sequence[str] | None) -> list[Conversation]:
    rows = build_design(dict(config), root)
    if not ids:
        return rows
    known = {r.conversation_id for r in rows}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise InputError(f"conversation {unknown[0]!r} is not in the design of this config; list them with `dyafdb suite design`")
    wanted = set(ids)
    return [r for r in rows if r.conversation_id in wanted]


def _annotation_sample(config: Mapping[str, Any], root: Path, rows: Sequence[Conversation],
                       settings: ViewerSettings) -> list[Pick]:
    """The sample, drawn from the conversations that can be annotated: recorded and transcribed."""
    candidates = []
    for row in rows:
        if row.archetype not in settings.sample:
            continue
        paths = conversation_paths(config, root, row.conversation_id)
        if paths.transcript_json.exists() and is_complete(paths.recording):
            candidates.append(Candidate(row.conversation_id, row.archetype, row.pairing))
    return sample(candidates, settings.sample, settings.seed, settings.questions)


# ----------------------------------------------------------------------------- audio


class _WorkerStop(SystemExit):
    """SIGTERM in a pool worker; a SystemExit, so a worker stopped while idle exits without a traceback."""


def _worker_init() -> None:
    # Ctrl-C at a terminal reaches the whole process group: the parent alone decides, and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker inherits the CLI's SIGTERM handler, whose exception the pool would hand back as
    # a result and then go on with the next task; here SIGTERM ends the worker.
    signal.signal(signal.SIGTERM, _raise_worker_stop)
    die_with_parent()  # a parent killed outright (SIGKILL, OOM killer) takes its workers along


def _raise_worker_stop(signum: int, frame: Any) -> None:
    raise _WorkerStop(128 + signum)


def _prepare_task(task: tuple[str, str, str, str, int]) -> Media:
    recording, media_dir, key, fmt, peaks_per_s = task
    try:
        return prepare_media(Path(recording), Path(media_dir), key, fmt, peaks_per_s)
    except _WorkerStop as stop:
        # the atomic writes have removed their temporary files on the way here; exit before the
        # pool hands this worker the next task
        os._exit(int(stop.code or 1))
    except Exception as exc:
        # the traceback, whose frames hold the open file, stays in this process: send the path along
        raise located(exc) from None


def _prepare_all(tasks: list[tuple[str, str, str, str, int]], jobs: int) -> list[Media]:
    """Audio copies and peaks; in worker processes, as libsndfile's encoders hold the GIL."""
    if jobs <= 1 or len(tasks) <= 1:
        return [_prepare_task(t) for t in tasks]
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init)
    try:
        medias = list(pool.map(_prepare_task, tasks, chunksize=max(1, len(tasks) // (4 * jobs))))
    except BaseException:
        _stop_pool(pool)
        _remove_partial_media(tasks)
        raise
    pool.shutdown()
    return medias


def _remove_partial_media(tasks: list[tuple[str, str, str, str, int]]) -> None:
    """A worker killed inside an encode (libsndfile holds the GIL past the grace period, or the signal
    landed before its write's cleanup was armed) leaves its hidden temporary file: the parent removes
    those of this run's media, so a stopped build leaves nothing that looks like output."""
    keys: dict[str, set[str]] = {}
    for _, media_dir, key, _, _ in tasks:
        keys.setdefault(media_dir, set()).add(key)
    # one walk per media folder, not one per conversation: a stopped build of thousands stops at once
    for media_dir, ours in keys.items():
        for tmp in Path(media_dir).rglob(".*.tmp"):
            if tmp.name[1:].split(".", 1)[0] in ours:
                tmp.unlink(missing_ok=True)


def _stop_pool(pool: ProcessPoolExecutor, grace_s: float = 5.0) -> None:
    """End a pool now (an error, Ctrl-C, SIGTERM): queued tasks are dropped and the workers told to
    stop; one that does not stop within ``grace_s`` is killed. Waiting for the running tasks, as
    the executor's own shutdown does, could take minutes of encoding."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    deadline = time.monotonic() + grace_s
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            worker.kill()
            worker.join(1.0)


# ----------------------------------------------------------------------------- pages


def _conversation_page(ctx: _Context, src: Sources, media: Media) -> str:
    player = player_data(src, media, f"{CONVERSATION_ROOT}media/{media.file}", ctx.config, blind=False)
    return pages.conversation_page(
        row=src.row, meta=src.meta, player=player, prompts=prompts(src, blind=False), measures=src.measures,
        judges=ctx.judges, records=src.judged, garble=src.garble, speakers=src.speakers,
        annotation=bool(ctx.picks) and not ctx.annotation_only, demo_quality=bool(ctx.config.get("demo_quality")),
        policy=policy_of(ctx.config))


def _item_page(ctx: _Context, src: Sources, media: Media, pick: Pick) -> tuple[str, list[dict[str, Any]]]:
    """The blind page of one sampled conversation, and its questions (for study.js)."""
    questions = [q.to_json() for q in human_questions(src.row.archetype, src.scenario.answer_key, src.transcript or {},
                                                      ctx.settings.questions) if q.seat in pick.seats]
    codes = ctx.codes
    i = codes.index(pick.code)
    html = pages.annotate_item_page(
        code=pick.code, position=i + 1, total=len(codes), prev_code=codes[i - 1] if i else None,
        next_code=codes[i + 1] if i + 1 < len(codes) else None,
        player=player_data(src, media, f"../media/{media.file}", ctx.config, blind=True),
        prompts=prompts(src, blind=True), questions=questions)
    return html, questions


def _write_study(w: _Writer, ctx: _Context, questions: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    study = study_doc(ctx.picks, questions, ctx.salt)
    w.text("annotate/study.js", study_js(study))
    seats = {(p.code, q["seat"]) for p in ctx.picks for q in questions.get(p.code, [])}
    w.summary.items, w.summary.seats = len(ctx.picks), len(seats)
    w.summary.questions = sum(len(v) for v in questions.values())
    w.text("annotate/index.html", pages.annotate_index_page(len(ctx.picks), len(seats)))
    return study


def _copy_assets(w: _Writer) -> None:
    folder = resources.files("dyafdb.viewer").joinpath("assets")
    for name in pages.ASSET_FILES:
        w.text(f"assets/{name}", folder.joinpath(name).read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- the build


def build_site(config: Mapping[str, Any], root: Path = Path("."), settings: ViewerSettings | None = None,
               ids: Sequence[str] | None = None, jobs: int = 1, annotation_only: bool = False,
               log: TextIO | None = None) -> BuildSummary:
    """Write the site (or, with ``annotation_only``, only what a rater needs); returns what was written."""
    t0 = time.perf_counter()
    settings = settings or viewer_settings(config, root)
    if settings.audio not in FORMATS:
        raise InputError(f"config viewer.audio = {settings.audio!r}; use one of {', '.join(FORMATS)}")
    out = Path(settings.out)
    rows = _select_rows(config, root, ids)
    summary = BuildSummary(out=out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.html").unlink(missing_ok=True)
    w = _Writer(out, summary)

    picks = _annotation_sample(config, root, rows, settings) if settings.annotation or annotation_only else []
    pick_of = {p.conversation_id: p for p in picks}
    if annotation_only:
        rows = [r for r in rows if r.conversation_id in pick_of]
    scenarios = {sid: find_scenario(Path(root) / config["scenarios_dir"], sid) for sid in sorted({r.scenario for r in rows})}
    judges, judged = read_judge_records(config, root, sorted({r.archetype for r in rows}))
    key = key_file(out)
    ctx = _Context(config, Path(root), settings, annotation_only, judges, judged, scenarios, picks, site_salt(key))

    recorded = [r for r in rows if is_complete(conversation_paths(config, root, r.conversation_id).recording)]
    summary.not_recorded = len(rows) - len(recorded)
    medias = _prepare_all([(str(conversation_paths(config, root, r.conversation_id).recording), str(out / "media"),
                            media_key(r.conversation_id, ctx.salt), settings.audio, settings.peaks_per_s)
                           for r in recorded], jobs)

    index_rows, questions = [], {}
    for row, media in zip(recorded, medias):
        src = load_sources(config, root, row, scenarios, judged)
        if src is None:  # being recorded again right now; the next build picks it up
            continue
        w.keep(f"media/{media.file}")
        w.keep(f"media/{media_name(media_key(row.conversation_id, ctx.salt), '.json')}")
        summary.audio_bytes += (out / "media" / media.file).stat().st_size
        if not annotation_only:
            w.text(conversation_page(row.conversation_id), _conversation_page(ctx, src, media))
            index_rows.append(index_row(src, media, judges, config))
        pick = pick_of.get(row.conversation_id)
        if pick is not None:
            html, questions[pick.code] = _item_page(ctx, src, media, pick)
            w.text(f"annotate/item-{pick.code}.html", html)
    summary.conversations = len(index_rows)

    _copy_assets(w)
    study = _write_study(w, ctx, questions) if picks else None
    write_key(key, ctx.salt, picks, study)  # outside the site: what maps the blind items back
    if annotation_only:
        summary.removed = w.remove_stale()
        w.text("index.html", pages.redirect_page("annotate/index.html", "Blind annotation"))
    else:
        w.text("index-data.js", "window.DYAFDB_INDEX = " + _json(index_data(index_rows, config, judges)) + ";\n")
        summary.removed = w.remove_stale()
        report = os.path.relpath(report_path(config, root), out)
        from dyafdb.analysis.cards import card_anchor

        models = sorted({m for r in rows for m in r.pairing.split("+")})
        labels = {m: (config.get("models", {}).get(m) or {}).get("label", m) for m in models}
        cards = [(labels[m], f"{report}#{card_anchor(m)}") for m in models]
        w.text("index.html", pages.index_page(_counts(index_rows, summary, config), annotation=bool(picks), report_href=report,
                                              cards=cards))
    summary.seconds = time.perf_counter() - t0
    print(summary.line(), file=log or sys.stdout)
    return summary


def _json(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def _counts(index_rows: Sequence[Mapping[str, Any]], summary: BuildSummary, config: Mapping[str, Any]) -> dict[str, Any]:
    counts = {"conversations": len(index_rows), "archetypes": len({r["archetype"] for r in index_rows}),
              "pairings": len({r["pairing"] for r in index_rows}), "demo_quality": bool(config.get("demo_quality"))}
    if summary.not_recorded:
        counts["missing_note"] = f" ({summary.not_recorded} in the design not recorded yet)"
    return counts


__all__ = ["build_site", "BuildSummary"]
