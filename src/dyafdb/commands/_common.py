"""Arguments and loading shared by several commands."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dyafdb.config import _merge, validate_config
from dyafdb.schema_check import read_yaml


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", action="append", type=Path, default=None,
                        help="config YAML (repeatable; later files override earlier ones). Default: config/config.yaml")
    parser.add_argument("--override-json", default=None, help="JSON object merged over the config files (what snakemake --config passes on)")
    parser.add_argument("--root", type=Path, default=Path("."), help="project root that scenarios_dir is relative to")


def load_configs(args: argparse.Namespace) -> dict[str, Any]:
    paths = args.config or [Path("config/config.yaml")]
    data: dict[str, Any] = {}
    for path in paths:
        data = _merge(data, read_yaml(path) or {})
    source = " + ".join(map(str, paths))
    if getattr(args, "override_json", None):
        data = _merge(data, json.loads(args.override_json))
        source += " + --config overrides"
    return validate_config(data, source)
