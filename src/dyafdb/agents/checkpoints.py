"""Finding model weights on local disk; nothing here ever downloads.

A real model's params name a local folder (``checkpoint_dir``) and/or a hub id (``hf_repo``). The
hub id is looked up only in the local Hugging Face cache, with the hub switched to offline mode, so
a GPU node without network either finds the files or stops with a message saying what to download
and where to put it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from dyafdb.errors import InputError


def force_offline_hub() -> None:
    """Make huggingface_hub / transformers refuse network access for the rest of the process.

    Set before those libraries are imported (they read the variables at import time).
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def expand(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(str(path))))


def hf_cache_snapshot(repo: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    # read the cache location now, not at huggingface_hub's import (HF_HOME may be set later)
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(os.environ.get("HF_HOME") or "~/.cache/huggingface", "hub")
    try:
        return Path(snapshot_download(repo_id=repo, local_files_only=True, cache_dir=str(expand(cache))))
    except Exception:  # not cached (LocalEntryNotFoundError and friends differ across versions)
        return None


def download_hint(model: str, repo: str | None, target: Path | None, extra: str = "") -> str:
    lines = []
    if repo:
        where = f" --local-dir {target}" if target else ""
        lines.append(f"on a machine with network: `huggingface-cli download {repo}{where}`, then copy the folder here")
        if target:
            lines.append(f"and set models.{model}.params.checkpoint_dir to it (now {target})")
    if extra:
        lines.append(extra)
    lines.append("see docs/models.md")
    return "; ".join(lines)


def resolve_checkpoint(params: dict[str, Any], model: str, required: Iterable[str] = (), hint: str = "") -> Path:
    """The local folder holding ``required`` files: ``checkpoint_dir`` first, else the HF cache.

    Raises InputError naming the model, the paths tried, the missing files and the fix.
    """
    required = list(required)
    checkpoint_dir = params.get("checkpoint_dir")
    repo = params.get("hf_repo")
    tried: list[str] = []
    candidates: list[Path] = []
    if checkpoint_dir:
        candidates.append(expand(checkpoint_dir))
        tried.append(f"checkpoint_dir {expand(checkpoint_dir)}")
    if repo:
        force_offline_hub()
        cached = hf_cache_snapshot(str(repo))
        if cached is not None:
            candidates.append(cached)
        tried.append(f"hf_repo {repo} in the local Hugging Face cache ({os.environ.get('HF_HOME', '~/.cache/huggingface')})")
    if not tried:
        raise InputError(f"models.{model}.params: set checkpoint_dir (a local folder with the weights) or hf_repo; "
                         + download_hint(model, None, None, hint))
    missing_report = []
    for folder in candidates:
        if not folder.is_dir():
            missing_report.append(f"{folder} does not exist")
            continue
        missing = [f for f in required if not (folder / f).exists()]
        if not missing:
            return folder
        missing_report.append(f"{folder} lacks {', '.join(missing)}")
    found = "; ".join(missing_report) if missing_report else "nothing found"
    target = expand(checkpoint_dir) if checkpoint_dir else None
    raise InputError(f"model {model}: weights not found (tried {' and '.join(tried)}: {found}). "
                     + download_hint(model, str(repo) if repo else None, target, hint))


def resolve_file(value: str | None, base: Path, model: str, field: str, hint: str = "") -> Path:
    """A file named in params: absolute, or relative to the checkpoint folder; must exist."""
    if not value:
        raise InputError(f"models.{model}.params.{field} is required; {hint or 'see docs/models.md'}")
    path = expand(value)
    if not path.is_absolute():
        path = base / path
    if not path.exists():
        raise InputError(f"models.{model}.params.{field}: {path} does not exist; {hint or 'see docs/models.md'}")
    return path


def checkpoint_revision(folder: Path) -> str | None:
    """The hub commit a local checkpoint folder was downloaded at, where the folder says so.

    A hub-cache snapshot is named by its commit; ``huggingface-cli download --local-dir`` records the
    commit as the first line of ``.cache/huggingface/download/<file>.metadata``. A folder copied by
    hand carries neither, and its revision is unknown (None).
    """
    folder = Path(folder)
    if folder.parent.name == "snapshots" and len(folder.name) == 40:
        return folder.name
    meta_dir = folder / ".cache" / "huggingface" / "download"
    for name in ("config.json.metadata", *sorted(p.name for p in meta_dir.glob("*.metadata"))) if meta_dir.is_dir() else ():
        try:
            first = (meta_dir / name).read_text().splitlines()[0].strip()
        except (OSError, IndexError):
            continue
        if len(first) == 40 and all(c in "0123456789abcdef" for c in first):
            return first
    return None


def git_head(folder: Path) -> str | None:
    """The commit a git checkout is at (read from .git, no git binary needed), or None."""
    git = Path(folder) / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = head[5:]
            path = git / ref
            if path.exists():
                return path.read_text().strip()
            packed = (git / "packed-refs").read_text().splitlines() if (git / "packed-refs").exists() else []
            return next((line.split()[0] for line in packed if line.endswith(" " + ref)), None)
        return head
    except OSError:
        return None
