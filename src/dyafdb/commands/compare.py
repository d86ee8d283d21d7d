"""Compare two runs cell by cell: every cell both hold (model x partner x task x measure, and each
task's headline score with each model's average), both values, B minus A with its 95% interval from
the analysis's scenario-cluster bootstrap, and a flag where it leaves out zero; paired by
conversation where both runs hold the same recordings. What one run holds alone is listed.

  dyafdb compare A B [--out compare.tsv] [--html compare.html] [--accept NAME ...]

A and B are each a results folder (with its run.json) or a bundle (`dyafdb bundle`). Runs made with
other scenarios or scoring settings are refused, naming each difference; --accept NAME lets one
through (a name as the refusal prints it, or a pattern such as judge.prompt.*). Exit 0 when no cell
is flagged, 1 when some are (the TSV and page list them), 2 on a refusal.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "compare"
HELP = "compare two runs (results folders or bundles) cell by cell, each difference with its interval"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", type=Path, help="the first run: a results folder or a bundle")
    parser.add_argument("b", type=Path, help="the second run: a results folder or a bundle")
    parser.add_argument("--out", type=Path, default=Path("compare.tsv"), help="the cells as TSV (default compare.tsv)")
    parser.add_argument("--html", type=Path, default=None, help="also the page, sorted by size of change "
                        "(default: the TSV's name with .html)")
    parser.add_argument("--accept", action="append", default=[], metavar="NAME",
                        help="a difference of scenarios or settings to accept (repeatable; as the refusal names it, "
                             "e.g. judge.prompt.role_adherence, or a pattern such as 'judge.prompt.*')")
    parser.add_argument("--bootstrap", type=int, default=None, help="override the replicates of A's analysis.bootstrap")


def run(args: argparse.Namespace) -> int:
    import warnings

    from dyafdb.analysis.settings import from_config
    from dyafdb.share.compare import check_comparable, compare, summary_line, write_html, write_tsv
    from dyafdb.share.sources import open_source

    a, b = open_source(args.a), open_source(args.b)
    try:
        accepted = check_comparable(a, b, args.accept)
        settings = from_config(a.config, a.root)
        if args.bootstrap is not None:
            settings.bootstrap = args.bootstrap
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            table = compare(a, b, settings)
        write_tsv(table, args.out)
        page = args.html or args.out.with_suffix(".html")
        write_html(table, page, a, b, settings, accepted)
        print(summary_line(table, a, b))
        print(f"{args.out}\n{page}")
        return 1 if bool(table["significant"].any()) else 0
    finally:
        a.close()
        b.close()
