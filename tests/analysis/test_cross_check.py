"""Issue 26's cross-check: every number that appears on two pages says the same on both.

The run is the viewer tests' small demo (tests/helpers/viewer_site.py): scripted recordings scored by
the real scoring code and judged by the real judge runner, so measures.tsv, the per-run table, the
score tables, the leaderboard, summary.md and the viewer's index are all made by the pipeline's own
functions. Each page is parsed back and compared with the others; no value is written down here.

``DYAFDB_CROSS_CHECK_RESULTS=results/demo pytest tests/analysis/test_cross_check.py`` runs the same
checks on a finished run's own files (the demo's, after its report, summary.md and viewer are made).
"""

from __future__ import annotations

import html as htmlmod
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from dyafdb.analysis import columns as C
from dyafdb.analysis.io import read_measures
from dyafdb.analysis.numbers import fmt
from dyafdb.analysis.products import matrix_product, rating_product, runs_product
from dyafdb.analysis.run_summary import summary_markdown
from dyafdb.analysis.settings import from_config
from dyafdb.measures.table import COLUMNS, format_value, table_rows
from dyafdb.paths import results_of
from dyafdb.suite.design import build_design
from dyafdb.viewer.settings import viewer_settings
from dyafdb.viewer.site import build_site
from viewer_site import ARCHETYPES, built_demo

import dataclasses


def _finished_run(folder: Path) -> dict:
    """The pages of a finished run (``DYAFDB_CROSS_CHECK_RESULTS=<its results folder>``: the demo's, after
    `snakemake` has made its report, summary.md and viewer), read where the workflow wrote them."""
    import argparse
    import os

    from dyafdb.commands._common import load_configs

    args = argparse.Namespace(config=None, results=folder, override_json=None, root=None)
    config = load_configs(args)
    root = Path(getattr(args, "root", None) or os.getcwd())
    layout = results_of(config, root)
    tables = Path(layout.analysis_table("leaderboard")).parent
    tasks = tuple(sorted(p.stem.removeprefix("score_") for p in tables.glob("score_*.tsv")))
    return {"root": root, "config": config, "tables": tables, "summary": (Path(layout.root) / "summary.md").read_text(),
            "measures": Path(layout.measures_table), "site": Path(layout.site), "tasks": tasks,
            "label": from_config(config, root).label, "runs": tables.parent / "runs"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    import os

    if os.environ.get("DYAFDB_CROSS_CHECK_RESULTS"):
        return _finished_run(Path(os.environ["DYAFDB_CROSS_CHECK_RESULTS"]))
    root, config = built_demo(tmp_path_factory)
    layout = results_of(config, root)
    rows = build_design(config, root)
    measures = Path(layout.measures_table)
    measures.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(list(table_rows(config, root, rows)), columns=COLUMNS).to_csv(measures, sep="\t", index=False)
    settings = from_config(config, root)
    settings.bootstrap = 60  # intervals drawn, so they can disagree
    tables = Path(layout.analysis_table("leaderboard")).parent
    runs = runs_product([measures], settings, tables.parent / "runs" / "all.tsv")
    for task in ARCHETYPES:
        matrix_product(runs, settings, task, tables / f"score_{task}.tsv", tables / f"score_{task}.html")
    rating_product(runs, settings, tables / "leaderboard.tsv", tables / "rating_effects.tsv", tables / "leaderboard.html")
    summary = summary_markdown(config, root, rows)
    site = tmp_path_factory.mktemp("cross-site")
    build_site(config, root, dataclasses.replace(viewer_settings(config, root), out=site, annotation=False))
    return {"root": root, "config": config, "tables": tables, "summary": summary, "measures": measures, "site": site,
            "tasks": tuple(ARCHETYPES), "label": settings.label, "runs": tables.parent / "runs"}


def _section(markdown: str, title: str) -> str:
    return markdown.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _md_table(section: str) -> list[list[str]]:
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines if not set(ln) <= set("|-: ")]


def _html_rows(page: str) -> list[list[str]]:
    """Every table row's cells as text (tags dropped, entities decoded)."""
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        out.append([htmlmod.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return out


def _note(page: str) -> str:
    found = re.search(r"<p class='note'>(.*?)</p>", page, re.S)
    return htmlmod.unescape(found.group(1)) if found else ""


def _tsv(path: Path, **read) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", keep_default_na=False, **read)


def _num(text) -> float | None:
    return None if text in ("", None) else float(text)


def _interval(lo, hi) -> str:
    lo, hi = _num(lo), _num(hi)
    return "" if lo is None or hi is None else f"[{fmt(lo)}, {fmt(hi)}]"


def _model_rows(frame: pd.DataFrame) -> pd.DataFrame:
    partners = [c[2:] for c in frame.columns if c.startswith("n:")]
    return frame[frame[f"n:{partners[0]}"] != ""], partners


def test_summary_headline_cells_match_the_score_tables(pages):
    """summary.md's headline score, interval and n per model and task are the score TSV's avg, avg_lo/hi
    and the sum of its cells' n; the report's HTML prints the same avg and interval."""
    table = _md_table(_section(pages["summary"], "Headline scores"))
    header, body = table[0], table[1:]
    assert header[1:] == sorted(pages["tasks"])
    shown = {r[0]: dict(zip(header[1:], r[1:])) for r in body}
    checked = 0
    for task in pages["tasks"]:
        frame, partners = _model_rows(_tsv(pages["tables"] / f"score_{task}.tsv"))
        page = (pages["tables"] / f"score_{task}.html").read_text()
        html_avg = {r[0]: r[-1] for r in _html_rows(page)[1:]}
        for _, r in frame.iterrows():
            n = sum(int(r[f"n:{p}"]) for p in partners)
            expect = " ".join(x for x in (fmt(_num(r["avg"])), _interval(r.get("avg_lo", ""), r.get("avg_hi", "")), f"n={n}") if x)
            assert shown[r["row"]][task] == expect, (task, r["row"])
            label = pages["label"](r["row"])
            assert html_avg[label] == " ".join(x for x in (fmt(_num(r["avg"])), _interval(r.get("avg_lo", ""), r.get("avg_hi", ""))) if x)
            checked += 1
    assert checked >= len(pages["tasks"])
    if "avg_lo" in frame:
        assert "[" in _section(pages["summary"], "Headline scores"), "the bootstrap was on: the headline carries intervals"


def test_score_table_cells_and_notes_match_the_tsv(pages):
    """Every cell of the report's matrix prints the TSV's value, interval and n; the note's "n = N
    scored ..." is the sum of the cells' n; a note's "none k of m" is counted from the runs."""
    runs = pd.concat([pd.read_csv(p, sep="\t") for p in sorted(pages["runs"].glob("*.tsv"))], ignore_index=True)
    runs = runs.drop_duplicates([C.CONVERSATION, C.SIDE, C.WINDOW])
    for task in pages["tasks"]:
        frame, partners = _model_rows(_tsv(pages["tables"] / f"score_{task}.tsv"))
        page = (pages["tables"] / f"score_{task}.html").read_text()
        labels = {m: pages["label"](m) for m in frame["row"]}
        head, *body = _html_rows(page)
        by_label = {r[0]: r for r in body}
        pinned = {(m, p) for m, s in zip(frame["row"], frame["pinned"]) for p in str(s).split(",") if p}
        for _, r in frame.iterrows():
            for p in partners:
                cell = by_label[labels[r["row"]]][1 + head[1:].index(labels[p])]
                value = fmt(_num(r[p]))
                if (r["row"], p) in pinned:
                    value = f"({value})"
                    bounds = ""
                else:
                    bounds = _interval(r.get(f"lo:{p}", ""), r.get(f"hi:{p}", ""))  # none with the bootstrap off
                n = f"n={int(r[f'n:{p}'])}" + (f"/{int(r[f'runs:{p}'])}" if f"runs:{p}" in frame else "")
                assert cell == " ".join(x for x in (value, bounds, n) if x), (task, r["row"], p)
        note = _note(page)
        assert note == _tsv(pages["tables"] / f"score_{task}.tsv")["note"].iloc[0]
        total = sum(int(r[f"n:{p}"]) for _, r in frame.iterrows() for p in partners)
        said = re.search(r"n = (\d+) scored", note)
        assert said and int(said.group(1)) == total, (task, note)
        none = re.search(r"answered 'none' (\d+) of (\d+)", note)
        if none:
            # one answer per conversation: counted over conversations, not over both sides' rows
            task_runs = runs[(runs["task"] == task) & runs["decided"].notna()].groupby(C.CONVERSATION)["decided"].first()
            assert (int(none.group(1)), int(none.group(2))) == (int((task_runs == 0).sum()), len(task_runs))


def test_summary_leaderboard_matches_the_leaderboard_table(pages):
    board = _tsv(pages["tables"] / "leaderboard.tsv", dtype=str)  # the cells as written (1000, not 1000.0)
    section = _section(pages["summary"], "Leaderboard")
    page = (pages["tables"] / "leaderboard.html").read_text()
    if not (board.get("rating", pd.Series(dtype=str)) != "").any():
        assert "no" in section.lower() and C.NO_BATTLES in _note(page)
        return
    table = _md_table(section)
    header, body = table[0], table[1:]
    assert len(body) == len(board)
    assert {"battles", "decisive", "ties"} <= set(header)
    for shown, (_, r) in zip(body, board.iterrows()):
        for col, text in zip(header, shown):
            anchor = col == "model" and str(r["anchor"]) == "True"
            assert text == (f"{r[col]} (anchor, pinned)" if anchor else str(r[col])), (col, r["model"])
        assert int(r["battles"]) == int(r["decisive"]) + int(r["ties"])
    # rounded as written: no float noise (2.22e-16) and no negative zero in the file a reader opens
    text = (pages["tables"] / "leaderboard.tsv").read_text()
    assert not re.search(r"(?<![\w.])-0(?![.\d])|e-1\d", text), text
    head, *rows = _html_rows(page)
    for shown, (_, r) in zip(rows, board.iterrows()):
        for col in ("rating", "lower", "upper", "battles"):
            if col in head and r[col] != "":
                assert _num(shown[head.index(col)]) == pytest.approx(_num(r[col]), abs=0.51), col


def test_summary_answer_counts_match_the_measures_table(pages):
    """summary.md's per-judge answer line counts the judged rows of measures.tsv (one per seat and question)."""
    from dyafdb.analysis.answers import ledger, policy_of, tally, tally_text

    measures = read_measures(pages["measures"])
    judged = measures[measures[C.JUDGE] != ""]
    section = _section(pages["summary"], "Judge answers")
    for judge, group in judged.groupby(C.JUDGE):
        line = next(ln for ln in section.splitlines() if ln.startswith(f"- {judge}:"))
        answers = int(re.search(r"(\d+) judge answers", line).group(1))
        assert answers == len(ledger(group, policy_of(pages["config"])))
        assert line == f"- {judge}: {tally_text(tally(ledger(group, policy_of(pages['config']))))}"
    # and the judge table above it counts the same answers from the judge files
    usage = _md_table(_section(pages["summary"], "Judge\n"))
    for row in usage[1:]:
        line = next(ln for ln in section.splitlines() if ln.startswith(f"- {row[0]}:"))
        assert int(row[2].replace(",", "")) == int(re.search(r"(\d+) judge answers", line).group(1))


def test_viewer_index_numbers_are_the_measures_table(pages):
    """Each value and judge label in the viewer's index is the one measures.tsv holds for that
    conversation, side, measure and judge; every measure measures.tsv holds is in the index."""
    text = (pages["site"] / "index-data.js").read_text()
    data = json.loads(text[text.index("=") + 1:].strip().rstrip(";"))
    catalog = data["catalog"]
    measures = read_measures(pages["measures"])
    want = {(r[C.CONVERSATION], r[C.MEASURE], r[C.SIDE], r[C.JUDGE]): (r[C.VALUE], r[C.LABEL], r.get(C.CHECK, ""))
            for _, r in measures.iterrows() if r[C.MEASURE] != "garble_failure"}
    seen = 0
    for row in data["rows"]:
        for i, entry in enumerate(catalog):
            key = (row["id"], entry["measure"], entry["side"], entry["judge"])
            v, label = row["v"][i], row["l"].get(str(i))
            if key not in want:
                assert v is None and label is None, key
                continue
            value, tsv_label, check = want.pop(key)
            seen += 1
            if isinstance(check, str) and check:
                continue  # withheld in the viewer, by the policy's words (tests/viewer/test_withheld.py)
            if v is not None:
                # measures.tsv writes values at format_value's precision; the index holds the score file's
                assert format_value(v) == str(value), key
            elif entry["measure"] not in ("final_choice", "landed_option", "landed_line"):
                assert str(value) in ("", "nan"), key
            if entry["judge"]:
                assert str(label) == str(tsv_label), key
    assert seen and not want, f"in measures.tsv, not in the viewer index: {sorted(want)[:5]}"
    from dyafdb.analysis.columns import measure_label

    for entry in catalog:
        assert entry["label"].startswith(measure_label(entry["measure"]) + " · side ")
