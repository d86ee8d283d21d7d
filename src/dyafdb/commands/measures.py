"""Collect every measure into results/scores/measures.tsv (long format; see dyafdb.measures.table)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.paths import results_of

NAME = "measures"
HELP = "collect mechanical and judged measures of every conversation into results/scores/measures.tsv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--out", type=Path, help="default: <results_dir>/scores/measures.tsv")
    parser.add_argument("--no-judge", action="store_true", help="mechanical measures only")
    parser.add_argument("--archetype", help="only this archetype's conversations (with --no-judge: its mechanical table)")
    parser.add_argument("--mechanical", type=Path, nargs="+", metavar="TSV",
                        help="build from these per-archetype mechanical tables (in archetype order) instead of "
                             "reading every conversation's files")


def run(args: argparse.Namespace) -> int:
    from dyafdb.suite.design import build_design
    from dyafdb.errors import InputError
    from dyafdb.measures.table import combined_rows, table_rows, write_table

    config = load_configs(args)
    rows = build_design(config, args.root)
    if args.archetype:
        rows = [r for r in rows if r.archetype == args.archetype]
        if not rows:
            raise InputError(f"--archetype {args.archetype}: the design has no conversation of this archetype")
    out = args.out or Path(results_of(config, args.root).measures_table)
    if args.mechanical:
        records = combined_rows(config, args.root, rows, args.mechanical, with_judge=not args.no_judge)
    else:
        records = table_rows(config, args.root, rows, with_judge=not args.no_judge)
    n = write_table(out, records)
    print(f"{n} rows for {len(rows)} conversations -> {out}")
    return 0
