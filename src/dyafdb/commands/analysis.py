"""The analysis: tables from the measures, figures from the tables, and the report.

  dyafdb analysis <product> --out T.tsv [--html T.html] ...   one table (runs, matrix, turntaking, variance, ...)
  dyafdb analysis figure <name> --input T.tsv ... --out-prefix F   one figure, in every configured format
  dyafdb analysis report --tables ... --figures ... --out report.html   the self-contained HTML report
  dyafdb analysis variance-cells CELLS.tsv   eta-squared of a table of cell means (Appendix C), printed as JSON

``runs`` turns measures.tsv into the per-run table every other product reads; ``agreement`` reads the
measures themselves (it needs every judge). See docs/analysis.md for each product.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.errors import InputError

NAME = "analysis"
HELP = "analysis tables (runs, matrix, turntaking, variance, ...), figures, the report, and variance-cells"

PRODUCTS = ("runs", "matrix", "turntaking", "health", "health-models", "variance", "timing", "action-success", "windows", "balance", "agreement",
            "profiles", "rating", "versions")
FIGURES = ("variance", "matrices", "timing", "action_success", "windows", "balance", "leaderboard", "text_pairing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="<product>|figure|report|variance-cells")
    sub.required = True
    for product in PRODUCTS:
        _product_arguments(sub.add_parser(product, help=f"the {product} table"))
    _figure_arguments(sub.add_parser("figure", help="draw a figure from its analysis table(s)"))
    _report_arguments(sub.add_parser("report", help="one HTML page with every table and figure, captions, config, versions"))
    _variance_cells_arguments(sub.add_parser("variance-cells", help="eta-squared of model, partner, model x partner "
                                             "(and task) for a table of cell means"))


def run(args: argparse.Namespace) -> int:
    if args.action == "figure":
        return _figure(args)
    if args.action == "report":
        return _report(args)
    if args.action == "variance-cells":
        return _variance_cells(args)
    return _product(args)


def _product_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--measures", type=Path, nargs="+", help="measures table(s) (runs, agreement)")
    parser.add_argument("--runs", type=Path, nargs="+", help="per-run table(s) written by `dyafdb analysis runs`")
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



def _figure_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=FIGURES)
    add_config_argument(parser)
    parser.add_argument("--input", type=Path, nargs="+", required=True,
                        help="the table(s) it draws: timing takes summary then curves; matrices takes any number of matrix TSVs")
    parser.add_argument("--out-prefix", type=Path, required=True, help="written as <prefix>.png, <prefix>.pdf, ...")



def _report_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--tables", type=Path, nargs="*", default=[], help="rendered tables (.html), in order")
    parser.add_argument("--figures", type=Path, nargs="*", default=[], help="figures (.png), in order")
    parser.add_argument("--captions", type=Path, default=Path("workflow/report"), help="folder of <name>.rst captions")
    parser.add_argument("--config-file", type=Path, help="the merged config to show")
    parser.add_argument("--versions", type=Path, help="versions TSV to show")
    parser.add_argument("--title", default="DyaFDB report")
    parser.add_argument("--out", type=Path, required=True)



def _variance_cells_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cells", type=Path, help="TSV/CSV with columns model, partner, value[, task]")
    parser.add_argument("--cross-play-only", action="store_true", help="leave out the cells where model = partner")
    parser.add_argument("--digits", type=int, default=6, help="round the printed terms (default 6)")



def _need(args: argparse.Namespace, *names: str) -> None:
    for name in names:
        if getattr(args, name) is None:
            raise InputError(f"dyafdb analysis {args.action} needs --{name.replace('_', '-')}")



def _product(args: argparse.Namespace) -> int:
    # imported here: `dyafdb` builds every command's parser, and pandas/scipy would slow them all
    from dyafdb.analysis import products as P
    from dyafdb.analysis.settings import from_config

    config = load_configs(args)
    settings = from_config(config, args.root)
    if args.bootstrap is not None:
        settings.bootstrap = args.bootstrap
    product = args.action
    if product == "versions":
        P.versions_product(config, args.out, args.config_out)
        return 0
    if product == "runs":
        if not args.measures and not args.archetype:
            raise InputError("dyafdb analysis runs needs --measures FILE(s) or --archetype")
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


def _figure(args: argparse.Namespace) -> int:
    # imported here: matplotlib would slow every other dyafdb command down
    from dyafdb.analysis import figures as F
    from dyafdb.analysis.io import read_tsv
    from dyafdb.analysis.settings import from_config

    settings = from_config(load_configs(args), args.root)
    tables = [read_tsv(p) for p in args.input]
    try:
        fig = F.draw(args.name, args.input, tables, settings)
    except KeyError as exc:
        raise InputError(f"{', '.join(map(str, args.input))}: not the table(s) figure {args.name} draws (no column {exc}); "
                         "pass the TSV its analysis rule writes (docs/analysis.md)") from None
    for path in F.save(fig, args.out_prefix, settings):
        print(path)
    return 0


def _report(args: argparse.Namespace) -> int:
    from dyafdb.analysis.report import build_report
    from dyafdb.analysis.settings import from_config

    config = load_configs(args)
    settings = from_config(config, args.root)
    captions = args.captions if args.captions and args.captions.is_dir() else None
    build_report(args.tables, args.figures, settings, args.out, captions, args.config_file, args.versions, args.title,
                 config=config)
    print(args.out)
    return 0


def _variance_cells(args: argparse.Namespace) -> int:
    import pandas as pd

    from dyafdb.analysis.io import read_delimited
    from dyafdb.analysis.variance import decompose_cells, decompose_note

    path: Path = args.cells
    if not path.exists():
        raise InputError(f"{path}: file not found")
    sep = "," if path.suffix.lower() == ".csv" else "\t"
    cells = read_delimited(path, "cells table", "one row per cell, columns model, partner, value[, task]", sep=sep,
                           dtype=str, keep_default_na=False)
    cells.columns = [c.strip().lower() for c in cells.columns]
    if args.cross_play_only and {"model", "partner"} <= set(cells.columns):
        cells = cells[cells["model"] != cells["partner"]]
    try:
        terms = decompose_cells(cells)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    # terms the cells cannot answer are null with the reason (never zeros): a constant table, or a
    # grid that cannot separate model from partner
    doc = {k: None if math.isnan(v) else round(v, args.digits) for k, v in terms.items()}
    note = decompose_note(cells)
    if note:
        doc["note"] = note
    print(json.dumps(doc, indent=2))
    return 0
