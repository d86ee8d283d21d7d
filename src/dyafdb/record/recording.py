"""The recording: what one conversation leaves on disk, and nothing else.

``<dir>/audio.wav``  stereo float32 at 24 kHz; channel 0 is side a, channel 1 is side b.
``<dir>/text.jsonl`` one line per text token: {"channel": "a"|"b", "tick": int, "time": s, "text": str}.
``<dir>/meta.json``  models, adapter versions, seeds, voices, sampling, lead-in, end reason, ticks,
                     wall time, and which channel is which side and model.

Files are written under a hidden partial folder and renamed into place with meta.json last, so a
recording whose meta.json exists is complete; a killed job leaves nothing that looks finished.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE, tick_to_seconds
from dyafdb.errors import InputError

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


def write_recording(rec: Recording, directory: Path) -> None:
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    for stale in directory.parent.glob(f".partial-{directory.name}-*"):  # left by a killed attempt
        shutil.rmtree(stale, ignore_errors=True)
    partial = directory.parent / f".partial-{directory.name}-{os.getpid()}"
    partial.mkdir(parents=True)
    with sf.SoundFile(partial / "audio.wav", "w", SAMPLE_RATE, 2, subtype="FLOAT", format="WAV") as fh:
        # libsndfile stamps float WAVs with a PEAK chunk holding the wall-clock time; switching it off
        # (SFC_SET_ADD_PEAK_CHUNK) makes the same conversation give byte-identical files.
        sf._snd.sf_command(fh._file, 0x1050, sf._ffi.NULL, 0)
        fh.write(rec.audio.T)
    with open(partial / "text.jsonl", "w") as fh:
        for token in rec.tokens:
            fh.write(json.dumps(token.to_json(), ensure_ascii=False) + "\n")
    meta = {"format": FORMAT, **rec.meta, "complete": True}
    with open(partial / "meta.json", "w") as fh:
        json.dump(meta, fh, indent=2, ensure_ascii=False)
    directory.mkdir(parents=True, exist_ok=True)
    # A stale meta.json from an earlier attempt must go first so the folder never pairs new audio with old meta.
    (directory / "meta.json").unlink(missing_ok=True)
    for name in FILES:  # meta.json last: its presence means "complete"
        os.replace(partial / name, directory / name)
    partial.rmdir()


def is_complete(directory: Path) -> bool:
    meta = Path(directory) / "meta.json"
    if not meta.exists():
        return False
    try:
        return bool(json.loads(meta.read_text()).get("complete"))
    except (json.JSONDecodeError, OSError):
        return False


def read_meta(directory: Path) -> dict[str, Any]:
    path = Path(directory) / "meta.json"
    if not is_complete(directory):
        raise InputError(f"{path}: recording is missing or incomplete; record it again (`dyafdb record`)")
    return json.loads(path.read_text())


def read_recording(directory: Path) -> Recording:
    directory = Path(directory)
    meta = read_meta(directory)
    audio, rate = sf.read(directory / "audio.wav", dtype="float32", always_2d=True)
    if rate != SAMPLE_RATE or audio.shape[1] != 2:
        raise InputError(f"{directory / 'audio.wav'}: expected stereo {SAMPLE_RATE} Hz, got {audio.shape[1]} channels at {rate} Hz")
    tokens = []
    with open(directory / "text.jsonl") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                tokens.append(Token(channel=d["channel"], tick=int(d["tick"]), text=d["text"]))
            except (json.JSONDecodeError, KeyError, ValueError) as exc:
                raise InputError(f"{directory / 'text.jsonl'}: line {n} is not a token record ({exc}); re-record the conversation") from None
    return Recording(audio=np.ascontiguousarray(audio.T), tokens=tokens, meta=meta)
