"""Loading and validating the suite config.

Validation runs before anything else so that a typo stops the run at once with the key, the bad
value and what is allowed, instead of surfacing hours later inside a cluster job.
"""

from __future__ import annotations

import copy
import os
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from dyafdb.declarations import declared_classes
from dyafdb.errors import InputError
from dyafdb.schema_check import fill_defaults, load_schema, read_yaml, validate



def config_schema() -> dict[str, Any]:
    """The config schema with the built-in adapter names filled in from their ``@adapter`` declarations."""
    schema = copy.deepcopy(load_schema("config"))
    # a source scan of dyafdb.agents (dyafdb.agents.registry reads the same): imports no model stack
    schema["$defs"]["model"]["properties"]["adapter"]["anyOf"][0]["enum"] = list(declared_classes("dyafdb.agents", "adapter"))
    return schema


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def section_schema_names() -> dict[str, str]:
    """Stage sections that ship their own schema: ``config-<section>.schema.yaml``."""
    names = {}
    for entry in resources.files("dyafdb").joinpath("schemas").iterdir():
        name = entry.name
        if name.startswith("config-") and name.endswith(".schema.yaml"):
            section = name[len("config-"):-len(".schema.yaml")]
            names[section] = name[: -len(".schema.yaml")]
    return names


def validate_config(config: dict[str, Any], source: str | Path) -> dict[str, Any]:
    """Validate a loaded config and fill defaults. Returns the merged config."""
    if not isinstance(config, dict):
        raise InputError(f"{source}: the config must be a mapping")
    schema = config_schema()
    validate(config, "config", source, schema)
    for section, name in section_schema_names().items():
        if section in config:
            validate(config[section], name, f"{source} (section {section})")
    # Defaults are written once, in the schemas; every stage reads them from the filled config.
    merged = fill_defaults(copy.deepcopy(config), schema)
    for section, name in section_schema_names().items():
        merged[section] = fill_defaults(merged.get(section) or {}, load_schema(name))
    _check_cross_references(merged, source)
    return merged


def _check_cross_references(config: dict[str, Any], source: str | Path) -> None:
    models = config["models"]
    for suite_name, suite in config["suites"].items():
        for model in suite["models"]:
            if model not in models:
                raise InputError(
                    f"{source}: suites.{suite_name}.models lists unknown model {model!r}; "
                    f"known models: {', '.join(sorted(models))} (add it under models: or fix the name)"
                )
        for model in suite.get("only_with") or []:
            if model not in suite["models"]:
                raise InputError(f"{source}: suites.{suite_name}.only_with names {model!r}, which is not in suites.{suite_name}.models; add it there")
        if "scenarios" in suite and "scenarios_per_archetype" in suite:
            raise InputError(f"{source}: suites.{suite_name} sets both scenarios and scenarios_per_archetype; keep one")


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    path = Path(path)
    data = read_yaml(path)
    if overrides:
        data = _merge(data or {}, overrides)
    return validate_config(data, path)


def _diff(base: Any, new: Any) -> Any:
    """The parts of ``new`` that differ from ``base`` (recursively for mappings); None if nothing does."""
    if isinstance(base, dict) and isinstance(new, dict):
        out = {}
        for key, value in new.items():
            if key not in base:
                out[key] = value
            else:
                sub = _diff(base[key], value)
                if sub is not None:
                    out[key] = sub
        return out or None
    return None if base == new else new


def config_overrides(paths: list[str], overrides: dict[str, Any]) -> dict[str, Any]:
    """What ``overrides`` changes relative to the merged config files (Snakemake repeats the files in it)."""
    base: dict[str, Any] = {}
    for path in paths:
        base = _merge(base, read_yaml(Path(path)) or {})
    return _diff(base, overrides) or {}


def float_section(cls: type, config: Mapping[str, Any], section: str) -> Any:
    """A frozen dataclass of float settings from config section ``section`` (already schema-checked);
    keys the section leaves out keep the dataclass defaults."""
    raw = dict(config.get(section) or {})
    return cls(**{k: float(v) for k, v in raw.items() if k in cls.__dataclass_fields__})


# How the workflow hands its config to every job without putting a path in a rule's params or
# shell command (Snakemake reruns a job when either changes, so a copied config or a moved checkout
# would re-record the whole suite): the Snakefile sets these, `dyafdb <stage>` reads them when no
# -c is given, and SLURM jobs inherit them (the executor submits with --export=ALL).
CONFIG_ENV = "DYAFDB_CONFIG"  # config files, os.pathsep-separated, merged in order
OVERRIDES_ENV = "DYAFDB_CONFIG_OVERRIDES"  # a JSON object merged over them (snakemake --config)


def config_from_environment() -> tuple[list[Path], str | None]:
    """The config files and overrides the workflow set for its jobs ([] and None outside one)."""
    paths = [Path(p) for p in os.environ.get(CONFIG_ENV, "").split(os.pathsep) if p]
    return paths, os.environ.get(OVERRIDES_ENV) or None


# A results folder remembers the config it was made with (<results_dir>/run.json, written when the
# workflow starts): `dyafdb status|summary|verify --results DIR`, or run inside that folder, read the
# same files, so a hint printed after the demo does not silently read config/config.yaml instead.
RUN_RECORD = "run.json"


def run_record(config_files: list[Path], overrides: Mapping[str, Any] | None, root: Path,
               config: Mapping[str, Any]) -> dict[str, Any]:
    from dyafdb.provenance import digest_json

    return {"config_files": [str(Path(p).resolve()) for p in config_files], "overrides": dict(overrides or {}),
            "root": str(Path(root).resolve()), "config_digest": digest_json(config)}


def read_run_record(folder: Path) -> dict[str, Any] | None:
    """The run record of a results folder, or None where it has none (or an unreadable one)."""
    import json

    try:
        doc = json.loads((Path(folder) / RUN_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("config_files"), list) and doc["config_files"]
    return doc if ok else None
