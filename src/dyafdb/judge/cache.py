"""On-disk reply cache: a rerun (or a rerun after one prompt changed) asks nothing twice.

The key is a SHA-256 over the judge's identity (backend, endpoint, model id) and the exact
request (messages, which contain the prompt and the transcript; reply cap; temperature; grammar).
One JSON file per reply under ``<cache_dir>/<key[:2]>/<key>.json``, written atomically, so
concurrent jobs can share a cache. Nothing secret is in a request body, so nothing secret is cached.
Only replies the client parsed are put here (a malformed one raises before); an entry that is not
a reply (edited, truncated) counts as a miss. Reply text is scrubbed of API keys where replies are
made (:class:`dyafdb.llm.Reply`), so nothing secret is cached even when a server quotes a key back.

Claims: two judge runs on one batch at once each found the cache empty and both paid for every
question. So a run claims a key before asking for it: an exclusive ``flock`` on
``<key>.claim`` beside the entry, held while the question is asked and dropped once the reply is
cached. A second run (or a second item with the same request in the same run: flock locks belong to
an open file, not to a process) finds the claim held and waits for the entry instead of paying
again. The kernel drops the lock when its holder dies however it ends (kill -9, OOM, a node lost
under NFS once its lease runs out), so a claim is stale exactly when its owner is gone and is taken
over at once; the file says which pid on which host holds it, for the waiting run's message.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass
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

    def claim_path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.claim"

    def try_claim(self, key: str) -> "Claim | None":
        """The claim on ``key`` if no live process holds it (a dead holder's is taken over), else None."""
        path = self.claim_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    return None
                raise
            # The holder before us unlinks the file as it lets go: a lock on that unlinked file
            # would claim nothing, so it counts only if the path still names the file we locked.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                         "since": time.time()}).encode())
                return Claim(path, fd)
            os.close(fd)

    def holder(self, key: str) -> str:
        """Who holds the claim on ``key``, as well as its file says (for messages)."""
        try:
            doc = json.loads(self.claim_path(key).read_text(encoding="utf-8"))
            return f"pid {int(doc['pid'])} on host {doc['host']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    @staticmethod
    def release(claim: "Claim") -> None:
        """Unlink, then unlock: a run that opens the path afterwards gets a new file and a free claim."""
        try:
            os.unlink(claim.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(claim.fd)


@dataclass(frozen=True)
class Claim:
    path: Path
    fd: int
