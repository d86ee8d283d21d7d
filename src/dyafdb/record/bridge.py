"""The lockstep bridge: two agents, one 80 ms frame per tick, each hearing its partner's t-1.

A :class:`Bridge` holds the conversation's fixed set-up; its :class:`State` (opened by
:meth:`Bridge.open`) is everything that changes from tick to tick, and :meth:`Bridge.tick` advances it
by one frame, like a streaming module of kyutai's moshi (moshi/modules/streaming.py: one state object
per stream, stepped frame by frame). :func:`run_bridge` is the offline loop over it; the seat
(``dyafdb.seat``) drives the same object from the wall clock.

At tick t agent a hears what b emitted at t-1 and vice versa (silence at t = 0). Because each
input is known before the tick starts, both steps run concurrently. During the opener's lead-in the
partner is stepped and hears the opener, but what it emits is replaced by silence (its text tokens
are kept aside in meta, not in the text channel). A run ends at the window or after the first tick
on which an agent reports ``finished``.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dyafdb.agents.base import Agent, AgentError, Frame, Session, check_frame, silence
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.record.recording import Recording, Token

SIDES = ("a", "b")


class _InlineStepper:
    """Steps the agent on the bridge's own thread while the partner's thread runs (begin is called last)."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self._result: tuple[Frame | None, BaseException | None] = (None, None)

    def begin(self, heard: np.ndarray) -> None:
        try:
            self._result = (self.agent.step(heard), None)
        except Exception as exc:  # re-raised from end(), after the partner's step is collected
            self._result = (None, exc)

    def end(self) -> Frame:
        frame, exc = self._result
        if exc is not None:
            raise exc
        return frame

    def stop(self) -> None:
        pass


class _ThreadStepper:
    """Steps the agent on a dedicated thread so it overlaps with the partner's step."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self._in: queue.SimpleQueue = queue.SimpleQueue()
        self._out: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="dyafdb-step")
        self._thread.start()

    def _loop(self) -> None:
        while True:
            heard = self._in.get()
            if heard is None:
                return
            try:
                self._out.put((self.agent.step(heard), None))
            except BaseException as exc:  # handed to the bridge thread
                self._out.put((None, exc))

    def begin(self, heard: np.ndarray) -> None:
        self._in.put(heard)

    def end(self) -> Frame:
        frame, exc = self._out.get()
        if exc is not None:
            raise exc
        return frame

    def stop(self) -> None:
        self._in.put(None)


class _RemoteStepper:
    """Out-of-process agents overlap for free: send both STEPs, then read both FRAMEs."""

    def __init__(self, agent: Any):
        self.agent = agent

    def begin(self, heard: np.ndarray) -> None:
        self.agent.begin_step(heard)

    def end(self) -> Frame:
        return self.agent.end_step()

    def stop(self) -> None:
        pass


def _steppers(agents: dict[str, Agent]) -> dict[str, Any]:
    out = {}
    for side in SIDES:
        agent = agents[side]
        if hasattr(agent, "begin_step") and hasattr(agent, "end_step"):
            out[side] = _RemoteStepper(agent)
        elif side == "a" and getattr(agent, "concurrent_step", True):
            # Agents whose step is trivial (null, scripted) opt out: a thread handoff would cost more than the step.
            out[side] = _ThreadStepper(agent)
        else:
            out[side] = _InlineStepper(agent)
    return out


@dataclass
class BridgeResult:
    recording: Recording
    agent_info: dict[str, dict[str, Any]]
    end_reason: str
    ticks: int
    wall_time_s: float
    step_wall_s: dict[str, float]
    suppressed_text: dict[str, list[list[Any]]] = field(default_factory=dict)


@dataclass
class State:
    """What one conversation has produced so far and what each side hears next."""

    audio: np.ndarray  # (2, window samples); filled up to ``t``
    heard: dict[str, np.ndarray]  # what each side is handed on the next tick: its partner's last frame
    steppers: dict[str, Any]
    info: dict[str, dict[str, Any]]
    opened: list[str]
    suppressed: dict[str, list[list[Any]]]
    tokens: list[Token] = field(default_factory=list)
    step_wall: dict[str, float] = field(default_factory=lambda: {s: 0.0 for s in SIDES})
    t: int = 0  # the next tick to run
    end_reason: str | None = None  # set once the conversation has ended
    started: float = 0.0  # perf_counter at the first tick's start
    wall: float = 0.0


class Bridge:
    """Two agents coupled at t-1 for one conversation; open, tick until ``done``, close."""

    def __init__(self, agents: dict[str, Agent], sessions: dict[str, Session], window_ticks: int, lead_in_ticks: int,
                 opener: str, names: dict[str, str] | None = None):
        self.agents, self.sessions = agents, sessions
        self.window_ticks, self.lead_in_ticks, self.opener = window_ticks, lead_in_ticks, opener
        self.names = names or {s: s for s in SIDES}
        self.partner_of_opener = "b" if opener == "a" else "a"
        self.state: State | None = None

    def open(self) -> State:
        """Open both sessions (a, then b, before the clock starts) and the steppers; on error close what opened."""
        state = State(audio=np.zeros((2, self.window_ticks * FRAME_SAMPLES), dtype=np.float32),
                      heard={"a": silence(), "b": silence()}, steppers={}, info={}, opened=[],
                      suppressed={self.partner_of_opener: []})
        self.state = state
        try:
            for side in SIDES:
                try:
                    state.info[side] = self.agents[side].open(self.sessions[side]).to_json()
                except AgentError:
                    raise
                except Exception as exc:
                    raise AgentError(f"agent {self.names[side]} (side {side}) failed to open its session: "
                                     f"{type(exc).__name__}: {exc}") from exc
                state.opened.append(side)
            state.steppers = _steppers(self.agents)
        except BaseException:
            self.close()
            raise
        if self.window_ticks <= 0:
            state.end_reason = "window"
        return state

    @property
    def done(self) -> bool:
        return self.state is not None and self.state.end_reason is not None

    def tick(self) -> dict[str, Frame]:
        """Run tick ``state.t``: step both sides on what they hear, record, hand each its partner's frame.

        Returns the frames as recorded (the partner's muted during the lead-in).
        """
        state = self.state
        if state is None or state.end_reason is not None:
            raise RuntimeError("Bridge.tick: the bridge is not open or the conversation has ended")
        t = state.t
        t0 = time.perf_counter()
        if t == 0:
            state.started = t0
        for side in SIDES:
            state.steppers[side].begin(state.heard[side])
        frames: dict[str, Frame] = {}
        error: BaseException | None = None
        for side in SIDES:  # collect both even if one fails, so no thread is left mid-step
            try:
                frames[side] = check_frame(state.steppers[side].end(), f"{self.names[side]} (side {side})")
            except AgentError as exc:
                error = error or exc
            except Exception as exc:
                error = error or AgentError(f"agent {self.names[side]} (side {side}) failed at tick {t}: {type(exc).__name__}: {exc}")
            state.step_wall[side] += time.perf_counter() - t0
        if error is not None:
            raise error
        if t < self.lead_in_ticks:
            muted = frames[self.partner_of_opener]
            if muted.text:
                state.suppressed[self.partner_of_opener].append([t, muted.text])
            frames[self.partner_of_opener] = Frame(silence(), [], muted.finished)
        lo, hi = t * FRAME_SAMPLES, (t + 1) * FRAME_SAMPLES
        for i, side in enumerate(SIDES):
            state.audio[i, lo:hi] = frames[side].audio
            state.tokens.extend(Token(side, t, text) for text in frames[side].text)
        state.heard = {"a": frames["b"].audio, "b": frames["a"].audio}
        state.t = t + 1
        finished = [s for s in SIDES if frames[s].finished]
        if finished:
            state.end_reason = "finished:" + "+".join(finished)
        elif state.t >= self.window_ticks:
            state.end_reason = "window"
        if state.end_reason is not None:
            state.wall = time.perf_counter() - state.started
        return frames

    def close(self) -> None:
        """Stop the steppers and close every opened session; the first error raised elsewhere is the one reported."""
        state = self.state
        if state is None:
            return
        for stepper in state.steppers.values():
            stepper.stop()
        state.steppers = {}
        for side in state.opened:
            try:
                report = self.agents[side].close()
            except Exception:
                continue
            if isinstance(report, dict) and side in state.info:  # facts known only after the session ran
                state.info[side].setdefault("extra", {}).update(report)
        state.opened = []

    def result(self) -> BridgeResult:
        state = self.state
        assert state is not None and state.end_reason is not None, "Bridge.result before the conversation ended"
        rec = Recording(audio=state.audio[:, : state.t * FRAME_SAMPLES].copy(), tokens=state.tokens)
        return BridgeResult(recording=rec, agent_info=state.info, end_reason=state.end_reason, ticks=state.t,
                            wall_time_s=state.wall, step_wall_s=state.step_wall, suppressed_text=state.suppressed)


def run_bridge(agents: dict[str, Agent], sessions: dict[str, Session], window_ticks: int, lead_in_ticks: int,
               opener: str, names: dict[str, str] | None = None, progress: bool = False) -> BridgeResult:
    """Open both sessions (a, then b), tick until the conversation ends, close both; always closes on error."""
    bridge = Bridge(agents, sessions, window_ticks, lead_in_ticks, opener, names)
    bar = None
    bridge.open()
    try:
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=window_ticks, unit="tick", desc="bridge", file=sys.stderr, leave=False)
        while not bridge.done:
            bridge.tick()
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        bridge.close()
    return bridge.result()
