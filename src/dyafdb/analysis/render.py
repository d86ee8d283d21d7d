"""Tables rendered as small self-contained HTML pages (what the report and a browser show)."""

from __future__ import annotations

import html
from typing import Callable

import numpy as np
import pandas as pd

from dyafdb.analysis.numbers import fmt, formatter_for  # noqa: F401  (re-exported: render.fmt)
from dyafdb.analysis.settings import Settings
from dyafdb.analysis.tables import AVG, Matrix

STYLE = """
body{font-family:system-ui,sans-serif;margin:1em;color:#222}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:.25em .6em;text-align:right;border-bottom:1px solid #ddd}
th:first-child,td:first-child{text-align:left}
thead th{border-bottom:2px solid #444}
tr.bottom td{border-top:2px solid #444;font-style:italic}
td.avg{font-weight:600;border-left:1px solid #aaa}
small{color:#777}
.demo{background:#fff3cd;border:1px solid #e0c36a;padding:.4em .6em;margin-bottom:.6em}
caption{caption-side:top;text-align:left;font-weight:600;margin-bottom:.4em}
p.note{color:#555;font-size:.9em}
"""
DEMO_BANNER = "Demo quality: embedded CPU agents and a local judge; these numbers illustrate the pipeline, not the models."


def page(title: str, body: str, settings: Settings | None = None) -> str:
    banner = f'<div class="demo">{html.escape(DEMO_BANNER)}</div>' if settings and settings.demo_quality else ""
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{banner}{body}</body></html>\n")


def cell_href(index: str, filters: dict[str, str], model: str, partner: str) -> str:
    """The viewer index filtered to one cell's conversations (``model`` on the row's side, against
    ``partner``); the filter keys are those the index reads from its URL hash (viewer/assets/cellfilter.js)."""
    from urllib.parse import urlencode

    return f"{index}#{urlencode({**filters, 'model': model, 'partner': partner})}"


def matrix_html(matrix: Matrix, settings: Settings, show_n: bool = False, index: str | None = None) -> str:
    """The matrix as a table; with ``index`` (the viewer's index.html, relative to this page) every
    cell links to that cell's conversations."""
    label = settings.label
    head = "".join(f"<th>{html.escape(label(p))}</th>" for p in matrix.partners)
    rows = []
    for m in matrix.models:
        cells = []
        for p in matrix.partners:
            v = fmt(matrix.values.loc[m, p])
            if (m, p) in matrix.pinned:
                v = f"({v})"
            # every cell is read as a result: it carries its n, and its interval where one was drawn
            extra = f"n={int(matrix.n.loc[m, p])}"
            if matrix.runs is not None:
                extra += f"/{int(matrix.runs.loc[m, p])}"
            if matrix.lower is not None and (m, p) not in matrix.pinned:
                extra = interval_text(matrix.lower.loc[m, p], matrix.upper.loc[m, p]) + " " + extra
            v += f" <small>{extra.strip()}</small>"
            if index is not None and int(matrix.n.loc[m, p]) > 0:
                v = f"<a href='{html.escape(cell_href(index, matrix.filters, m, p))}'>{v}</a>"
            cells.append(f"<td>{v}</td>")
        avg = fmt(matrix.row_avg.get(m))
        if matrix.avg_lower is not None:
            avg += f" <small>{interval_text(matrix.avg_lower.get(m), matrix.avg_upper.get(m))}</small>"
        rows.append(f"<tr><td>{html.escape(label(m))}</td>{''.join(cells)}<td class='avg'>{avg}</td></tr>")
    if matrix.column_avg is not None:
        cells = "".join(f"<td>{fmt(matrix.column_avg.get(p))}</td>" for p in matrix.partners)
        rows.append(f"<tr class='bottom'><td>{html.escape(matrix.column_label or '')}</td>{cells}<td></td></tr>")
    note = matrix.note
    if not np.isfinite(matrix.values.to_numpy(float)).any():
        note = "; ".join(x for x in (note, elsewhere(settings)) if x)
    note = f"<p class='note'>{html.escape(note)}</p>" if note else ""
    table = (f"<table><caption>{html.escape(matrix.title)}</caption><thead><tr><th>model \\ partner</th>{head}"
             f"<th>{AVG}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{note}")
    return page(matrix.title, table, settings)


def interval_text(lower, upper) -> str:
    """'[.40, .62]', or '' where no interval was drawn (a cell without runs)."""
    if lower is None or upper is None or pd.isna(lower) or pd.isna(upper):
        return ""
    return f"[{fmt(lower)}, {fmt(upper)}]"


def elsewhere(settings: Settings | None) -> str:
    """Where the runs an empty main-window table left out are, or "" when it left none out."""
    if settings is None or not settings.other_windows_s:
        return ""
    windows = ", ".join(f"{w:g} s" for w in settings.other_windows_s)
    main = f" ({settings.main_window_s:g} s)" if settings.main_window_s is not None else ""
    return (f"this config's runs at {windows} are left out of the main window's{main} tables "
            "(the time-window table shows every window)")


def frame_body(frame: pd.DataFrame, title: str, note: str = "", formatters: dict[str, Callable] | None = None) -> str:
    """One table with its caption and note, as an HTML fragment."""
    formatters = formatters or {}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for _, row in frame.iterrows():
        cells = []
        for c in frame.columns:
            f = formatters.get(c) or formatter_for(str(c))
            cells.append(f"<td>{html.escape(f(row[c]))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    note_html = f"<p class='note'>{html.escape(note)}</p>" if note else ""
    return f"<table><caption>{html.escape(title)}</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{note_html}"


def frame_html(frame: pd.DataFrame, title: str, settings: Settings | None = None, note: str = "",
               formatters: dict[str, Callable] | None = None, empty: str = "") -> str:
    """``empty``: why the table has no rows, printed in its place (an empty table always says why)."""
    if frame.empty:
        note = "; ".join(x for x in (empty or "no rows: nothing in these runs to tabulate", elsewhere(settings), note) if x)
    return page(title, frame_body(frame, title, note, formatters), settings)
