"""Ask the LLM judge: one batch per (judge, archetype, question) -> results/judge/<judge>/<archetype>/<question>.jsonl.

Without --archetype/--question it runs every batch the design needs for that judge. Prints calls,
cache hits, tokens and cost per batch. A judge that needs an API key reads it from the environment
variable config names (ANTHROPIC_API_KEY / OPENAI_API_KEY by default).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "judge"
HELP = "LLM judge answers for one (judge, archetype, question) batch, or all batches of a judge"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--judge", action="append", help="judge name under judge.judges (repeatable; default: judge.run)")
    parser.add_argument("--archetype", help="one archetype (default: every archetype of the design)")
    parser.add_argument("--question", help="one question, e.g. role_adherence (default: every question of the archetype)")
    parser.add_argument("--out", type=Path, help="output file (only with one judge, archetype and question)")


def run(args: argparse.Namespace) -> int:
    from dyafdb.suite.design import build_design
    from dyafdb.judge.client import JudgeError
    from dyafdb.judge.rubric import judge_plan
    from dyafdb.judge.runner import Usage, run_batch
    from dyafdb.judge.settings import judge_settings
    from dyafdb.errors import InputError

    config = load_configs(args)
    settings = judge_settings(config, args.root)
    rows = build_design(config, args.root)
    judges = args.judge or list(settings.run)
    archetypes = [args.archetype] if args.archetype else sorted({r.archetype for r in rows})
    plan = [(a, q) for a, q in judge_plan(archetypes) if args.question in (None, q)]
    if args.out and (len(judges) != 1 or len(plan) != 1):
        raise InputError("--out needs exactly one --judge, --archetype and --question")
    if not plan:
        raise InputError(f"no judge question for archetype(s) {', '.join(archetypes)}"
                         + (f" and question {args.question}" if args.question else ""))
    try:
        for judge in judges:
            total = Usage()
            for archetype, question in plan:
                usage = run_batch(config, args.root, judge, archetype, question, args.out, rows)
                for name in vars(total):
                    setattr(total, name, getattr(total, name) + getattr(usage, name))
            if len(plan) > 1:
                print(total.summary(settings.judge(judge), f"judge {judge} total"))
    except JudgeError as exc:
        print(f"dyafdb judge: error: {exc}", file=sys.stderr)
        return 4
    return 0
