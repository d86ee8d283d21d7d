"""The recording: what one conversation leaves on disk, and nothing else.

``<dir>/audio.wav``  stereo float32 at 24 kHz; channel 0 is side a, channel 1 is side b.
``<dir>/text.jsonl`` one line per text token: {"channel": "a"|"b", "tick": int, "time": s, "text": str}.
``<dir>/meta.json``  models, adapter versions, seeds, voices, sampling, lead-in, end reason, ticks,
                     wall time, and which channel is which side and model.

A recording is replaced as a whole or not at all. Every file (and, for the garble watcher, its
``garble.json`` and ``rejected/`` attempts) is written into a hidden staging folder beside the
recording, which then takes the recording's place in one step (:func:`publish`: an atomic exchange
of the two folders on Linux, else two renames that the next attempt undoes if killed between them).
A killed or failed (re-)recording leaves the previous complete recording as it was, and never new
audio beside old text. meta.json carries ``complete: true`` and, when the watcher ran, its verdict,
so the one file Snakemake tracks stands for the whole folder.

One writer per recording at a time: whoever records a conversation holds ``.lock-<id>`` beside it
(:func:`recording_lock`, an flock, with the owner's pid, host, process start time and command
written inside). A second writer of the same id is refused with the first one named; a partial
(``.partial-<id>-<pid>``) or set-aside (``.replaced-<id>-<pid>``) folder is removed only once its
process is gone, so a hand run beside the workflow cannot delete a live recording's work.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import socket
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import soundfile as sf

from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE, tick_to_seconds
from dyafdb.errors import InputError
from dyafdb.fileio import read_jsonl
from dyafdb.provenance import digest_files

FORMAT = "dyafdb-recording/1"
FILES = ("audio.wav", "text.jsonl", "meta.json")
CHANNELS = ("a", "b")


@dataclass
class Token:
    channel: str
    tick: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"channel": self.channel, "tick": self.tick, "time": tick_to_seconds(self.tick), "text": self.text}


@dataclass
class Recording:
    audio: np.ndarray  # float32, shape (2, ticks * FRAME_SAMPLES)
    tokens: list[Token]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ticks(self) -> int:
        return self.audio.shape[1] // FRAME_SAMPLES

    def channel(self, side: str) -> np.ndarray:
        return self.audio[CHANNELS.index(side)]

    def tokens_of(self, side: str) -> list[Token]:
        return [t for t in self.tokens if t.channel == side]


def _siblings(directory: Path, kind: str) -> list[Path]:
    """``<kind>-<name>-<pid>`` folders beside ``directory`` (its own only, not those of a longer id)."""
    prefix = f"{kind}-{directory.name}-"
    return sorted(p for p in directory.parent.glob(prefix + "*") if p.name[len(prefix):].isdigit())


class RecordingBusy(InputError):
    """Another process records this conversation now (or its lock file says so)."""


_HOST = socket.gethostname()
# lock file -> its open descriptor, for the locks this process holds: taking one again is a no-op
_HELD: dict[str, int] = {}


def lock_path(directory: Path) -> Path:
    directory = Path(directory)
    return directory.parent / f".lock-{directory.name}"


def _proc_start(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (/proc/<pid>/stat field 22); None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])  # the name (field 2) may hold spaces and ')'
    except (OSError, ValueError, IndexError):
        return None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.path.isdir("/proc/self"):
        return os.path.exists(f"/proc/{pid}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_started_at(pid: int) -> float | None:
    """The wall-clock time ``pid`` started, or None where /proc cannot tell."""
    ticks = _proc_start(pid)
    if ticks is None:
        return None
    try:
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _owner_record() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": _HOST, "start": _proc_start(os.getpid()),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join([_program(), *sys.argv[1:]])[:300]}


def _program() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return "dyafdb" if name == "__main__.py" else name  # `python -m dyafdb`


def _read_owner(fd: int) -> dict[str, Any] | None:
    try:
        doc = json.loads(os.pread(fd, 65536, 0).decode("utf-8"))
    except (OSError, ValueError):
        return None  # empty (its owner is just writing it) or not ours
    return doc if isinstance(doc, dict) and isinstance(doc.get("pid"), int) else None


def _owner_alive(owner: Mapping[str, Any]) -> bool:
    """Whether the process a lock file names may still run. One on another host cannot be checked from
    here and counts as running; one here is gone when its pid is, or is now another process's (the
    start time differs)."""
    pid = owner["pid"]
    if owner.get("host") != _HOST:
        return True
    if pid == os.getpid():
        return False  # not in _HELD: an earlier process that had this pid
    start = _proc_start(pid)
    if start is None:
        return _pid_alive(pid) and not os.path.isdir("/proc/self")
    return owner.get("start") in (None, start)


def _busy(directory: Path, path: Path, owner: Mapping[str, Any] | None) -> RecordingBusy:
    where = f"{directory}: conversation {directory.name} is being recorded by"
    if owner is None:
        return RecordingBusy(f"{where} another process that has just taken its lock ({path}); wait for it to "
                             f"finish (`fuser {path}` names it)")
    pid, host = owner["pid"], owner.get("host")
    who = f"pid {pid} on host {host} since {owner.get('since')} ({owner.get('command') or 'command unknown'})"
    if host == _HOST:
        return RecordingBusy(f"{where} {who}; wait for it to finish, or stop it (kill {pid}) and record again "
                             "(its partial folder goes with the next record)")
    return RecordingBusy(f"{where} {who}; this host ({_HOST}) cannot check whether a process on {host} still "
                         f"runs: wait for it, or if that job is gone, delete {path} and record again")


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _flock(fd: int, mode: int) -> bool | None:
    """True once locked, None if another holds it, False where flock does not work (some network
    filesystems): then only the owner written in the file decides."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL):
            return False
        raise


def _acquire(directory: Path, path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            locked = _flock(fd, fcntl.LOCK_EX)
            if locked is None:
                raise _busy(directory, path, _read_owner(fd))
            if _same_file(fd, path):
                owner = _read_owner(fd)
                # here flock is the truth; a record on another host, or without a working flock, is all we have
                if owner is not None and _owner_alive(owner) and (owner.get("host") != _HOST or not locked):
                    raise _busy(directory, path, owner)
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps(_owner_record()) + "\n").encode("utf-8"), 0)
                os.fsync(fd)
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its owner removed the file between our open and flock: take the new one


def _release(fd: int, path: Path) -> None:
    try:
        if _same_file(fd, path):
            os.unlink(path)  # before unlocking, so a writer that opened it then retries on a fresh file
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def recording_lock(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s lock (``.lock-<id>`` beside it) for the whole record of one conversation,
    or raise :class:`RecordingBusy` naming the process that records it. Re-entrant in one process."""
    directory = Path(os.path.abspath(directory))
    path = lock_path(directory)
    if str(path) in _HELD:
        yield
        return
    fd = _acquire(directory, path)
    _HELD[str(path)] = fd
    try:
        yield
    finally:
        del _HELD[str(path)]
        _release(fd, path)


def _refuse_if_locked(directory: Path) -> None:
    """Refuse to touch ``directory``'s folders while another process holds its lock (for a writer that
    did not take the lock itself)."""
    directory = Path(os.path.abspath(directory))
    path = lock_path(directory)
    if str(path) in _HELD:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        locked = _flock(fd, fcntl.LOCK_SH)
        owner = _read_owner(fd)
        if locked is None or (owner is not None and _owner_alive(owner) and (owner.get("host") != _HOST or not locked)):
            raise _busy(directory, path, owner)
    finally:
        os.close(fd)


def lock_abandoned(path: Path) -> bool:
    """Whether a ``.lock-<id>`` file was left by a record whose process is gone (`dyafdb verify`)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        owner = _read_owner(fd)
    finally:
        os.close(fd)
    return owner is not None and not _owner_alive(owner)


def owner_gone(folder: Path) -> bool:
    """Whether the process of a ``.partial-<id>-<pid>`` or ``.replaced-<id>-<pid>`` folder has ended.

    A pid that runs again may be another process now: one that started after the folder was last
    written did not write it. Only this host's processes can be seen; the lock keeps another host's
    writer's folders safe (:func:`staging_dir` refuses while it holds the lock)."""
    folder = Path(folder)
    pid = int(folder.name.rsplit("-", 1)[1])
    if pid == os.getpid():
        return True  # this process stages a recording once at a time: an earlier process's, with our pid
    if not _pid_alive(pid):
        return True
    started = _proc_started_at(pid)
    try:
        written = folder.stat().st_mtime
    except FileNotFoundError:
        return False
    return started is not None and started > written + 1.0


def staging_dir(directory: Path) -> Path:
    """A fresh hidden folder beside ``directory`` to build its replacement in.

    Leftovers of killed attempts go first (those whose process is gone; a live one's are never
    touched); a recording that a killed :func:`publish` left set aside is put back, so what was
    complete before stays complete. Refused while another process holds the recording's lock.
    """
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    _refuse_if_locked(directory)
    directory = in_place(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    for old in _siblings(directory, ".replaced"):
        if not owner_gone(old):
            continue  # a live publish between its two renames
        if not directory.exists() and is_complete(old):
            os.rename(old, directory)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for stale in _siblings(directory, ".partial"):
        if owner_gone(stale):
            shutil.rmtree(stale, ignore_errors=True)
    staged = directory.parent / f".partial-{directory.name}-{os.getpid()}"
    staged.mkdir()
    return staged


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):  # e.g. some network filesystems
        return False
    raise OSError(err, f"cannot swap {a} into {b}: {os.strerror(err)}")


def in_place(directory: Path) -> Path:
    """Where a recording's folder really is: a recordings folder may be a symbolic link to another
    disk, and the new recording must replace the folder the link points to (staged beside it, on
    the same filesystem), not the link, so the link keeps pointing at the current recording."""
    directory = Path(directory)
    return Path(os.path.realpath(directory)) if directory.is_symlink() else directory


def publish(staged: Path, directory: Path) -> None:
    """Put the folder ``staged`` in the place of ``directory`` in one step (see the module doc)."""
    staged, directory = Path(staged), in_place(Path(directory))
    if not directory.exists():
        os.rename(staged, directory)
    elif _exchange(staged, directory):
        shutil.rmtree(staged)  # now the old recording
    else:
        aside = directory.parent / f".replaced-{directory.name}-{os.getpid()}"
        shutil.rmtree(aside, ignore_errors=True)
        os.rename(directory, aside)  # a kill right here is undone by the next staging_dir()
        os.rename(staged, directory)
        shutil.rmtree(aside, ignore_errors=True)


def write_files(rec: Recording, folder: Path, extra_meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """audio.wav, text.jsonl and meta.json (last) into ``folder``; returns the meta written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with sf.SoundFile(folder / "audio.wav", "w", SAMPLE_RATE, 2, subtype="FLOAT", format="WAV") as fh:
        # libsndfile stamps float WAVs with a PEAK chunk holding the wall-clock time; switching it off
        # (SFC_SET_ADD_PEAK_CHUNK) makes the same conversation give byte-identical files.
        sf._snd.sf_command(fh._file, 0x1050, sf._ffi.NULL, 0)
        fh.write(rec.audio.T)
    with open(folder / "text.jsonl", "w", encoding="utf-8") as fh:
        for token in rec.tokens:
            fh.write(json.dumps(token.to_json(), ensure_ascii=False) + "\n")
    meta = {**rec.meta, **(extra_meta or {})}
    # The digest of what was just written: everything computed from this recording carries it, so a
    # later stage can tell this recording from another one put in its place.
    meta["provenance"] = {**(meta.get("provenance") or {}), "recording": recording_digest(folder)}
    return write_meta(folder, meta)


def recording_digest(folder: Path) -> str:
    """The digest of a recording's audio and text (docs/formats.md, "Provenance")."""
    return digest_files([Path(folder) / "audio.wav", Path(folder) / "text.jsonl"])


def write_meta(folder: Path, meta: Mapping[str, Any]) -> dict[str, Any]:
    doc = {"format": FORMAT, **meta, "complete": True}
    with open(Path(folder) / "meta.json", "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=False)
    return doc


def write_recording(rec: Recording, directory: Path) -> None:
    """Replace the recording in ``directory`` by ``rec`` as a whole (or, if anything fails, not at all)."""
    staged = staging_dir(directory)
    try:
        write_files(rec, staged)
        publish(staged, directory)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _complete_meta(directory: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((Path(directory) / "meta.json").read_text(encoding="utf-8"))
    except (ValueError, OSError):  # missing; JSON and UTF-8 errors are ValueErrors
        return None
    return doc if isinstance(doc, dict) and doc.get("complete") is True else None


def is_complete(directory: Path) -> bool:
    return _complete_meta(directory) is not None


def read_meta(directory: Path) -> dict[str, Any]:
    meta = _complete_meta(directory)
    if meta is None:
        raise InputError(f"{Path(directory) / 'meta.json'}: recording is missing or incomplete; record it again "
                         "(`dyafdb record`)")
    return meta


def _read_audio(path: Path) -> np.ndarray:
    fix = "re-record the conversation (`dyafdb record`, or delete its meta.json and rerun Snakemake)"
    try:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
    except FileNotFoundError:
        raise InputError(f"{path}: audio file not found; {fix}") from None
    except (RuntimeError, sf.SoundFileError) as exc:  # libsndfile: cut header, not a WAV, ...
        raise InputError(f"{path}: not a readable WAV file ({exc}); {fix}") from None
    if rate != SAMPLE_RATE or audio.shape[1] != 2:
        raise InputError(f"{path}: expected stereo {SAMPLE_RATE} Hz, got {audio.shape[1]} channels at {rate} Hz; {fix}")
    return np.ascontiguousarray(audio.T)


def _read_tokens(path: Path) -> list[Token]:
    fix = "re-record the conversation (`dyafdb record`)"
    tokens = []
    for n, d in read_jsonl(path, fix):
        try:
            channel, tick, text = d["channel"], d["tick"], d["text"]
        except KeyError as exc:
            raise InputError(f"{path}: line {n} lacks field {exc.args[0]!r}; {fix}") from None
        for name, value, ok in (("text", text, isinstance(text, str)), ("channel", channel, isinstance(channel, str)),
                                 ("tick", tick, isinstance(tick, int) and not isinstance(tick, bool))):
            if not ok:
                kind = "an integer" if name == "tick" else "a string"
                raise InputError(f"{path}: line {n} is not a token record (field {name} = {value!r} is not {kind}); {fix}")
        tokens.append(Token(channel=channel, tick=tick, text=text))
    return tokens


def read_recording(directory: Path) -> Recording:
    """The recording's three files, each checked to be readable (:mod:`dyafdb.score.check` then
    checks them against each other)."""
    directory = Path(directory)
    meta = read_meta(directory)
    audio = _read_audio(directory / "audio.wav")
    return Recording(audio=audio, tokens=_read_tokens(directory / "text.jsonl"), meta=meta)
