"""Audio next to the pages, and the waveform peaks the timeline draws.

A recording's ``audio.wav`` is float32 (11.5 MB a minute): too big to ship and not what a browser
should stream. Each conversation gets one stereo file in a format Chromium plays offline (channel
0 = side a on the left, as recorded) under ``<site>/media/<tt>/<key>.<ext>``, where ``key`` is a
salted hash of the conversation id (the salt is the site's secret, kept outside it) and ``tt`` the
key's first two characters (:mod:`dyafdb.viewer.layout`): the blind annotation pages play the same
file, and a model name must not appear in their DOM, file and folder names included.

The peaks (the largest absolute sample of each bin, ``peaks_per_s`` bins a second, both channels on
one scale, one byte each, base64) are kept in ``<tt>/<key>.json`` beside the audio together with the
size and mtime of the recording they came from, so a rebuild of an unchanged site reads no audio.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from dyafdb.clock import SAMPLE_RATE
from dyafdb.fileio import write_atomic, write_json_atomic
from dyafdb.viewer.layout import media_name

# name -> (extension, libsndfile format, subtype, MIME type); all play in Chromium from file://.
FORMATS: dict[str, tuple[str, str, str, str]] = {
    "vorbis": (".ogg", "OGG", "VORBIS", "audio/ogg"),
    "flac": (".flac", "FLAC", "PCM_16", "audio/flac"),
    "wav": (".wav", "WAV", "PCM_16", "audio/wav"),
}
# /2: Media.file carries the token-prefix sub-folder
CACHE_FORMAT = "dyafdb-viewer-media/2"


def media_key(conversation_id: str, salt: str) -> str:
    """A name for a conversation's media that says nothing about it: salted with the site's secret
    (viewer.study), so nobody can hash the ids of a design and match the files."""
    import hmac

    return hmac.new(bytes.fromhex(salt), f"media\x1f{conversation_id}".encode("utf-8"), hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True)
class Media:
    file: str  # path under <site>/media/: <tt>/<key><ext> (viewer.layout.media_name)
    mime: str
    duration_s: float
    peaks_per_s: int
    bin_s: float  # seconds per peak bin (1 / peaks_per_s, up to rounding to whole samples)
    peaks: dict[str, str]  # side -> base64 of one byte (0..255) per bin

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "mime": self.mime, "duration_s": self.duration_s,
                "peaks_per_s": self.peaks_per_s, "bin_s": self.bin_s, "peaks": self.peaks}


def bin_samples(peaks_per_s: int) -> int:
    return max(1, SAMPLE_RATE // peaks_per_s)


def compute_peaks(audio: np.ndarray, peaks_per_s: int) -> dict[str, str]:
    """Per-bin absolute peaks of a ``(2, samples)`` recording, scaled together to 0..255.

    The scale is the 99.5th percentile of all bins rather than the maximum, so one click does not
    flatten the whole conversation; louder bins are clipped at 255.
    """
    size = bin_samples(peaks_per_s)
    n_bins = -(-audio.shape[1] // size)
    padded = np.zeros((2, n_bins * size), dtype=np.float32)
    padded[:, : audio.shape[1]] = np.abs(audio)
    peaks = padded.reshape(2, n_bins, size).max(axis=2)
    ref = float(np.quantile(peaks, 0.995)) if peaks.size else 0.0
    ref = max(ref, 1e-4)
    scaled = np.clip(np.rint(peaks / ref * 255.0), 0, 255).astype(np.uint8)
    return {side: base64.b64encode(scaled[i].tobytes()).decode("ascii") for i, side in enumerate(("a", "b"))}


def _signature(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _cached(cache: Path, audio_out: Path, signature: dict[str, int], fmt: str, peaks_per_s: int) -> Media | None:
    if not audio_out.exists():
        return None
    try:
        doc = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if (doc.get("format") != CACHE_FORMAT or doc.get("source") != signature or doc.get("audio") != fmt
            or doc.get("media", {}).get("peaks_per_s") != peaks_per_s):
        return None
    return Media(**doc["media"])


def prepare_media(recording_dir: Path, media_dir: Path, key: str, fmt: str, peaks_per_s: int) -> Media:
    """The site's copy of one recording's audio and its peaks (reused when the recording is unchanged)."""
    ext, container, subtype, mime = FORMATS[fmt]
    source = Path(recording_dir) / "audio.wav"
    audio_out = media_dir / media_name(key, ext)
    cache = media_dir / media_name(key, ".json")
    signature = _signature(source)
    hit = _cached(cache, audio_out, signature, fmt, peaks_per_s)
    if hit is not None:
        return hit
    data, rate = sf.read(source, dtype="float32", always_2d=True)
    audio_out.parent.mkdir(parents=True, exist_ok=True)
    # Encoders clip at full scale anyway; doing it here keeps 16-bit PCM from wrapping around.
    write_atomic(audio_out, lambda tmp: sf.write(tmp, np.clip(data, -1.0, 1.0), rate, format=container, subtype=subtype))
    media = Media(file=media_name(key, ext), mime=mime, duration_s=round(data.shape[0] / rate, 3), peaks_per_s=peaks_per_s,
                  bin_s=bin_samples(peaks_per_s) / rate, peaks=compute_peaks(np.ascontiguousarray(data.T), peaks_per_s))
    write_json_atomic(cache, {"format": CACHE_FORMAT, "source": signature, "audio": fmt, "media": media.to_json()},
                      indent=None)
    return media
