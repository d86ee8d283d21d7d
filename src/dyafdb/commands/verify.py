"""Check a results folder against its design, by content: every recording is the conversation its
folder names, made from the inputs the config gives now, and every later file was made from it.

  dyafdb verify [-c CONFIG] [--json] [--deep]
  dyafdb verify BUNDLE [--json]

Exit 0 with "ok" and the counts, 1 with every problem by kind (missing, not_in_design, identity,
stale, rows, truncated, partial), each naming the file, what was expected and the fix.

Given a bundle (`dyafdb bundle`), it checks that instead: results.json against its schema, every
member against its digest, each recording's digest in meta.json, measures.tsv and the judge answers,
every judge answer against measures.tsv, and the analysis recomputed from the bundle's measures
against the tables and headline scores it carries (kinds schema, digest, recording, answers, numbers).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "verify"
HELP = "check a results folder against its design by content: missing, foreign, stale, truncated and leftover files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", nargs="?", type=Path, default=None,
                        help="a results bundle to check instead of the config's results folder")
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--deep", action="store_true",
                        help="also hash every recording's audio and text against meta.json (reads all audio)")


def run(args: argparse.Namespace) -> int:
    if args.bundle is not None:
        return _bundle(args)
    from dyafdb.verify.check import verify

    config = load_configs(args)
    report = verify(config, args.root, deep=args.deep)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.format())
    return 0 if report.ok else 1


def _bundle(args: argparse.Namespace) -> int:
    import warnings

    from dyafdb.share.check import verify_bundle

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        report = verify_bundle(args.bundle)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.format())
    return 0 if report.ok else 1
