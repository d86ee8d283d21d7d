"""One card per model in the report (issue 27, item 5): the model's profile, its scores against each
partner with their intervals, its additive effects as a model and as a partner, its audio health, and
its best and worst conversations per task, linked to the viewer.

Every number is read from the table that shows it elsewhere in the report (profiles.tsv,
score_<task>.tsv, rating_effects.tsv, health_models.tsv) and printed with the report's one format
(dyafdb.analysis.numbers.fmt, render.interval_text), so a card and its table say the same. The best
and worst conversations come from the per-run tables (analysis/runs/<task>.tsv) at the main window.
A card is a section of report.html with the anchor ``card-<model>``: the viewer's index links there.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.numbers import fmt
from dyafdb.analysis.render import interval_text
from dyafdb.analysis.settings import Settings
from dyafdb.paths import shard_of

CARD_PREFIX = "card-"


def card_anchor(model: str) -> str:
    """The id of a model's card in report.html (the viewer links to ``report.html#card-<model>``)."""
    return CARD_PREFIX + model


def conversation_href(site_index: Path, conversation_id: str, page_dir: Path) -> str:
    """A conversation's page in the viewer, relative to ``page_dir``. Spelled as the viewer lays its
    site out (dyafdb.viewer.layout.conversation_page, c/<shard>/<id>.html; a test holds both equal):
    the analysis comes before the viewer and cannot ask it."""
    page = Path(site_index).parent / "c" / shard_of(conversation_id) / f"{conversation_id}.html"
    return os.path.relpath(page, page_dir)


def _read(path: Path) -> pd.DataFrame:
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame()
    try:
        return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _num(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def _value(v, lo, hi, n=None) -> str:
    parts = [fmt(_num(v)), interval_text(_num(lo), _num(hi))]
    if n not in (None, ""):
        parts.append(f"n={int(_num(n))}")
    return " ".join(p for p in parts if p)


def _table(head: list[str], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f"<p class='note'>{html.escape(empty)}</p>"
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def models_of(tables: Path, settings: Settings) -> list[str]:
    """The models the report's tables hold, in the report's order."""
    found: set[str] = set()
    for path in sorted(Path(tables).glob("score_*.tsv")):
        frame = _read(path)
        if "row" in frame:  # a model's row; a column-average row (C.COLUMN_ROW_LABEL) names no column
            found |= set(frame["row"]) & {k[2:] for k in frame.columns if k.startswith("n:")}
    profiles = _read(Path(tables) / "profiles.tsv")
    if "model" in profiles:
        found |= set(profiles["model"])
    return settings.order(sorted(m for m in found if m))


def _profile(tables: Path, model: str) -> str:
    frame = _read(Path(tables) / "profiles.tsv")
    rows = []
    if "model" in frame:
        for _, r in frame[frame["model"] == model].iterrows():
            rows.append([html.escape(r.get("question", "")), html.escape(r.get("answer", "")),
                         html.escape(_value(r.get("value"), r.get("lower"), r.get("upper"), r.get("n")))])
    return _table(["question", "answer", "value [interval] n"], rows, "no profile: the profiles table has no row for it")


def _scores(tables: Path, model: str, settings: Settings, tasks: Iterable[str]) -> str:
    rows = []
    partners_seen: list[str] = []
    per_task = {}
    for task in tasks:
        frame = _read(Path(tables) / f"score_{task}.tsv")
        if "row" not in frame or model not in set(frame["row"]):
            continue
        r = frame[frame["row"] == model].iloc[0]
        partners = [k[2:] for k in frame.columns if k.startswith("n:")]
        per_task[task] = (r, partners)
        partners_seen += [p for p in partners if p not in partners_seen]
    for task, (r, partners) in per_task.items():
        cells = [html.escape(C.TASK_TITLES.get(task, task))]
        for p in partners_seen:
            cells.append(html.escape(_value(r.get(p), r.get(f"lo:{p}"), r.get(f"hi:{p}"), r.get(f"n:{p}")))
                         if p in partners else "–")
        n_all = sum(int(_num(r.get(f"n:{p}"))) for p in partners if r.get(f"n:{p}", "") != "")
        cells.append(html.escape(_value(r.get("avg"), r.get("avg_lo"), r.get("avg_hi"), n_all)))
        rows.append(cells)
    head = ["task", *(f"vs {settings.label(p)}" for p in partners_seen), "average"]
    return _table(head, rows, "no task score: no scored run of this model at the main window")


def _effects(tables: Path, model: str) -> str:
    frame = _read(Path(tables) / "rating_effects.tsv")
    rows = []
    if "model" in frame:
        for _, r in frame[frame["model"] == model].iterrows():
            rows.append([html.escape(r["task"]), html.escape(_value(r.get("own"), r.get("own_lower"), r.get("own_upper"))),
                         html.escape(_value(r.get("partner"), r.get("partner_lower"), r.get("partner_upper"))),
                         html.escape(str(r.get("runs", "")))])
    return _table(["task", "own effect", "effect as a partner", "runs"], rows,
                  "no additive effects for it (the rating needs runs with the reference models)")


def _health(tables: Path, model: str) -> str:
    frame = _read(Path(tables) / "health_models.tsv")
    rows = []
    if "model" in frame:
        for _, r in frame[frame["model"] == model].iterrows():
            rows.append([html.escape(r.get("label") or r["measure"]),
                         html.escape(_value(r.get("own"), r.get("own_lower"), r.get("own_upper"), r.get("sides"))),
                         html.escape(fmt(_num(r.get("as_partner")))), html.escape(fmt(_num(r.get("self_play"))))])
    return _table(["measure", "own [interval] n sides", "its partners", "self-play"], rows, "no audio-health measure for it")


def _extremes(runs_dir: Path, model: str, settings: Settings, page_dir: Path) -> str:
    from dyafdb.analysis.runs import main_window

    rows = []
    for path in sorted(Path(runs_dir).glob("*.tsv")):
        frame = _read(path)
        if frame.empty or "score" not in frame:
            continue
        frame["score_n"] = pd.to_numeric(frame["score"].where(frame["score"] != ""), errors="coerce")
        frame[C.WINDOW] = pd.to_numeric(frame[C.WINDOW], errors="coerce")
        window = main_window(frame, settings)
        mine = frame[(frame[C.MODEL] == model) & frame["score_n"].notna()
                     & (frame.get("pinned", "").astype(str).str.lower() != "true")]
        if window is not None:
            mine = mine[np.isclose(mine[C.WINDOW].astype(float), window)]
        if mine.empty:
            continue
        task = path.stem
        mine = mine.sort_values([C.CONVERSATION, C.SIDE], kind="stable")
        best = mine.loc[mine["score_n"].idxmax()]
        worst = mine.loc[mine["score_n"].idxmin()]

        def link(r) -> str:
            text = f"{fmt(r['score_n'])} vs {html.escape(settings.label(r[C.PARTNER]))} (side {r[C.SIDE]})"
            if settings.site_index is None:
                return text
            href = conversation_href(settings.site_index, r[C.CONVERSATION], page_dir)
            return f"<a class='conversation' href='{html.escape(href)}'>{text}</a>"

        same = best["score_n"] == worst["score_n"]
        rows.append([html.escape(C.TASK_TITLES.get(task, task)), link(best),
                     f"every scored run is {fmt(best['score_n'])}" if same else link(worst), str(len(mine))])
    return _table(["task", "best conversation", "worst conversation", "scored runs"], rows,
                  "no scored conversation of this model at the main window")


def card_html(model: str, tables: Path, runs_dir: Path, settings: Settings, page_dir: Path, tasks: list[str]) -> str:
    """One model's card: a section of the report with the anchor :func:`card_anchor`."""
    label = settings.label(model)
    return (f"<section class='card' id='{html.escape(card_anchor(model))}'>"
            f"<h2>Model card: {html.escape(label)}</h2>"
            f"<p class='note'>model id {html.escape(model)}; every value with its {settings.ci:.0%} interval and n, "
            "read from the tables above</p>"
            f"<h3>Profile</h3>{_profile(tables, model)}"
            f"<h3>Task scores against each partner</h3>{_scores(tables, model, settings, tasks)}"
            f"<h3>Additive effects (as a model, as a partner)</h3>{_effects(tables, model)}"
            f"<h3>Audio health</h3>{_health(tables, model)}"
            f"<h3>Best and worst conversations per task</h3>{_extremes(runs_dir, model, settings, page_dir)}"
            "</section>")


def model_cards(tables: Path, settings: Settings, page_dir: Path) -> list[tuple[str, str, str]]:
    """(model, anchor, section HTML) for every model the tables hold; none when there are no tables."""
    tables = Path(tables)
    if not tables.is_dir():
        return []
    runs_dir = tables.parent / "runs"
    tasks = [t for t in C.TASK_TITLES if (tables / f"score_{t}.tsv").exists()]
    return [(m, card_anchor(m), card_html(m, tables, runs_dir, settings, page_dir, tasks))
            for m in models_of(tables, settings)]
