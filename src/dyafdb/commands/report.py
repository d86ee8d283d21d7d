"""Assemble the analysis tables and figures into one self-contained HTML report.

``snakemake --report report.html`` makes Snakemake's own report from the same outputs and captions;
this command is the report the workflow itself ends in, so the main command leaves one file to open.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "report"
HELP = "one HTML page with every analysis table and figure, their captions, the config and versions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--tables", type=Path, nargs="*", default=[], help="rendered tables (.html), in order")
    parser.add_argument("--figures", type=Path, nargs="*", default=[], help="figures (.png), in order")
    parser.add_argument("--captions", type=Path, default=Path("workflow/report"), help="folder of <name>.rst captions")
    parser.add_argument("--config-file", type=Path, help="the merged config to show")
    parser.add_argument("--versions", type=Path, help="versions TSV to show")
    parser.add_argument("--title", default="DyaFDB report")
    parser.add_argument("--out", type=Path, required=True)


def run(args: argparse.Namespace) -> int:
    from dyafdb.analysis.report import build_report
    from dyafdb.analysis.settings import from_config

    config = load_configs(args)
    settings = from_config(config, args.root)
    captions = args.captions if args.captions and args.captions.is_dir() else None
    build_report(args.tables, args.figures, settings, args.out, captions, args.config_file, args.versions, args.title,
                 config=config)
    print(args.out)
    return 0
