"""Where a run stands: recorded, scored, judged and failed conversations per suite and pairing, with
an ETA from the benchmark files of finished jobs. Reads files only; safe while the run goes on."""

from __future__ import annotations

import argparse
import json

from dyafdb.analysis.run_summary import format_status, run_status
from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.suite.design import build_design

NAME = "status"
HELP = "recorded, scored, judged and failed conversations per suite and pairing, with an ETA"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")


def run(args: argparse.Namespace) -> int:
    config = load_configs(args)
    status = run_status(config, args.root, build_design(config, args.root))
    print(json.dumps(status, indent=2) if args.json else format_status(status))
    return 0
