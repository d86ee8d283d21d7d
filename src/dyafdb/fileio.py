"""The one atomic writer every stage uses: temporary name, then rename.

A job killed mid-write leaves only a hidden temporary file, never a truncated output that
Snakemake (or a reader) would take for complete.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

from dyafdb.errors import InputError


_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path | str, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp)`` on a fresh hidden file beside ``path``, then rename it into place.

    The temporary name is unique per call (mkstemp), so threads or processes writing the same
    output never share one; a failure removes it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path | str, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    write_atomic(path, lambda tmp: tmp.write_bytes(data))


def write_json_atomic(path: Path | str, doc: Any, indent: int | None = 1) -> None:
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


def read_jsonl(path: Path, fix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line; a line that is not a JSON object (one cut off by a
    killed writer, say) is an InputError naming the file, the line and ``fix``."""
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"{path}: line {n} is not a complete JSON record ({exc.args[0]}; cut off?); "
                                     f"{fix}") from None
                if not isinstance(rec, dict):
                    raise InputError(f"{path}: line {n} is not a JSON object; {fix}")
                yield n, rec
    except FileNotFoundError:
        raise InputError(f"{path}: not found; {fix}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); {fix}") from None
