"""A run to compare or bundle: a results folder (with its run record) or a bundle, opened alike."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dyafdb.analysis.bundles import DESIGN, MEASURES, RESULTS_DIR, Bundle, design_scenarios, fingerprint
from dyafdb.analysis.io import read_measures
from dyafdb.config import RUN_RECORD, _merge, read_run_record, validate_config
from dyafdb.errors import InputError
from dyafdb.paths import Results, results_of
from dyafdb.schema_check import read_yaml


def folder_config(folder: Path) -> tuple[dict[str, Any], Path]:
    """The validated config and project root a results folder was made with (its run.json)."""
    record = read_run_record(folder)
    if record is None:
        raise InputError(f"{Path(folder) / RUN_RECORD}: no run record, so the config this run was made with is not "
                         "known; fix: pass a results folder the workflow wrote (it writes run.json when it starts), "
                         "or a bundle")
    data: dict[str, Any] = {}
    for path in record["config_files"]:
        doc = read_yaml(Path(path))
        data = _merge(data, doc or {})
    if record.get("overrides"):
        data = _merge(data, record["overrides"])
    config = validate_config(data, " + ".join(record["config_files"]))
    return config, Path(record["root"])


@dataclass
class Source:
    """What compare and bundle read from one run."""

    name: str  # as given on the command line
    kind: str  # "folder" or "bundle"
    config: dict[str, Any]
    root: Path  # the project root: scenarios_dir and prompts resolve under it
    results: Results
    fingerprint: dict[str, dict[str, str]]
    doc: dict[str, Any] = field(default_factory=dict)  # a bundle's results.json
    _tmp: Any = None

    @property
    def measures_path(self) -> Path:
        return Path(self.results.measures_table)

    def measures(self) -> pd.DataFrame:
        return read_measures(self.measures_path)

    @property
    def site_index(self) -> Path | None:
        """The viewer's index when this run has a site (a bundle has none)."""
        if self.kind != "folder":
            return None
        from dyafdb.analysis.settings import site_dir

        index = site_dir(self.config, self.root) / "index.html"
        return index if index.exists() else None

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def open_source(path: Path | str) -> Source:
    """A results folder (its run.json names the config) or a bundle file (unpacked to a temporary folder)."""
    path = Path(path)
    if path.is_dir():
        config, root = folder_config(path)
        results = Results(str(path))
        design = Path(results.design)
        scenarios = design_scenarios(design.read_text(encoding="utf-8")) if design.exists() else {}
        return Source(str(path), "folder", config, root, results, fingerprint(config, root, scenarios))
    if not path.exists():
        raise InputError(f"{path}: neither a results folder nor a bundle file; fix: pass a results folder "
                         "(e.g. results/demo) or an archive `dyafdb bundle` wrote")
    bundle = Bundle(path)
    doc = bundle.results()
    tmp = tempfile.TemporaryDirectory(prefix="dyafdb-bundle-")
    root = bundle.extract(Path(tmp.name))
    config = validate_config(doc["config"], f"{path}: results.json config")
    return Source(str(path), "bundle", config, root, Results(str(root / RESULTS_DIR)), doc.get("fingerprint") or {},
                  doc=doc, _tmp=tmp)


def bundle_design(bundle: Bundle) -> dict[str, str]:
    return design_scenarios(bundle.text(DESIGN)) if bundle.has(DESIGN) else {}


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not readable JSON ({exc}); fix: write it again") from None


__all__ = ["Source", "open_source", "folder_config", "results_of", "MEASURES", "bundle_design", "read_json"]
