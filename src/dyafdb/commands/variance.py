"""Decompose a table of cell means into eta-squared terms (Appendix C) and print them as JSON.

CELLS.tsv (or .csv) has one row per cell with columns model, partner, value and optionally task.
A complete grid uses the closed form; a grid with missing cells (e.g. cross-play only) uses Type II
sums of squares. Keys printed: task, model, partner, model_x_partner, residual (those that apply:
without a task column one value per cell leaves no residual).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from dyafdb.errors import InputError

NAME = "variance"
HELP = "eta-squared of model, partner, model x partner (and task) for a table of cell means"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cells", type=Path, help="TSV/CSV with columns model, partner, value[, task]")
    parser.add_argument("--cross-play-only", action="store_true", help="leave out the cells where model = partner")
    parser.add_argument("--digits", type=int, default=6, help="round the printed terms (default 6)")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from dyafdb.analysis.io import read_delimited
    from dyafdb.analysis.variance import decompose_cells, decompose_note

    path: Path = args.cells
    if not path.exists():
        raise InputError(f"{path}: file not found")
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    cells = read_delimited(path, "cells table", "one row per cell, columns model, partner, value[, task]", sep=sep,
                           dtype=str, keep_default_na=False)
    cells.columns = [c.strip().lower() for c in cells.columns]
    if args.cross_play_only and {"model", "partner"} <= set(cells.columns):
        cells = cells[cells["model"] != cells["partner"]]
    try:
        terms = decompose_cells(cells)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    # terms the cells cannot answer are null with the reason (never zeros): a constant table, or a
    # grid that cannot separate model from partner
    doc = {k: None if math.isnan(v) else round(v, args.digits) for k, v in terms.items()}
    note = decompose_note(cells)
    if note:
        doc["note"] = note
    print(json.dumps(doc, indent=2))
    return 0
