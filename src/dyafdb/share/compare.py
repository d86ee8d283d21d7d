"""`dyafdb compare A B`: two runs side by side, cell by cell, each difference with its interval.

A cell is (task, window, model, partner, measure, judge): every numeric measure of measures.tsv,
and each task's headline score (``score``, the per-run score of dyafdb.analysis.runs, self-play
pinned cells left out) with the model's average over its partners (partner ``avg``), as the score
tables show them. Each cell gives both means, B minus A, its interval and a flag where the interval
leaves out zero.

Intervals come from the analysis's one bootstrap (dyafdb.analysis.bootstrap.resampled_cluster_means,
scenarios drawn as clusters, the run's ``analysis.bootstrap``, ``seed`` and ``ci``). A cell is
*paired* when both runs hold the same conversation sides made from the same recordings (the design
row and the recording digest agree, e.g. only a judge prompt changed): one draw of scenarios
weighs both runs, so what the runs share cancels out; otherwise the runs are drawn independently.
Two identical runs give a difference of exactly zero in every replicate: nothing is flagged.

Runs whose scenarios or scoring settings differ (dyafdb.analysis.bundles.fingerprint) are refused
with the differences named, unless each is accepted by name (``--accept judge.prompt.role_adherence``,
or a pattern such as ``judge.prompt.*``).
"""

from __future__ import annotations

import fnmatch
import html
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.bootstrap import interval, resampled_cluster_means
from dyafdb.analysis.bundles import describe_differences, differences
from dyafdb.analysis.numbers import fmt
from dyafdb.analysis.render import STYLE, cell_href, interval_text
from dyafdb.analysis.runs import build_runs, resolve_judges
from dyafdb.analysis.settings import Settings, from_config
from dyafdb.errors import InputError
from dyafdb.fileio import write_text_atomic
from dyafdb.share.sources import Source

CELL = ["task", "window", "model", "partner", "measure", "judge"]
SCORE = "score"
AVG = "avg"
COLUMNS = [*CELL, "in", "a", "b", "diff", "lower", "upper", "significant", "paired", "n_a", "n_b", "scenarios"]


def refusal(a: Source, b: Source, accept: Sequence[str] = ()) -> dict[str, str]:
    """The differences of the two runs' fingerprints that ``accept`` does not let through."""
    diffs = differences(a.fingerprint, b.fingerprint)
    return {k: v for k, v in diffs.items() if not any(fnmatch.fnmatchcase(k, pat) for pat in accept)}


def units(source: Source, settings: Settings) -> pd.DataFrame:
    """One row per conversation side and cell with a number: measures.tsv's numeric values and the
    headline score of the per-run table."""
    m = source.measures()
    value = pd.to_numeric(m[C.VALUE].where(m[C.VALUE] != ""), errors="coerce")
    keep = value.notna() & np.isfinite(value)
    rec = m["recording"] if "recording" in m else pd.Series("", index=m.index)
    out = pd.DataFrame({"conversation_id": m[C.CONVERSATION], "side": m[C.SIDE], "recording": rec,
                        "scenario": m[C.SCENARIO], "task": m[C.ARCHETYPE], "window": m[C.WINDOW].astype(float),
                        "model": m[C.MODEL], "partner": m[C.PARTNER], "measure": m[C.MEASURE], "judge": m[C.JUDGE],
                        "value": value})[keep]
    frames = [out]
    for task, sub in m.groupby(C.ARCHETYPE, sort=True):
        main, _ = resolve_judges(sub, settings)
        runs = build_runs(sub.reset_index(drop=True), settings, main)
        runs = runs[runs["score"].notna() & ~runs["pinned"].astype(bool)]
        digest = sub.drop_duplicates(C.CONVERSATION).set_index(C.CONVERSATION)["recording"] if "recording" in sub else None
        frames.append(pd.DataFrame({
            "conversation_id": runs[C.CONVERSATION], "side": runs[C.SIDE],
            "recording": runs[C.CONVERSATION].map(digest) if digest is not None else "",
            "scenario": runs[C.SCENARIO], "task": task, "window": runs[C.WINDOW].astype(float), "model": runs[C.MODEL],
            "partner": runs[C.PARTNER], "measure": SCORE, "judge": main or "", "value": runs["score"].astype(float)}))
    return pd.concat(frames, ignore_index=True)


def _replicates(frame: pd.DataFrame, codes: np.ndarray, n_cells: int, scenarios: list[str], settings: Settings,
                seed: int) -> np.ndarray:
    """(B, cells) bootstrap cell means. Every scenario of both runs enters the draw (a weightless row
    in a spare cell), so two calls with one seed weigh both runs' scenarios alike: a paired draw."""
    values = np.concatenate([frame["value"].to_numpy(float), np.zeros(len(scenarios))])
    cells = np.concatenate([codes, np.full(len(scenarios), n_cells)])
    clusters = np.concatenate([frame["scenario"].astype(str).to_numpy(), np.asarray(scenarios, dtype=object)])
    chunks = list(resampled_cluster_means(values, cells, n_cells + 1, clusters, settings.bootstrap,
                                          np.random.default_rng(seed)))
    return np.concatenate(chunks)[:, :n_cells]


def compare(a: Source, b: Source, settings: Settings | None = None) -> pd.DataFrame:
    """Every cell of A and B (module docstring), sorted by the size of the change."""
    settings = settings or from_config(a.config, a.root)
    ua, ub = units(a, settings), units(b, settings)
    rows = []
    for (measure, judge), ga in _groups(ua, ub):
        gb = ub[(ub["measure"] == measure) & (ub["judge"] == judge)]
        rows.extend(_group(measure, judge, ga, gb, settings))
    out = pd.DataFrame(rows, columns=COLUMNS)
    order = out["diff"].abs().fillna(-1.0)
    out = out.assign(_o=order, _one=out["in"] != "both").sort_values(["_one", "_o", *CELL],
                                                                     ascending=[True, False, *[True] * len(CELL)],
                                                                     kind="stable")
    return out.drop(columns=["_o", "_one"]).reset_index(drop=True)


def _groups(ua: pd.DataFrame, ub: pd.DataFrame):
    keys = sorted(set(map(tuple, ua[["measure", "judge"]].drop_duplicates().to_numpy()))
                  | set(map(tuple, ub[["measure", "judge"]].drop_duplicates().to_numpy())))
    for measure, judge in keys:
        yield (measure, judge), ua[(ua["measure"] == measure) & (ua["judge"] == judge)]


def _group(measure: str, judge: str, ga: pd.DataFrame, gb: pd.DataFrame, settings: Settings) -> list[dict[str, Any]]:
    key = ["task", "window", "model", "partner"]
    cells = sorted(set(map(tuple, ga[key].to_numpy())) | set(map(tuple, gb[key].to_numpy())), key=lambda t: tuple(map(str, t)))
    index = {c: i for i, c in enumerate(cells)}
    ca = np.array([index[tuple(r)] for r in ga[key].to_numpy()], dtype=np.int64)
    cb = np.array([index[tuple(r)] for r in gb[key].to_numpy()], dtype=np.int64)
    n = len(cells)
    mean_a = _means(ga["value"].to_numpy(float), ca, n)
    mean_b = _means(gb["value"].to_numpy(float), cb, n)
    count_a = np.bincount(ca, minlength=n)
    count_b = np.bincount(cb, minlength=n)
    paired = _paired(ga, gb, ca, cb, n)
    scen_a = [set() for _ in range(n)]
    for c, s in zip(ca, ga["scenario"]):
        scen_a[c].add(s)
    scen_b = [set() for _ in range(n)]
    for c, s in zip(cb, gb["scenario"]):
        scen_b[c].add(s)
    diff_reps = None
    if settings.bootstrap > 0 and len(ga) and len(gb):
        scenarios = sorted(set(ga["scenario"].astype(str)) | set(gb["scenario"].astype(str)))
        ra = _replicates(ga, ca, n, scenarios, settings, settings.seed)
        rb_paired = _replicates(gb, cb, n, scenarios, settings, settings.seed)
        rb_free = _replicates(gb, cb, n, scenarios, settings, settings.seed + 1)
        diff_reps = np.where(paired[None, :], rb_paired, rb_free) - ra
    extra_cells = []
    if measure == SCORE:
        # each model's average over its partners, as the score tables' avg column
        by_model: dict[tuple, list[int]] = {}
        for i, (t, w, m, _) in enumerate(cells):
            by_model.setdefault((t, w, m), []).append(i)
        for (t, w, m), idx in sorted(by_model.items(), key=lambda kv: tuple(map(str, kv[0]))):
            extra_cells.append(((t, w, m, AVG), idx))
    rows = []
    lo = hi = np.full(n, np.nan)
    if diff_reps is not None:
        lo, hi = interval(diff_reps, settings.ci)
    for i, (t, w, m, p) in enumerate(cells):
        rows.append(_row(t, w, m, p, measure, judge, mean_a[i], mean_b[i], lo[i], hi[i], bool(paired[i]),
                         int(count_a[i]), int(count_b[i]), len(scen_a[i] | scen_b[i])))
    for (t, w, m, p), idx in extra_cells:
        va, vb = _nanmean(mean_a[idx]), _nanmean(mean_b[idx])
        l = h = np.nan
        if diff_reps is not None:
            # the average of the partners' cell differences, per replicate
            reps = _nanmean_rows(np.where(paired[None, idx], rb_paired[:, idx], rb_free[:, idx])) - _nanmean_rows(ra[:, idx])
            l, h = interval(reps, settings.ci)
        scen = set().union(*(scen_a[i] | scen_b[i] for i in idx))
        rows.append(_row(t, w, m, p, measure, judge, va, vb, l, h, bool(paired[idx].all()),
                         int(count_a[idx].sum()), int(count_b[idx].sum()), len(scen)))
    return rows


def _row(t, w, m, p, measure, judge, va, vb, lo, hi, paired, na, nb, scen) -> dict[str, Any]:
    where = "both" if na and nb else ("a" if na else "b")
    both = where == "both"
    diff = vb - va if both else np.nan
    lo, hi = (float(lo), float(hi)) if both else (np.nan, np.nan)
    significant = bool(both and np.isfinite(lo) and np.isfinite(hi) and (lo > 0 or hi < 0))
    return {"task": t, "window": float(w), "model": m, "partner": p, "measure": measure, "judge": judge, "in": where,
            "a": va if na else np.nan, "b": vb if nb else np.nan, "diff": diff, "lower": lo, "upper": hi,
            "significant": significant, "paired": paired and both, "n_a": na, "n_b": nb, "scenarios": scen}


def _paired(ga: pd.DataFrame, gb: pd.DataFrame, ca: np.ndarray, cb: np.ndarray, n: int) -> np.ndarray:
    """Per cell: both runs hold the same conversation sides, from the same recordings."""
    ka = [set() for _ in range(n)]
    kb = [set() for _ in range(n)]
    for c, cid, side, rec in zip(ca, ga["conversation_id"], ga["side"], ga["recording"]):
        ka[c].add((cid, side, rec))
    for c, cid, side, rec in zip(cb, gb["conversation_id"], gb["side"], gb["recording"]):
        kb[c].add((cid, side, rec))
    return np.array([bool(ka[i]) and ka[i] == kb[i] and all(r for _, _, r in ka[i]) for i in range(n)], dtype=bool)


def _means(values: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    from dyafdb.analysis.bootstrap import cell_means

    return cell_means(values, codes, n)


def _nanmean(a: np.ndarray) -> float:
    a = np.asarray(a, dtype=float)
    return float(np.nanmean(a)) if np.isfinite(a).any() else np.nan


def _nanmean_rows(a: np.ndarray) -> np.ndarray:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=1)


# ---------------------------------------------------------------- output


def write_tsv(table: pd.DataFrame, path: Path) -> None:
    from dyafdb.analysis.io import write_tsv as _write

    _write(table, path)


def summary_line(table: pd.DataFrame, a: Source, b: Source) -> str:
    both = table[table["in"] == "both"]
    flagged = both[both["significant"]]
    paired = int(both["paired"].sum())
    return (f"{len(both)} shared cells ({paired} paired by conversation), {len(flagged)} significant; "
            f"{int((table['in'] == 'a').sum())} only in A ({a.name}), {int((table['in'] == 'b').sum())} only in B ({b.name})")


def write_html(table: pd.DataFrame, path: Path, a: Source, b: Source, settings: Settings,
               accepted: dict[str, str] | None = None) -> None:
    """One page: the shared cells by size of change (flagged ones marked), then what one run holds alone;
    each cell links to its conversations in each run's viewer where the run has one."""
    path = Path(path)
    links = {side: (os.path.relpath(src.site_index, path.parent) if src.site_index is not None else None)
             for side, src in (("A", a), ("B", b))}

    def cell_links(r) -> str:
        parts = []
        for side, index in links.items():
            if index is not None and r["partner"] != AVG:
                filters = {"tasks": r["task"], "window": f"{float(r['window']):g}"}
                parts.append(f"<a href='{html.escape(cell_href(index, filters, r['model'], r['partner']))}'>{side}</a>")
        return " ".join(parts)

    def rows_html(frame: pd.DataFrame, shared: bool) -> str:
        out = []
        for _, r in frame.iterrows():
            flag = "▲" if shared and r["significant"] else ""
            cells = [r["task"], f"{float(r['window']):g}", r["model"], r["partner"], r["measure"], r["judge"] or "–"]
            vals = [fmt(r["a"], 3), fmt(r["b"], 3)]
            if shared:
                vals += [fmt(r["diff"], 3), interval_text(r["lower"], r["upper"]) or "–", flag,
                         "paired" if r["paired"] else "unpaired"]
            vals += [str(r["n_a"]), str(r["n_b"]), cell_links(r)]
            cls = " class='sig'" if flag else ""
            out.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
                       + "".join(f"<td>{v if v.startswith('<a') or not v else html.escape(v)}</td>" for v in vals) + "</tr>")
        return "".join(out)

    head = "".join(f"<th>{h}</th>" for h in ("task", "window", "model", "partner", "measure", "judge", "A", "B"))
    shared = table[table["in"] == "both"]
    alone = table[table["in"] != "both"]
    ci = f"{settings.ci:.0%}"
    accepted_html = ("<p class='note'>differences accepted: " + html.escape(describe_differences(accepted)) + "</p>"
                     if accepted else "")
    body = (f"<h1>Compare: A = {html.escape(a.name)}, B = {html.escape(b.name)}</h1>"
            f"<p>{html.escape(summary_line(table, a, b))}.</p>"
            f"<p class='note'>diff = B − A with its {ci} interval from the scenario-cluster bootstrap "
            f"({settings.bootstrap} replicates, seed {settings.seed}); ▲ where the interval leaves out 0. Paired: both runs "
            "hold the same conversation sides from the same recordings (one draw of scenarios weighs both). n = conversation "
            "sides with a value; score is the task's headline score, avg the model's average over its partners.</p>"
            f"{accepted_html}"
            f"<h2>Shared cells, largest change first</h2><table><thead><tr>{head}<th>diff</th><th>{ci} interval</th>"
            f"<th>sig.</th><th>pairing</th><th>n A</th><th>n B</th><th>conversations</th></tr></thead>"
            f"<tbody>{rows_html(shared, True)}</tbody></table>"
            f"<h2>In one run only</h2><table><thead><tr>{head}<th>n A</th><th>n B</th><th>conversations</th></tr></thead>"
            f"<tbody>{rows_html(alone, False)}</tbody></table>")
    style = STYLE + "tr.sig td{background:#fff3cd;font-weight:600}"
    page = (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Compare {html.escape(a.name)} and "
            f"{html.escape(b.name)}</title><style>{style}</style></head><body>{body}</body></html>\n")
    write_text_atomic(path, page)


def check_comparable(a: Source, b: Source, accept: Sequence[str]) -> dict[str, str]:
    """The accepted differences; an InputError naming every other one."""
    diffs = differences(a.fingerprint, b.fingerprint)
    left = refusal(a, b, accept)
    if left:
        raise InputError(f"{a.name} and {b.name} were made with other scenarios or scoring settings ("
                         f"{describe_differences(left)}); fix: compare runs of the same settings, or accept each "
                         f"difference by name: {' '.join('--accept ' + k for k in left)}")
    return {k: v for k, v in diffs.items() if k not in left}
