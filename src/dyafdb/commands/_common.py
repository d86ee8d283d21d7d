"""Arguments and loading shared by several commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dyafdb.config import RUN_RECORD, _merge, config_from_environment, read_run_record, validate_config
from dyafdb.errors import InputError
from dyafdb.provenance import digest_json
from dyafdb.schema_check import read_yaml


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", action="append", type=Path, default=None,
                        help="config YAML (repeatable; later files override earlier ones). Default: the files in $DYAFDB_CONFIG (set by the workflow for its jobs), else config/config.yaml")
    parser.add_argument("--override-json", default=None, help="JSON object merged over the config files (what snakemake --config passes on)")
    parser.add_argument("--root", type=Path, default=Path("."), help="project root that scenarios_dir is relative to "
                        "(default: the current folder, or the one a run record names)")
    parser.add_argument("--results", type=Path, default=None, metavar="DIR",
                        help="a results folder whose recorded config to use (its run.json, written when the workflow "
                             "starts); default: the current folder when it holds a run.json")


_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def load_configs(args: argparse.Namespace) -> dict[str, Any]:
    """The config files of ``-c`` merged in order, then ``--override-json``, validated and filled in."""
    env_paths, env_overrides = config_from_environment()
    recorded = None if args.config or env_paths else _recorded_run(args)
    if recorded is not None:
        env_paths = [Path(p) for p in recorded["config_files"]]
        env_overrides = json.dumps(recorded["overrides"]) if recorded.get("overrides") else None
        if args.root == Path("."):
            args.root = Path(recorded["root"])
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
    config = validate_config(data, source)
    if recorded is not None and recorded.get("config_digest") not in (None, digest_json(config)):
        print(f"warning: {source}: the config files changed since {args.results or Path('.')}/{RUN_RECORD} recorded "
              "them; showing what they say now", file=sys.stderr)
    return config


def _recorded_run(args: argparse.Namespace) -> dict[str, Any] | None:
    """The run record of --results, or of the current folder when it is a results folder."""
    folder = getattr(args, "results", None)
    if folder is not None:
        recorded = read_run_record(folder)
        if recorded is None:
            raise InputError(f"{Path(folder) / RUN_RECORD}: no run record (the workflow writes it when a run starts); "
                             "fix: pass the run's config with -c")
        return recorded
    return read_run_record(Path("."))


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
