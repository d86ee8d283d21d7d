"""Check a results folder against its design, by content: every recording is the conversation its
folder names, made from the inputs the config gives now, and every later file was made from it.

  dyafdb verify [-c CONFIG] [--json] [--deep]

Exit 0 with "ok" and the counts, 1 with every problem by kind (missing, not_in_design, identity,
stale, rows, truncated, partial), each naming the file, what was expected and the fix.
"""

from __future__ import annotations

import argparse
import json

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "verify"
HELP = "check a results folder against its design by content: missing, foreign, stale, truncated and leftover files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--deep", action="store_true",
                        help="also hash every recording's audio and text against meta.json (reads all audio)")


def run(args: argparse.Namespace) -> int:
    from dyafdb.verify.check import verify

    config = load_configs(args)
    report = verify(config, args.root, deep=args.deep)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.format())
    return 0 if report.ok else 1
