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
from pathlib import Path

from dyafdb.analysis import registry
from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.declarations import declared
from dyafdb.score.health import METRICS as HEALTH_METRICS

NAME = "analysis"
HELP = "analysis tables (runs, matrix, turntaking, variance, ...), figures, the report, and variance-cells"

# from the @table / @figure declarations (read from source, so `dyafdb --help` loads no pandas)
PRODUCTS = tuple(registry.product_names())
FIGURES = tuple(registry.figure_kinds())
# the @metric declarations with a table (read from source: no numpy for `dyafdb --help`)
TURN_TAKING = tuple(name for name, d in declared("metric").items() if d.fields.get("table", True))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--add-bundle", action="append", type=Path, default=[], metavar="FILE",
                        help="a results bundle (`dyafdb bundle`) whose conversations join the tables, as a "
                             "config's analysis.bundles does (repeatable; refused when its scenarios or scoring "
                             "settings differ from this run's)")
    sub = parser.add_subparsers(dest="action", metavar="<product>|figure|report|variance-cells")
    sub.required = True
    for product in registry.product_names():
        title = registry.tables()[product].title
        _product_arguments(sub.add_parser(product, help=f"the {product} table" + (f": {title}" if title and "{" not in title else "")))
    _figure_arguments(sub.add_parser("figure", help="draw a figure from its analysis table(s)"))
    _report_arguments(sub.add_parser("report", help="one HTML page with every table and figure, captions, config, versions"))
    _variance_cells_arguments(sub.add_parser("variance-cells", help="eta-squared of model, partner, model x partner "
                                             "(and task) for a table of cell means"))


def run(args: argparse.Namespace) -> int:
    from dyafdb.analysis.pool import fresh_state

    # A workflow job's command line reaches this in a process that serves several analysis jobs
    # (dyafdb.cli hands it over; analysis.jobs_per_process): nothing an earlier job left reaches this one.
    fresh_state()
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
    parser.add_argument("--metric", help=f"turn-taking metric (turntaking): {', '.join(TURN_TAKING)}; "
                        f"audio-health measure (health): {', '.join(m.name for m in HEALTH_METRICS)}")
    parser.add_argument("--curves", type=Path, help="timing: the curves TSV")
    parser.add_argument("--effects", type=Path, help="rating: the additive-effects TSV")
    parser.add_argument("--human", type=Path, help="agreement: human labels CSV (overrides analysis.human_labels)")
    parser.add_argument("--config-out", type=Path, help="versions: also write the merged config here")
    parser.add_argument("--bootstrap", type=int, help="override analysis.bootstrap")



def _figure_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=registry.figure_kinds())
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



def _product(args: argparse.Namespace) -> int:
    # imported here: `dyafdb` builds every command's parser, and pandas/scipy would slow them all
    from dyafdb.analysis.products import compute_product

    inputs = {k: getattr(args, k) for k in ("measures", "runs", "archetype", "html", "task", "metric", "curves", "effects",
                                           "human", "config_out", "bootstrap")}
    compute_product(args.action, _config(args), args.root, args.out, **inputs)
    return 0


def _figure(args: argparse.Namespace) -> int:
    # imported here: matplotlib would slow every other dyafdb command down
    from dyafdb.analysis.figures import draw_files
    from dyafdb.analysis.settings import from_config

    for path in draw_files(args.name, args.input, from_config(_config(args), args.root), args.out_prefix):
        print(path)
    return 0


def _report(args: argparse.Namespace) -> int:
    from dyafdb.analysis.report import build_report
    from dyafdb.analysis.settings import from_config

    config = _config(args)
    settings = from_config(config, args.root)
    captions = args.captions if args.captions and args.captions.is_dir() else None
    build_report(args.tables, args.figures, settings, args.out, captions, args.config_file, args.versions, args.title,
                 config=config, root=args.root)
    print(args.out)
    return 0


def _config(args: argparse.Namespace) -> dict:
    """The config, with --add-bundle's bundles added to analysis.bundles and their models entered
    (labelled as from the bundle; dyafdb.analysis.bundles)."""
    from dyafdb.analysis.bundles import with_bundle_models

    config = load_configs(args)
    added = [str(Path(p).resolve()) for p in getattr(args, "add_bundle", None) or []]
    if added:
        section = dict(config.get("analysis") or {})
        section["bundles"] = list(dict.fromkeys([*(section.get("bundles") or []), *added]))
        config = {**config, "analysis": section}
    return with_bundle_models(config, args.root)


def _variance_cells(args: argparse.Namespace) -> int:
    from dyafdb.analysis.variance import decompose_file

    print(json.dumps(decompose_file(args.cells, args.cross_play_only, args.digits), indent=2))
    return 0
