"""Draw one figure from its analysis table(s) and save it in every configured format (PNG, PDF)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.errors import InputError

NAME = "figure"
HELP = "draw a figure (variance, matrices, timing, action_success, windows, balance, leaderboard, text_pairing)"

NAMES = ("variance", "matrices", "timing", "action_success", "windows", "balance", "leaderboard", "text_pairing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=NAMES)
    add_config_argument(parser)
    parser.add_argument("--input", type=Path, nargs="+", required=True,
                        help="the table(s) it draws: timing takes summary then curves; matrices takes any number of matrix TSVs")
    parser.add_argument("--out-prefix", type=Path, required=True, help="written as <prefix>.png, <prefix>.pdf, ...")


def run(args: argparse.Namespace) -> int:
    # imported here: matplotlib would slow every other dyafdb command down
    from dyafdb.analysis import figures as F
    from dyafdb.analysis.io import read_tsv
    from dyafdb.analysis.settings import from_config

    settings = from_config(load_configs(args), args.root)
    tables = [read_tsv(p) for p in args.input]
    try:
        fig = F.draw(args.name, args.input, tables, settings)
    except KeyError as exc:
        raise InputError(f"{', '.join(map(str, args.input))}: not the table(s) figure {args.name} draws (no column {exc}); "
                         "pass the TSV its analysis rule writes (docs/analysis.md)") from None
    for path in F.save(fig, args.out_prefix, settings):
        print(path)
    return 0
