"""Something expensive built once per test run and shared by the pytest-xdist workers
(scripts/test.sh runs two): the first worker to ask builds it, under a lock in the run's common
temporary folder; a worker that asks meanwhile waits, then reads what was built."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Any, Callable


def shared_folder(tmp_path_factory: Any) -> Path:
    """The folder the workers of this run share: the base their own folders sit in (a later run has
    its own). Without workers, this process's own base folder."""
    base = Path(tmp_path_factory.getbasetemp())
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: Any, name: str, build: Callable[[Path], None]) -> Path:
    """``shared/<name>``, made by ``build(folder)`` once per run; a build that failed half way (no
    done mark) is thrown away and made again by the next worker that asks."""
    shared = shared_folder(tmp_path_factory)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            build(folder)
            done.write_text("built\n")
    return folder
