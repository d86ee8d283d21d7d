"""The agent protocol: the only thing the bridge knows about a model.

An agent is opened once per conversation with a :class:`Session`, then stepped once per 80 ms tick
with exactly 1,920 float32 samples at 24 kHz (what the partner emitted on the previous tick) and
returns exactly 1,920 samples plus the text tokens it produced on that tick. Adapters own any
resampling, chunking and buffering; a model that needs more wall time than a tick (MiniCPM-o)
applies backpressure by blocking inside ``step``, never by changing the clock.

Agents may be reused for many sessions (``open``/``close`` pairs) so that models load once per
worker process.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dyafdb.clock import FRAME_SAMPLES, SAMPLE_RATE


@dataclass(frozen=True)
class Session:
    """Everything an agent is told at the start of one conversation.

    ``prompt`` is the complete text the model is given: the shared situation, the side's private
    role prompt and, for the opener only, the fixed opening instruction. Model names, pairings and
    file paths are deliberately absent.
    """

    conversation_id: str
    side: str  # "a" or "b"
    prompt: str
    speaker_name: str
    seed: int
    is_opener: bool
    window_ticks: int
    sample_rate: int = SAMPLE_RATE
    frame_samples: int = FRAME_SAMPLES
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Session":
        return cls(**data)


@dataclass
class Frame:
    """One tick of an agent's output."""

    audio: np.ndarray  # float32, shape (FRAME_SAMPLES,)
    text: list[str] = field(default_factory=list)
    finished: bool = False


@dataclass
class AgentInfo:
    """What an agent reports when a session opens; it lands in meta.json."""

    adapter: str
    adapter_version: str
    model: str = ""
    voice: str | None = None
    sampling: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Agent(Protocol):
    """A full-duplex model seen from the bridge."""

    def open(self, session: Session) -> AgentInfo: ...

    def step(self, heard: np.ndarray) -> Frame: ...

    # May return a dict of facts only known once the session has run (e.g. recoverable errors a
    # gateway reported); the bridge merges it into this session's ``AgentInfo.extra`` in meta.json.
    def close(self) -> dict[str, Any] | None: ...


class AgentError(RuntimeError):
    """An agent failed; the message names the agent and the reason."""


def silence() -> np.ndarray:
    return np.zeros(FRAME_SAMPLES, dtype=np.float32)


def check_frame(frame: Frame, who: str) -> Frame:
    """Reject a malformed frame with a message naming the agent, instead of recording garbage."""
    audio = np.asarray(frame.audio)
    if audio.shape != (FRAME_SAMPLES,):
        raise AgentError(f"agent {who} returned audio of shape {audio.shape}; expected ({FRAME_SAMPLES},)")
    if audio.dtype != np.float32:
        audio = audio.astype(np.float32)
    if not np.all(np.isfinite(audio)):
        raise AgentError(f"agent {who} returned non-finite audio samples")
    if not all(isinstance(t, str) for t in frame.text):
        raise AgentError(f"agent {who} returned text tokens that are not strings: {frame.text!r}")
    frame.audio = audio
    return frame
