"""Work with the scenario suite. `dyafdb scenarios check` runs the suite rules (scenarios/README.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.suite.check import RULES, check_suite

NAME = "scenarios"
HELP = "check the scenario suite (dyafdb scenarios check [--root scenarios])"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="<action>")
    sub.required = True
    check = sub.add_parser("check", help="check every scenario file against the suite rules; exit 1 if any rule is broken")
    check.add_argument("--root", type=Path, default=Path("scenarios"), help="folder holding T1-1/ ... T4-4/ (default: scenarios)")
    sub.add_parser("rules", help="list the rule ids the check uses, with what each requires")


def run(args: argparse.Namespace) -> int:
    if args.action == "rules":
        width = max(map(len, RULES))
        for rule, text in RULES.items():
            print(f"{rule:<{width}}  {text}")
        return 0
    problems = check_suite(args.root)
    if problems:
        for p in problems:
            print(p)
        files = len({p.path for p in problems})
        print(f"scenarios check: {len(problems)} problem(s) in {files} file(s)/folder(s) under {args.root}")
        return 1
    n = sum(1 for _ in args.root.glob("*/*.yaml"))
    print(f"scenarios check: {n} scenarios under {args.root}, all {len(RULES)} rules pass")
    return 0
