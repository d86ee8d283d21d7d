"""Arguments and loading shared by several commands."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dyafdb.config import _merge, config_from_environment, validate_config
from dyafdb.errors import InputError
from dyafdb.schema_check import read_yaml


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", action="append", type=Path, default=None,
                        help="config YAML (repeatable; later files override earlier ones). Default: the files in $DYAFDB_CONFIG (set by the workflow for its jobs), else config/config.yaml")
    parser.add_argument("--override-json", default=None, help="JSON object merged over the config files (what snakemake --config passes on)")
    parser.add_argument("--root", type=Path, default=Path("."), help="project root that scenarios_dir is relative to")


_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def load_configs(args: argparse.Namespace) -> dict[str, Any]:
    """The config files of ``-c`` merged in order, then ``--override-json``, validated and filled in."""
    env_paths, env_overrides = config_from_environment()
    paths = args.config or env_paths or [Path("config/config.yaml")]
    if not args.config and env_paths and env_overrides is not None and getattr(args, "override_json", None) is None:
        args.override_json = env_overrides
    data: dict[str, Any] = {}
    for path in paths:
        data = _merge(data, _config_file(Path(path)))
    source = " + ".join(map(str, paths))
    if getattr(args, "override_json", None):  # an empty string overrides nothing, as before
        data = _merge(data, _override(args.override_json))
        source += " + --config overrides"
    return validate_config(data, source)


def _config_file(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not a config file; fix: pass a YAML file with -c "
                         f"(e.g. -c {path / 'config.yaml'})")
    data = read_yaml(path)
    if data is None:  # an empty file overrides nothing
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: the config is a YAML {type(data).__name__}, not a mapping of keys; fix: write it as "
                         "`key: value` lines at the top level, as config/config.yaml is")
    return data


def _override(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        where = f" ({exc.msg} at column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise InputError(f"--override-json {text!r}: not valid JSON{where}; fix: pass one JSON object, "
                         "e.g. --override-json '{\"results_dir\": \"results-b\"}'") from None
    if not isinstance(data, dict):
        raise InputError(f"--override-json {text!r}: {_JSON_TYPES.get(type(data), type(data).__name__)}, not a JSON object; "
                         "fix: pass one object of config keys, e.g. --override-json '{\"results_dir\": \"results-b\"}'")
    return data
