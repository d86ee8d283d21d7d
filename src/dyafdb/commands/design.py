"""Write the design table (one row per conversation) and print how many conversations it holds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.paths import results_of
from dyafdb.suite.design import build_design, count_summary, write_design

NAME = "design"
HELP = "build results/design/conversations.tsv from config and scenarios"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--out", type=Path, default=None, help="default: <results_dir>/design/conversations.tsv")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")


def run(args: argparse.Namespace) -> int:
    config = load_configs(args)
    rows = build_design(config, args.root)
    out = args.out or Path(results_of(config, args.root).design)
    write_design(rows, out)
    summary = count_summary(rows)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['total']} conversations -> {out}")
        for suite, s in summary["suites"].items():
            print(f"  suite {suite}: {s['total']}")
            for pairing, n in s["pairings"].items():
                print(f"    {pairing:40s} {n}")
    return 0
