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
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import soundfile as sf

from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE, tick_to_seconds
from dyafdb.errors import InputError
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


def staging_dir(directory: Path) -> Path:
    """A fresh hidden folder beside ``directory`` to build its replacement in.

    Leftovers of killed attempts go first; a recording that a killed :func:`publish` left set aside
    is put back, so what was complete before stays complete.
    """
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    for old in _siblings(directory, ".replaced"):
        if not directory.exists() and is_complete(old):
            os.rename(old, directory)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for stale in _siblings(directory, ".partial"):
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


def publish(staged: Path, directory: Path) -> None:
    """Put the folder ``staged`` in the place of ``directory`` in one step (see the module doc)."""
    staged, directory = Path(staged), Path(directory)
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
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                    if not isinstance(d, dict):
                        raise ValueError("not a JSON object")
                    channel, tick, text = d["channel"], d["tick"], d["text"]
                    if not isinstance(text, str):
                        raise ValueError(f"field text = {text!r} is not a string")
                    if not isinstance(channel, str):
                        raise ValueError(f"field channel = {channel!r} is not a string")
                    if isinstance(tick, bool) or not isinstance(tick, int):
                        raise ValueError(f"field tick = {tick!r} is not an integer")
                except KeyError as exc:
                    raise InputError(f"{path}: line {n} lacks field {exc.args[0]!r}; {fix}") from None
                except ValueError as exc:  # JSONDecodeError included
                    raise InputError(f"{path}: line {n} is not a token record ({exc}); {fix}") from None
                tokens.append(Token(channel=channel, tick=tick, text=text))
    except FileNotFoundError:
        raise InputError(f"{path}: text channel file not found; {fix}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); {fix}") from None
    return tokens


def read_recording(directory: Path) -> Recording:
    """The recording's three files, each checked to be readable (:mod:`dyafdb.score.check` then
    checks them against each other)."""
    directory = Path(directory)
    meta = read_meta(directory)
    audio = _read_audio(directory / "audio.wav")
    return Recording(audio=audio, tokens=_read_tokens(directory / "text.jsonl"), meta=meta)
