"""On-disk reply cache: a rerun (or a rerun after one prompt changed) asks nothing twice.

The key is a SHA-256 over the judge's identity (backend, endpoint, model id) and the exact
request (messages, which contain the prompt and the transcript; reply cap; temperature; grammar).
One JSON file per reply under ``<cache_dir>/<key[:2]>/<key>.json``, written atomically, so
concurrent jobs can share a cache. Nothing secret is in a request body, so nothing secret is cached.
Only replies the client parsed are put here (a malformed one raises before); an entry that is not
a reply (edited, truncated) counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dyafdb.fileio import write_json_atomic


def cache_key(identity: str, body: dict[str, Any]) -> str:
    blob = json.dumps({"judge": identity, "request": body}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ReplyCache:
    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached reply, or None when there is none or the file is not a reply (asked again)."""
        try:
            hit = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (FileNotFoundError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        return hit if isinstance(hit, dict) and isinstance(hit.get("text"), str) else None

    def put(self, key: str, reply: dict[str, Any]) -> None:
        write_json_atomic(self._path(key), reply, indent=None)
