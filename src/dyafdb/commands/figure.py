"""Draw one figure from its analysis table(s) and save it in every configured format (PNG, PDF)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.schema_check import InputError

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
    from dyafdb.analysis import columns as C
    from dyafdb.analysis import figures as F
    from dyafdb.analysis.io import read_tsv
    from dyafdb.analysis.settings import from_config
    from dyafdb.analysis.tables import Matrix

    settings = from_config(load_configs(args), args.root)
    tables = [read_tsv(p) for p in args.input]
    if args.name == "matrices":
        mats = []
        for path, table in zip(args.input, tables):
            key = path.stem.split("_", 1)[-1]
            title = C.TASK_TITLES.get(key) or C.TURN_TAKING_LABELS.get(key) or path.stem.replace("_", " ")
            mats.append(Matrix.from_frame(table, name=path.stem, title=title))
        fig = F.matrices_figure(mats, settings)
    elif args.name == "timing":
        if len(tables) != 2:
            raise InputError("dyafdb figure timing needs --input SUMMARY.tsv CURVES.tsv")
        fig = F.timing_figure(tables[1], tables[0], settings)
    else:
        fig = F.FIGURES[args.name](tables[0], settings)
    for path in F.save(fig, args.out_prefix, settings):
        print(path)
    return 0
