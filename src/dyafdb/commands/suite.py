"""The scenario suite and the design built from it.

  dyafdb suite check [--root scenarios]   check every scenario file against the suite rules (scenarios/README.md)
  dyafdb suite rules                      list the rule ids the check uses
  dyafdb suite design [--config ...]      write the design table (one row per conversation) and print its counts
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "suite"
HELP = "check the scenario suite (check, rules) and build the design table from the config (design)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="<action>")
    sub.required = True
    check = sub.add_parser("check", help="check every scenario file against the suite rules; exit 1 if any rule is broken")
    check.add_argument("--root", type=Path, default=Path("scenarios"), help="folder holding T1-1/ ... T4-4/ (default: scenarios)")
    sub.add_parser("rules", help="list the rule ids the check uses, with what each requires")
    design = sub.add_parser("design", help="build <results_dir>/design/conversations.tsv from config and scenarios")
    add_config_argument(design)
    design.add_argument("--out", type=Path, default=None, help="default: <results_dir>/design/conversations.tsv")
    design.add_argument("--json", action="store_true", help="print the counts as JSON")


def run(args: argparse.Namespace) -> int:
    return {"check": _check, "rules": _rules, "design": _design}[args.action](args)


def _rules(args: argparse.Namespace) -> int:
    from dyafdb.suite.check import RULES

    width = max(map(len, RULES))
    for rule, text in RULES.items():
        print(f"{rule:<{width}}  {text}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from dyafdb.suite.check import RULES, check_suite

    problems = check_suite(args.root)
    if problems:
        for p in problems:
            print(p)
        files = len({p.path for p in problems})
        print(f"suite check: {len(problems)} problem(s) in {files} file(s)/folder(s) under {args.root}")
        return 1
    n = sum(1 for _ in args.root.glob("*/*.yaml"))
    print(f"suite check: {n} scenarios under {args.root}, all {len(RULES)} rules pass")
    return 0


def _design(args: argparse.Namespace) -> int:
    from dyafdb.paths import results_of
    from dyafdb.suite.design import build_design, count_summary, write_design

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
