"""The text-only pairing of Appendix E: generate text conversations, score them, and build Table 9.

  dyafdb text-pairing generate --archetype T2 --out results/text_pairing/conversations/T2.jsonl
  dyafdb text-pairing score --conversations results/text_pairing/conversations/T2.jsonl --out .../T2.tsv
  dyafdb text-pairing table --runs results/analysis/runs/*.tsv --text-measures .../*.tsv --out table9.tsv

Table 9 sets the text runs beside the speech models' per-run tables, so its step calls the analysis
stage (dyafdb.analysis.products.text_pairing_product).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.errors import InputError

NAME = "text-pairing"
HELP = "text-only pairing (Appendix E): generate, score, and compare with the speech models (Table 9)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("step", choices=("generate", "score", "table"))
    add_config_argument(parser)
    parser.add_argument("--archetype", help="generate: the archetype to run")
    parser.add_argument("--conversations", type=Path, help="score: the JSONL written by generate")
    parser.add_argument("--judge", help="score: judge name (default text_pairing.judge, else the main judge)")
    parser.add_argument("--runs", type=Path, nargs="+", help="table: speech per-run table(s) (dyafdb analysis runs)")
    parser.add_argument("--text-measures", type=Path, nargs="*", default=[], help="table: text measures TSVs written by score")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--html", type=Path, help="table: also render as HTML")


def run(args: argparse.Namespace) -> int:
    from dyafdb.text_pairing import pairing as T

    config = load_configs(args)
    if args.step == "generate":
        if not args.archetype:
            raise InputError("dyafdb text-pairing generate needs --archetype")
        ts = T.text_settings(config)
        if not ts.models:
            raise InputError("config text_pairing.models is empty: name two text models (see docs/analysis.md)")
        T.generate(config, args.root, args.archetype, args.out, log=sys.stdout)
    elif args.step == "score":
        if not args.conversations:
            raise InputError("dyafdb text-pairing score needs --conversations")
        T.score(config, args.root, args.conversations, args.out, args.judge, log=sys.stdout)
    else:
        from dyafdb.analysis.products import text_pairing_product
        from dyafdb.analysis.settings import from_config

        if not args.runs:
            raise InputError("dyafdb text-pairing table needs --runs")
        text_pairing_product(config, args.root, args.runs, args.text_measures, from_config(config, args.root),
                             args.out, args.html, args.judge)
    return 0
