"""Collect every measure into results/scores/measures.tsv (long format; see dyafdb.table)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "measures"
HELP = "collect mechanical and judged measures of every conversation into results/scores/measures.tsv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--out", type=Path, help="default: <results_dir>/scores/measures.tsv")
    parser.add_argument("--no-judge", action="store_true", help="mechanical measures only")


def run(args: argparse.Namespace) -> int:
    from dyafdb.design import build_design
    from dyafdb.table import table_rows, write_table

    config = load_configs(args)
    rows = build_design(config, args.root)
    out = args.out or Path(args.root) / config["results_dir"] / "scores" / "measures.tsv"
    n = write_table(out, table_rows(config, args.root, rows, with_judge=not args.no_judge))
    print(f"{n} rows for {len(rows)} conversations -> {out}")
    return 0
