"""Atomic writes for the scoring stages: temporary name, then rename.

A job killed mid-write leaves only a hidden temporary file, never a truncated output that
Snakemake (or a reader) would take for complete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dyafdb.errors import InputError


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_text_atomic(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def write_json_atomic(path: Path, doc: Any, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(doc, ensure_ascii=False, indent=indent) + "\n")


def read_json(path: Path, what: str, fix: str) -> Any:
    """Load a JSON file; a missing or broken one stops with the path, what it is and how to fix it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found; {fix}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: {what} is not valid JSON ({exc}); {fix}") from None
