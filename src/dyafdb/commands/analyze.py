"""Compute one analysis product (a table with its TSV and rendered HTML) from the measures.

``runs`` turns measures.tsv into the per-run table every other product reads; ``agreement`` reads the
measures themselves (it needs every judge). See docs/analysis.md for each product.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.errors import InputError

NAME = "analyze"
HELP = "compute one analysis table (runs, matrix, turntaking, variance, timing, ...) from measures.tsv"

PRODUCTS = ("runs", "matrix", "turntaking", "health", "health-models", "variance", "timing", "action-success", "windows", "balance", "agreement",
            "profiles", "rating", "versions")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("product", choices=PRODUCTS, help="what to compute")
    add_config_argument(parser)
    parser.add_argument("--measures", type=Path, nargs="+", help="measures table(s) (runs, agreement)")
    parser.add_argument("--runs", type=Path, nargs="+", help="per-run table(s) written by `dyafdb analyze runs`")
    parser.add_argument("--archetype", help="runs: build from this archetype's score and judge outputs instead of --measures")
    parser.add_argument("--out", type=Path, required=True, help="the product's TSV")
    parser.add_argument("--html", type=Path, help="also render the table as HTML here")
    parser.add_argument("--task", help="archetype of a score matrix (matrix)")
    parser.add_argument("--metric", help="turn-taking metric (turntaking): tor_pause, tor_end, backchannel, barge_in; "
                        "audio-health measure (health): dnsmos_ovrl, text_wer, echo, no_response, ...")
    parser.add_argument("--curves", type=Path, help="timing: the curves TSV")
    parser.add_argument("--effects", type=Path, help="rating: the additive-effects TSV")
    parser.add_argument("--human", type=Path, help="agreement: human labels CSV (overrides analysis.human_labels)")
    parser.add_argument("--config-out", type=Path, help="versions: also write the merged config here")
    parser.add_argument("--bootstrap", type=int, help="override analysis.bootstrap")


def _need(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        if getattr(args, name) is None:
            raise InputError(f"dyafdb analyze {args.product} needs --{name.replace('_', '-')}")


def run(args: argparse.Namespace) -> int:
    # imported here: `dyafdb` builds every command's parser, and pandas/scipy would slow them all
    from dyafdb.analysis import products as P
    from dyafdb.analysis.settings import from_config

    config = load_configs(args)
    settings = from_config(config, args.root)
    if args.bootstrap is not None:
        settings.bootstrap = args.bootstrap
    product = args.product
    if product == "versions":
        P.versions_product(config, args.out, args.config_out)
        return 0
    if product == "runs":
        if not args.measures and not args.archetype:
            raise InputError("dyafdb analyze runs needs --measures FILE(s) or --archetype")
        P.runs_product(args.measures, settings, args.out, config, args.root, args.archetype)
        return 0
    if product == "agreement":
        _need(args, "measures")
        P.agreement_product(args.measures, settings, args.out, args.html, args.human)
        return 0
    _need(args, "runs")
    runs = P.read_runs(args.runs)
    P.demo_aware(runs, settings)
    if product == "matrix":
        _need(args, "task")
        P.matrix_product(runs, settings, args.task, args.out, args.html)
    elif product == "turntaking":
        _need(args, "metric")
        P.turntaking_product(runs, settings, args.metric, args.out, args.html)
    elif product == "health":
        _need(args, "metric")
        P.health_product(runs, settings, args.metric, args.out, args.html)
    elif product == "health-models":
        P.health_models_product(runs, settings, args.out, args.html)
    elif product == "variance":
        P.variance_product(runs, settings, args.out, args.html)
    elif product == "timing":
        _need(args, "curves")
        P.timing_product(runs, settings, args.out, args.curves, args.html)
    elif product == "action-success":
        P.action_success_product(runs, settings, args.out, args.html)
    elif product == "windows":
        P.windows_product(runs, settings, args.out, args.html)
    elif product == "balance":
        P.balance_product(runs, settings, args.out, args.html)
    elif product == "profiles":
        P.profiles_product(runs, settings, args.out, args.html)
    elif product == "rating":
        _need(args, "effects")
        P.rating_product(runs, settings, args.out, args.effects, args.html)
    return 0
