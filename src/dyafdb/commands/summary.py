"""The end-of-run summary: conversations recorded, failed and re-recorded, judge answers, invalid
answers and cost, each model's headline scores, the leaderboard, warnings for degenerate tables and
the paths to open. Printed and written to <results>/summary.md (the workflow does this on success)."""

from __future__ import annotations

import argparse

from dyafdb.analysis.run_summary import write_summary
from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.suite.design import build_design

NAME = "summary"
HELP = "write and print <results>/summary.md: counts, judge cost, headline scores, leaderboard, warnings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="write the file, print only its path")


def run(args: argparse.Namespace) -> int:
    config = load_configs(args)
    path, text = write_summary(config, args.root, build_design(config, args.root))
    print(f"summary -> {path}" if args.quiet else f"{text}\n(written to {path})")
    return 0
