"""The errors every stage raises; the CLI turns them into one-line messages and exit codes."""

from __future__ import annotations

import errno
import io
import re
import signal
import sys


class InputError(ValueError):
    """Bad user input (config, scenario, design row). The message names the file, the field and the fix."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by the CLI's handler.

    A KeyboardInterrupt, so that everything that already stops cleanly on Ctrl-C (context managers
    closing workers, ``except Exception`` blocks that must not swallow it, asyncio's runner) stops
    the same way on ``kill`` or a cluster's time limit.
    """

    signal = signal.SIGTERM


def fault_path(exc: BaseException) -> str | None:
    """The file an operating-system failure concerns.

    The exception's own ``filename`` where the call that failed named one; else the innermost open
    file found in the traceback's frames (a ``soundfile.SoundFile``, a Python file object): a write
    that fails on a full disk reports ENOSPC from write(2) or libsndfile's "System error." without
    any name, but the frame that wrote still holds the open file.
    """
    name = getattr(exc, "filename", None)
    if isinstance(name, (str, bytes)) and name:
        return name if isinstance(name, str) else name.decode(errors="replace")
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        found = [_open_file_name(v) for v in list(frame.f_locals.values())]
        writing = [n for n, w in found if n and w]
        reading = [n for n, w in found if n and not w]
        if writing or reading:
            return _final_name((writing or reading)[0])
    return None


# dyafdb.fileio.write_atomic writes ``<dir>/.<name>.<random>.tmp`` (mkstemp) and renames it into place
_ATOMIC_TMP = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]+\.tmp$")


def _final_name(path: str) -> str:
    """The file a temporary name of an atomic write stands for: the name a user knows."""
    head, _, tail = path.rpartition("/")
    m = _ATOMIC_TMP.match(tail)
    return f"{head}/{m['name']}" if m and head else path


def _open_file_name(value: object) -> tuple[str | None, bool]:
    """(name, opened for writing) of an open file object, else (None, False)."""
    soundfile = sys.modules.get("soundfile")
    if soundfile is not None and isinstance(value, soundfile.SoundFile):
        name = value.name
        return (name if isinstance(name, str) else None), "r" != getattr(value, "mode", "r")
    if isinstance(value, io.IOBase):
        try:
            name = value.name
            writable = not value.closed and value.writable()
        except (AttributeError, ValueError, OSError):
            name, writable = getattr(value, "name", None), True
        if isinstance(name, str) and not name.startswith("<"):
            return name, bool(writable)
    return None, False


# errno -> what to do about it; a path in the message says where
_FIXES = {
    errno.ENOSPC: "free space on that disk (or set results_dir to a larger one)",
    errno.EDQUOT: "free space within your disk quota (or set results_dir to a disk with room)",
    errno.EFBIG: "raise the file-size limit (ulimit -f) or free space on that disk",
    errno.EROFS: "the file system is read-only: set results_dir (or --out) to a folder you can write",
    errno.EACCES: "make it writable for this user (chmod/chown) or set results_dir (or --out) to a folder you can write",
    errno.EPERM: "make it writable for this user (chmod/chown) or set results_dir (or --out) to a folder you can write",
    errno.ENOTDIR: "a part of that path is a file where a folder is needed: move the file aside or choose another path",
    errno.EEXIST: "a file is in the way where a folder is needed: move it aside or choose another path",
    errno.EISDIR: "a folder is in the way where a file is needed: move it aside or choose another path",
    errno.ENOENT: "create the missing folder or fix the path",
    errno.EMFILE: "raise the open-file limit (ulimit -n)",
    errno.ENFILE: "the system has too many files open: retry when the node is less busy",
    errno.ENOMEM: "give the job more memory (resources.mem_mb / SLURM --mem) or run fewer jobs at once",
    errno.EIO: "the disk reported an I/O error: check the disk (dmesg) or set results_dir to another one",
}
_DEFAULT_FIX = "check that the disk has room and the folder can be written"
RERUN = "then run the same command again: finished outputs are kept"


def describe_os_fault(exc: BaseException) -> str:
    """One line for an OSError, a soundfile error or a MemoryError: the path, what failed, the fix."""
    if isinstance(exc, MemoryError):
        return ("out of memory (MemoryError); fix: give the job more memory (resources.mem_mb / SLURM --mem), "
                f"run fewer jobs at once, or make the input smaller; {RERUN}")
    path = fault_path(exc)
    if isinstance(exc, OSError):
        code = exc.errno
        what = exc.strerror or str(exc) or type(exc).__name__
        if code in errno.errorcode:
            what += f" ({errno.errorcode[code]})"
        second = getattr(exc, "filename2", None)
        if second:
            path = f"{path} -> {second}"
        fix = _FIXES.get(code, _DEFAULT_FIX)
    else:  # libsndfile reports a failing write(2) as "System error." and loses errno
        what = f"libsndfile could not read or write the audio: {str(exc).strip() or type(exc).__name__}"
        fix = _DEFAULT_FIX
    where = f"{path}: " if path else ""
    return f"{where}{what}; fix: {fix}; {RERUN}"


def is_os_fault(exc: BaseException) -> bool:
    """An operating-system or environment failure: OSError, a soundfile error, MemoryError."""
    if isinstance(exc, (OSError, MemoryError)):
        return True
    soundfile = sys.modules.get("soundfile")
    return soundfile is not None and isinstance(exc, soundfile.SoundFileError)


def located(exc: BaseException) -> BaseException:
    """``exc`` as an OSError that carries its path, for an error about to cross a process boundary
    (a pool worker's traceback, which holds the open file, stays behind in the worker)."""
    if not is_os_fault(exc) or isinstance(exc, MemoryError):
        return exc
    path = fault_path(exc)
    if isinstance(exc, OSError):
        if exc.filename or path is None:
            return exc
        return type(exc)(exc.errno, exc.strerror or str(exc), path)
    return OSError(None, f"libsndfile could not read or write the audio: {exc}", path)
