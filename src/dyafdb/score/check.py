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
from dyafdb.record.recording import CHANNELS, Recording, recording_digest
from dyafdb.record.spec import expected_ticks, recording_inputs
from dyafdb.suite.design import Conversation


class Mismatch(InputError):
    """A file that is not what the stage asked for, with the field that says so: every stage that
    checks what it reads raises it, and `dyafdb verify` sorts by its field (:attr:`stale`)."""

    def __init__(self, path: Path | str, field: str, detail: str):
        super().__init__(f"{path}: field {field} {detail}")
        self.field, self.detail = field, detail

    @property
    def stale(self) -> bool:
        """Made from other inputs or another recording (rather than another conversation or length)."""
        return self.field == "provenance.recording" or self.field.startswith("provenance.inputs")


def check_made_from(path: Path, doc: Any, expected: Mapping[str, str], fix: str) -> None:
    """Refuse a file computed from a recording (segments, transcript, measures) whose ``provenance``
    differs from ``expected`` (its conversation id and recording digest, or the digest alone); a file
    made before provenance existed carries none and is not checked."""
    made = doc.get("provenance") if isinstance(doc, Mapping) else None
    if made is None:
        return
    if not isinstance(made, Mapping):
        raise Mismatch(path, "provenance", f"= {made!r} is not a mapping of digests; {fix}")
    for key, want in expected.items():
        if made.get(key) != want:
            why = "another conversation's file" if key == "conversation_id" else "it was computed from another recording"
            raise Mismatch(path, f"provenance.{key}", f"= {made.get(key)!r}, expected {want!r}: {why}; {fix}")


def rerecord_fix(directory: Path) -> str:
    return (f"record the conversation again (`dyafdb record --id {Path(directory).name}`; under Snakemake delete the "
            f"folder {directory} and rerun: the workflow plans a missing recording again, and everything after it)")


def check_identity(config: Mapping[str, Any], meta: Mapping[str, Any], conversation_id: str,
                   row: Conversation | None, directory: Path, root: Path | str = ".") -> None:
    """Refuse a recording that is not the one asked for: another conversation's folder copied into
    this one, swapped or missing channels, another lead-in or window, or one made from other inputs
    than the design row, models and scenario say now (dyafdb.record.spec).

    ``row`` is None for a recording outside the design (recorded by hand): only its id is checked.
    Recordings made before provenance existed (no ``provenance`` field) get every check but the digests.
    """
    directory = Path(directory)
    meta_path = directory / "meta.json"
    fix = rerecord_fix(directory)

    def refuse(field: str, got: Any, want: Any, why: str) -> None:
        raise Mismatch(meta_path, field, f"= {got!r}, expected {want!r}: {why}; {fix}")

    if meta.get("conversation_id") != conversation_id:
        refuse("conversation_id", meta.get("conversation_id"), conversation_id,
               "the folder holds another conversation's recording")
    if row is None:
        return
    channels = meta.get("channels")
    want_channels = [(0, "a", row.model_a), (1, "b", row.model_b)]
    got_channels = ([(c.get("index"), c.get("side"), c.get("model")) if isinstance(c, Mapping) else c for c in channels]
                    if isinstance(channels, list) else channels)
    if got_channels != want_channels:
        refuse("channels", got_channels, want_channels,
               "channel 0 must be side a and channel 1 side b, each with the model the design gives it")
    for field, want in expected_ticks(config, row).items():
        got = meta.get(field)
        if isinstance(got, bool) or not isinstance(got, int) or got != want:
            refuse(field, got, want, "the design and the bridge settings give another length")
    provenance = meta.get("provenance")
    if not isinstance(provenance, Mapping):
        if provenance is None:
            return  # made before provenance was recorded
        refuse("provenance", provenance, "a mapping of digests", "the field is damaged")
    if "inputs" not in provenance:
        return  # written outside record_conversation (a test fixture, a converted recording): no inputs to check
    inputs = provenance["inputs"]
    if not isinstance(inputs, Mapping):
        refuse("provenance.inputs", inputs, "the digests of its design row, models and scenario", "the field is damaged")
    expected = recording_inputs(config, row, root)
    for key in sorted(set(expected) | set(inputs)):
        if inputs.get(key) != expected.get(key):
            what = {"design_row": "its design row", "models": "a model's config entry", "scenario": "its scenario file",
                    "bridge": "the bridge's lead-in", "garble": "the garble watcher's settings"}.get(key, key)
            refuse(f"provenance.inputs.{key}", inputs.get(key), expected.get(key),
                   f"the recording is stale: {what} changed since it was made")


def check_recording_digest(meta: Mapping[str, Any], directory: Path) -> str | None:
    """The recording's digest, checked against the one meta.json recorded (None for recordings made
    before provenance): audio or text replaced after recording is refused."""
    directory = Path(directory)
    recorded = (meta.get("provenance") or {}).get("recording") if isinstance(meta.get("provenance"), Mapping) else None
    if recorded is None:
        return None
    actual = recording_digest(directory)
    if actual != recorded:
        raise Mismatch(directory / "meta.json", "provenance.recording", f"= {recorded!r}, but audio.wav and text.jsonl "
                       f"have digest {actual!r}: they were replaced or edited after recording; {rerecord_fix(directory)}")
    return actual


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
