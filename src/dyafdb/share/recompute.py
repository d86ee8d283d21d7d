"""The analysis tables again, from a measures table alone: what `dyafdb verify BUNDLE` checks a
bundle's numbers with, and what `dyafdb bundle --model` writes for a subset of a run.

The same product functions as the workflow's rules (dyafdb.analysis.products, each table by its
@table declaration through AnalysisInputs), fed per-archetype runs tables built from the measures
rows as the workflow's analysis_runs rule builds them from the score and judge outputs: the rows
are the same (dyafdb.measures.table.table_rows writes both), so the tables are byte for byte the
workflow's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dyafdb.analysis import columns as C
from dyafdb.analysis.io import read_measures, write_tsv
from dyafdb.analysis.products import compute_product
from dyafdb.analysis.runs import build_runs, resolve_judges
from dyafdb.analysis.settings import from_config
from dyafdb.analysis.inputs import AnalysisInputs
from dyafdb.paths import Results

# Tables the recomputation leaves out, and why: they read more than the measures table.
NOT_RECOMPUTED = {"agreement": "reads the human labels of a blind study besides the measures",
                  "text_pairing": "reads the text-only pairing's own measures", "versions": "names the installed packages",
                  "runs": "an intermediate (analysis/runs), not a table"}


def recompute_tables(config: Mapping[str, Any], root: Path, measures_path: Path | None, out: Results,
                     conversations: Mapping[str, Any]) -> list[str]:
    """Every table the analysis writes (TSV and HTML) under ``out``, from ``measures_path``; the stems written.

    ``conversations`` maps id -> design row (archetype, scenario) of the run, as AnalysisInputs takes it.
    Without ``measures_path`` the per-run tables are built as the workflow's analysis_runs rule builds
    them (`dyafdb analysis runs --archetype`: the score and judge outputs, and the bundles the config
    merges), so a run with bundles can be checked against a run that recorded everything."""
    config = dict(config)
    settings = from_config(config, root)
    plan = AnalysisInputs(config, conversations, out.root, root)
    measures = read_measures(measures_path) if measures_path is not None else None
    for task in plan.tasks:
        path = Path(out.analysis_runs(task))
        path.parent.mkdir(parents=True, exist_ok=True)
        if measures is None:
            compute_product("runs", config, root, path, archetype=task)
            continue
        sub = measures[measures[C.ARCHETYPE] == task].reset_index(drop=True)
        main, _ = resolve_judges(sub, settings)
        write_tsv(build_runs(sub, settings, main), path)
    written = []
    for spec in plan.generated_tables():
        runs = plan.table_runs(spec)
        values = spec.values(plan.tasks) if spec.wildcard else [None]
        for value, stem in zip(values, spec.stems(plan.tasks)):
            paths = runs(type("W", (), {"task": value})()) if callable(runs) else runs
            paths = [paths] if isinstance(paths, str) else list(paths)
            tsv = Path(out.analysis_table(stem))
            tsv.parent.mkdir(parents=True, exist_ok=True)
            options: dict[str, Any] = {"runs": [Path(p) for p in paths], "html": Path(out.analysis_table(stem, "html"))}
            if spec.wildcard:
                options[spec.wildcard] = value
            for name, other in spec.outputs.items():
                options[name] = Path(out.analysis_table(other))
            if "effects" in spec.needs:
                options["effects"] = Path(out.analysis_table("rating_effects"))
            compute_product(spec.name, config, root, tsv, **options)
            written += [stem, *spec.outputs.values()]
    return written


def table_differences(expected_dir: Path, got_dir: Path, stems: list[str], limit: int = 20) -> list[str]:
    """Each table whose TSV differs, with the first cells that differ (row, column, both values)."""
    out = []
    for stem in stems:
        a, b = Path(expected_dir) / f"{stem}.tsv", Path(got_dir) / f"{stem}.tsv"
        if not a.exists():
            continue
        if not b.exists():
            out.append(f"{stem}.tsv: not recomputed")
            continue
        if a.read_bytes() == b.read_bytes():
            continue
        fa = pd.read_csv(a, sep="\t", dtype=str, keep_default_na=False)
        fb = pd.read_csv(b, sep="\t", dtype=str, keep_default_na=False)
        if list(fa.columns) != list(fb.columns) or len(fa) != len(fb):
            out.append(f"{stem}.tsv: shape {fa.shape} in the bundle, {fb.shape} recomputed")
            continue
        cells = [(i, c, fa.at[i, c], fb.at[i, c]) for c in fa.columns for i in fa.index if fa.at[i, c] != fb.at[i, c]]
        first = fa.columns[0]
        shown = "; ".join(f"row {fa.at[i, first]!r} column {c!r}: {x!r} in the bundle, {y!r} recomputed"
                          for i, c, x, y in cells[:3])
        out.append(f"{stem}.tsv: {len(cells)} cell(s) differ ({shown})")
        if len(out) >= limit:
            break
    return out
