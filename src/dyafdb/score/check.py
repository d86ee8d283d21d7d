"""A recording checked against its own meta.json before anything is scored.

A truncated ``audio.wav`` (a copy cut short, a full disk), NaN or infinite samples, text tokens on
a channel that does not exist or stamped outside the recording's ticks, and a recording of a
garble-checked model that carries no garble verdict would all score with exit code 0 and numbers
that look right. Each stops here, before any output is written, with the file, the field and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE
from dyafdb.errors import InputError
from dyafdb.record.recording import CHANNELS, Recording


def rerecord_fix(directory: Path) -> str:
    return (f"record the conversation again (`dyafdb record --id {Path(directory).name}`; under Snakemake delete "
            f"{Path(directory) / 'meta.json'} and rerun)")


def check_recording(config: Mapping[str, Any], rec: Recording, directory: Path) -> None:
    """Raise :class:`InputError` unless the audio, tokens and meta of ``rec`` agree with each other."""
    directory = Path(directory)
    fix = rerecord_fix(directory)
    meta_path, wav, text = directory / "meta.json", directory / "audio.wav", directory / "text.jsonl"
    meta = rec.meta
    ticks = meta.get("ticks")
    if isinstance(ticks, bool) or not isinstance(ticks, int) or ticks < 0:
        raise InputError(f"{meta_path}: field ticks = {ticks!r} is not a whole number of ticks; {fix}")
    for key, want in (("sample_rate", SAMPLE_RATE), ("frame_samples", FRAME_SAMPLES)):
        if key in meta and meta[key] != want:
            raise InputError(f"{meta_path}: field {key} = {meta[key]!r}, but this version records at {want}; {fix}")
    samples = rec.audio.shape[1]
    if samples != ticks * FRAME_SAMPLES:
        raise InputError(f"{wav}: {samples} samples per channel ({samples / SAMPLE_RATE:.2f} s), but {meta_path} field "
                         f"ticks = {ticks} needs {ticks * FRAME_SAMPLES} ({ticks * FRAME_SAMPLES / SAMPLE_RATE:.2f} s): "
                         f"the audio is cut short or belongs to another recording; {fix}")
    bad = ~np.isfinite(rec.audio)
    if bad.any():
        channel, sample = (int(i[0]) for i in np.nonzero(bad))
        raise InputError(f"{wav}: channel {channel} (side {CHANNELS[channel]}) holds {int(bad.sum())} NaN or infinite "
                         f"samples, the first at {sample / SAMPLE_RATE:.3f} s; {fix}")
    for n, token in enumerate(rec.tokens, 1):
        if token.channel not in CHANNELS:
            raise InputError(f"{text}: token {n} has field channel = {token.channel!r}; a recording has channels "
                             f"{', '.join(map(repr, CHANNELS))}; {fix}")
        if not 0 <= token.tick < max(ticks, 1):
            raise InputError(f"{text}: token {n} has field tick = {token.tick}, outside the recording's ticks "
                             f"0..{ticks - 1} ({meta_path} field ticks = {ticks}); {fix}")
    _check_garble_verdict(config, meta, meta_path, fix)


def _check_garble_verdict(config: Mapping[str, Any], meta: Mapping[str, Any], meta_path: Path, fix: str) -> None:
    """A side whose model config marks ``garble_check`` is scored only with the watcher's verdict.

    Models config does not know (a recording scored outside its design) are not checked here.
    """
    models = config.get("models") or {}
    checked = [ch.get("side") for ch in meta.get("channels") or []
               if isinstance(ch, Mapping) and (models.get(ch.get("model")) or {}).get("garble_check")]
    if checked and not isinstance(meta.get("garble"), Mapping):
        raise InputError(f"{meta_path}: no field garble (the garble watcher's verdict), but config marks the model of "
                         f"side {', '.join(checked)} garble_check: the recording was made without the watcher or its "
                         f"check was interrupted, so a garbled run could be scored as clean; {fix}")
