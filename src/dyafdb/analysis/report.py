"""One self-contained HTML report: every table and figure with its caption, the config and the versions.

The captions are the same reStructuredText files ``snakemake --report`` uses (workflow/report/),
so both reports say the same thing. A caption is found for ``<dir>/<stem>.rst``, else for the part
of the stem before its first underscore (``score_T1-1`` -> ``score.rst``); a caption shared by
several tables is printed once, at the first of them. Captions are Jinja templates as in
Snakemake's report (``{{ snakemake.config["text_pairing"]["max_turns"] }}``): they read the
settings the run used, never a number written into the text.

Links inside a table page (a matrix cell's link to the viewer's index, filtered to its
conversations) are relative to that page; the report moves them to its own folder. The report links
to the viewer, and the viewer's index back to the report.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import os
import re
from pathlib import Path
from typing import Sequence

import pandas as pd

from dyafdb.fileio import write_text_atomic
from dyafdb.analysis.render import DEMO_BANNER, STYLE
from dyafdb.analysis.settings import Settings


def caption_html(captions: Path | None, stem: str, config: dict | None = None, shown: dict[Path, str] | None = None,
                 anchor: str = "") -> str:
    """The caption of ``stem`` rendered with the run's config; a caption already ``shown`` (its
    path -> the anchor where) becomes a pointer to it."""
    if captions is None:
        return ""
    for name in (stem, stem.split("_", 1)[0]):
        path = Path(captions) / f"{name}.rst"
        if path.exists():
            if shown is not None and path in shown:
                return f"<p class='note'>Caption as for <a href='#{shown[path]}'>the first table of this kind</a>.</p>"
            if shown is not None:
                shown[path] = anchor
            return rst_to_html(render_caption(path.read_text(encoding="utf-8"), config or {}, stem))
    return ""


def render_caption(text: str, config: dict, stem: str = "") -> str:
    """A caption template filled from the config, as Snakemake's report fills it (``snakemake.config``)."""
    if "{{" not in text and "{%" not in text:
        return text
    from types import SimpleNamespace

    import jinja2

    kind, _, key = stem.partition("_")
    wildcards = SimpleNamespace(task=key, metric=key)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    return env.from_string(text).render(snakemake=SimpleNamespace(config=config, wildcards=wildcards))


_HREF = re.compile(r"""href='([^'#:]+)(#[^']*)?'""")


def rebase_links(body: str, page_dir: Path, report_dir: Path) -> str:
    """Relative links of a page in ``page_dir`` made relative to ``report_dir``."""
    def move(m: re.Match) -> str:
        target = os.path.normpath(os.path.join(page_dir, m.group(1)))
        return f"href='{os.path.relpath(target, report_dir)}{m.group(2) or ''}'"

    return _HREF.sub(move, body)


def rst_to_html(text: str) -> str:
    try:
        from docutils.core import publish_parts
    except ImportError:  # docutils comes with snakemake; without it the caption is shown as text
        return f"<p>{html.escape(text)}</p>"
    try:
        parts = publish_parts(text, writer="html", settings_overrides={"report_level": 5})
    except (TypeError, AttributeError):  # docutils before 0.22 takes only writer_name
        parts = publish_parts(text, writer_name="html", settings_overrides={"report_level": 5})
    return parts["fragment"]


def _body(page: str) -> str:
    m = re.search(r"<body>(.*)</body>", page, re.DOTALL)
    body = m.group(1) if m else page
    return re.sub(r'<div class="demo">.*?</div>', "", body, count=1, flags=re.DOTALL)


def _title(stem: str) -> str:
    """A table's or figure's heading, as its @table / @figure declaration gives it (dyafdb.analysis.registry)."""
    from dyafdb.analysis import registry

    return registry.titles().get(stem) or registry.wildcard_title(stem) or stem.replace("_", " ")


def build_report(tables: Sequence[Path], figures: Sequence[Path], settings: Settings, out: Path,
                 captions: Path | None = None, config_file: Path | None = None, versions: Path | None = None,
                 title: str = "DyaFDB report", config: dict | None = None, root: Path = Path(".")) -> None:
    from dyafdb.analysis.figures import read_notes

    out = Path(out)
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if settings.demo_quality:
        parts.append(f'<div class="demo">{html.escape(DEMO_BANNER)}</div>')
    parts.append(f"<p class='note'>generated {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}</p>")
    if settings.site_index is not None:
        href = os.path.relpath(settings.site_index, out.parent)
        parts.append(f"<p>Every conversation behind these numbers: <a class='viewer' href='{html.escape(href)}'>"
                     "open the conversation viewer</a> (a matrix cell links to its own conversations).</p>")
    toc = []
    sections = []
    shown: dict[Path, str] = {}
    # a table or figure named twice among the inputs is one section, listed once in the contents
    tables = list(dict.fromkeys(Path(t) for t in tables))
    figures = list(dict.fromkeys(Path(f) for f in figures))
    for i, path in enumerate(tables):
        path = Path(path)
        anchor = f"t{i}"
        body = rebase_links(_body(path.read_text(encoding="utf-8")), path.parent, out.parent)
        toc.append(f"<li><a href='#{anchor}'>{html.escape(_title(path.stem))}</a></li>")
        sections.append(f"<section id='{anchor}'><h2>{html.escape(_title(path.stem))}</h2>"
                        f"{caption_html(captions, path.stem, config, shown, anchor)}{body}</section>")
    for i, path in enumerate(figures):
        path = Path(path)
        anchor = f"f{i}"
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        pdf = path.with_suffix(".pdf")
        link = f" <a href='{html.escape(os.path.relpath(pdf, out.parent))}'>PDF</a>" if pdf.exists() else ""
        notes = read_notes(path)
        notes_html = ("<ul class='notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>") if notes else ""
        toc.append(f"<li><a href='#{anchor}'>{html.escape(_title(path.stem))}</a></li>")
        sections.append(f"<section id='{anchor}'><h2>{html.escape(_title(path.stem))}</h2>"
                        f"{caption_html(captions, path.stem, config, shown, anchor)}"
                        f"<img alt='{html.escape(path.stem)}' style='max-width:100%' src='data:image/png;base64,{data}'>"
                        f"{notes_html}<p class='note'>{html.escape(path.name)}{link}</p></section>")
    # one card per model (dyafdb.analysis.cards), from the tables beside the rendered ones
    from dyafdb.analysis.bundles import merged_info
    from dyafdb.analysis.cards import model_cards

    if tables:
        for model, anchor, card in model_cards(Path(tables[0]).parent, settings, out.parent):
            toc.append(f"<li><a href='#{html.escape(anchor)}'>model card: {html.escape(settings.label(model))}</a></li>")
            sections.append(card)
    merged = merged_info(config, root) if config else []
    if merged:
        items = "".join(f"<li>{html.escape(m.path)}: {', '.join(html.escape(x) for x in m.models) or 'no new model'} "
                        f"({m.conversations} conversations; code {html.escape(str(m.code.get('version')))} "
                        f"{html.escape(str(m.code.get('commit') or ''))})"
                        + (f"; the tables of {', '.join(m.bundle_only)} read its conversations alone: this run's design "
                           "has no suite of those archetypes" if m.bundle_only else "") + "</li>" for m in merged)
        toc.append("<li><a href='#bundles'>merged bundles</a></li>")
        sections.append("<section id='bundles'><h2>merged bundles</h2><p>These models' conversations come from results "
                        f"bundles (analysis.bundles), made with this run's scenarios and scoring settings:</p><ul>{items}</ul></section>")
    if versions is not None and Path(versions).exists():
        v = pd.read_csv(versions, sep="\t", dtype=str, keep_default_na=False)
        rows = "".join(f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td></tr>" for a, b in zip(v.iloc[:, 0], v.iloc[:, 1]))
        toc.append("<li><a href='#versions'>versions</a></li>")
        sections.append(f"<section id='versions'><h2>versions</h2><table>{rows}</table></section>")
    if config_file is not None and Path(config_file).exists():
        toc.append("<li><a href='#config'>config</a></li>")
        sections.append(f"<section id='config'><h2>config</h2><pre>{html.escape(Path(config_file).read_text(encoding='utf-8'))}</pre></section>")
    parts.append("<ul>" + "".join(toc) + "</ul>")
    parts.extend(sections)
    style = STYLE + "section{margin:2em 0}pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:.85em}ul.notes{color:#a05a00;font-size:.9em}"
    page = (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")
    write_text_atomic(out, page)
