"""faster-whisper models, loaded once per process and shared by whoever asks for the same one.

The CPU agent hears its partner with Whisper tiny.en (:mod:`dyafdb.agents.cascade.models`) and the
garble watcher checks a side's channel with the same model by default (:mod:`dyafdb.record.garble`,
which the audio-health agreement also uses): in one record job that was two loads of one model
(0.3-0.5 s and ~50,000 page faults each). A leaf, since the agents come before the recorder.

A model is keyed by everything that changes its numbers (file, compute type, CPU threads), so a
shared model transcribes exactly as a private one would. CTranslate2 models take concurrent calls.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=4)
def whisper_model(path: str, compute_type: str, cpu_threads: int) -> Any:
    """faster-whisper's WhisperModel for a CTranslate2 model directory, on the CPU, loaded once."""
    from faster_whisper import WhisperModel

    return WhisperModel(path, device="cpu", compute_type=compute_type, cpu_threads=cpu_threads, num_workers=1,
                        local_files_only=True)
