"""Digests that say what an output was made from, so a stage can check what it reads by content.

Every output of the pipeline records the digests of its inputs (docs/formats.md, "Provenance"):
a recording those of its design row, its two models' config entries and its scenario file, and
a digest of its own audio and text; everything computed from a recording carries that recording
digest. A stage that reads an output compares those digests with what it was asked for, so a
copied, restored or hand-edited file is refused by what it holds, not trusted by where it lies.

A digest is 16 hex digits of SHA-256 over canonical JSON (sorted keys, no whitespace) or over
file bytes: short enough for a TSV column and a Snakemake param, long enough that two different
inputs of one campaign never share one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any, Iterable

from dyafdb import __version__

DIGEST_CHARS = 16


def digest_json(value: Any) -> str:
    """The digest of a JSON-able value: equal values give equal digests, whatever the key order."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def digest_files(paths: Iterable[Path | str], chunk: int = 1 << 20) -> str:
    """The digest of the files' bytes, in the order given (each file's length is hashed too, so
    moving bytes from one file to the next changes it)."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(0)
            h.update(f"{Path(path).name}:{size}\n".encode())
            while block := fh.read(chunk):
                h.update(block)
    return h.hexdigest()[:DIGEST_CHARS]


@functools.lru_cache(maxsize=None)
def code_version() -> dict[str, Any]:
    """This package's version and, when it runs from a git checkout, its commit (``+dirty`` when
    tracked files differ from it): which code made an output."""
    commit = None
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists():
        try:
            head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                  timeout=10)
            if head.returncode == 0:
                commit = head.stdout.strip()
                dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                       capture_output=True, text=True, timeout=10)
                if dirty.returncode == 0 and dirty.stdout.strip():
                    commit += "+dirty"
        except (OSError, subprocess.SubprocessError):
            commit = None
    return {"version": __version__, "commit": commit}
