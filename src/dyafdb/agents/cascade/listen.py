"""What the embedded CPU agent hears: an energy VAD per 80 ms frame and the partner's pending speech.

The agent never hears itself (the bridge feeds it only the partner's channel), so a plain energy
detector with hysteresis is enough: a frame opens speech at ``start_rms`` and speech continues
while frames stay above ``end_rms``. Everything the partner says from the onset of a stretch of
speech (plus a short pre-roll, so Whisper gets the first phoneme) is buffered until the agent takes
it for ASR.
"""

from __future__ import annotations

from collections import deque

import numpy as np

NEVER = 10**9  # "ticks since" for something that has not happened yet


class Listener:
    def __init__(self, start_rms: float, end_rms: float, pre_roll_ticks: int = 2, max_ticks: int = 250):
        self.start_rms = start_rms
        self.end_rms = end_rms
        self.max_ticks = max_ticks
        self._pre_roll: deque[np.ndarray] = deque(maxlen=pre_roll_ticks)
        self.reset()

    def reset(self) -> None:
        self._pre_roll.clear()
        self.voiced = False
        self.silence_run = NEVER  # ticks since the partner's last voiced frame
        self.voiced_run = 0  # consecutive voiced ticks up to now
        self._frames: list[np.ndarray] = []
        self.pending_voiced = 0  # voiced ticks in the buffered, unanswered speech
        self.pending_onset_tick: int | None = None
        self.ever_heard = False

    def hear(self, frame: np.ndarray, tick: int) -> bool:
        """Take one heard frame; returns whether the partner is speaking in it."""
        rms = float(np.sqrt(np.mean(np.square(frame, dtype=np.float64))))
        self.voiced = rms >= (self.end_rms if self.voiced else self.start_rms)
        if self.voiced:
            self.silence_run = 0
            self.voiced_run += 1
            self.ever_heard = True
            if self.pending_onset_tick is None:
                self.pending_onset_tick = tick
                self._frames = list(self._pre_roll)
            self.pending_voiced += 1
        else:
            self.silence_run = self.silence_run + 1 if self.silence_run < NEVER else NEVER
            self.voiced_run = 0
        if self.pending_onset_tick is not None:
            self._frames.append(np.asarray(frame, dtype=np.float32))
            if len(self._frames) > self.max_ticks:  # keep the latest speech; Whisper reads 30 s at most
                del self._frames[0]
        else:
            self._pre_roll.append(np.asarray(frame, dtype=np.float32))
        return self.voiced

    @property
    def has_pending(self) -> bool:
        return self.pending_onset_tick is not None

    def take(self) -> np.ndarray:
        """The buffered speech (cleared): what the agent is about to answer."""
        audio = np.concatenate(self._frames) if self._frames else np.zeros(0, dtype=np.float32)
        self.drop()
        return audio

    def drop(self) -> None:
        self._frames = []
        self.pending_voiced = 0
        self.pending_onset_tick = None
