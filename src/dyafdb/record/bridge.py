"""The lockstep bridge: two agents, one 80 ms frame per tick, each hearing its partner's t-1.

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


def run_bridge(agents: dict[str, Agent], sessions: dict[str, Session], window_ticks: int, lead_in_ticks: int,
               opener: str, names: dict[str, str] | None = None, progress: bool = False) -> BridgeResult:
    """Open both sessions (a, then b), run the lockstep loop, close both; always closes on error."""
    names = names or {s: s for s in SIDES}
    partner_of_opener = "b" if opener == "a" else "a"
    audio = np.zeros((2, window_ticks * FRAME_SAMPLES), dtype=np.float32)
    tokens: list[Token] = []
    suppressed: dict[str, list[list[Any]]] = {partner_of_opener: []}
    step_wall = {s: 0.0 for s in SIDES}
    info: dict[str, dict[str, Any]] = {}
    opened: list[str] = []
    steppers: dict[str, Any] = {}
    bar = None
    try:
        for side in SIDES:  # sessions open one after the other, before the clock starts
            try:
                info[side] = agents[side].open(sessions[side]).to_json()
            except AgentError:
                raise
            except Exception as exc:
                raise AgentError(f"agent {names[side]} (side {side}) failed to open its session: {type(exc).__name__}: {exc}") from exc
            opened.append(side)
        steppers = _steppers(agents)
        heard = {"a": silence(), "b": silence()}
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=window_ticks, unit="tick", desc="bridge", file=sys.stderr, leave=False)
        end_reason, ticks = "window", window_ticks
        start = time.perf_counter()
        for t in range(window_ticks):
            t0 = time.perf_counter()
            for side in SIDES:
                steppers[side].begin(heard[side])
            frames: dict[str, Frame] = {}
            error: BaseException | None = None
            for side in SIDES:  # collect both even if one fails, so no thread is left mid-step
                try:
                    frames[side] = check_frame(steppers[side].end(), f"{names[side]} (side {side})")
                except AgentError as exc:
                    error = error or exc
                except Exception as exc:
                    error = error or AgentError(f"agent {names[side]} (side {side}) failed at tick {t}: {type(exc).__name__}: {exc}")
                step_wall[side] += time.perf_counter() - t0
            if error is not None:
                raise error
            if t < lead_in_ticks:
                muted = frames[partner_of_opener]
                if muted.text:
                    suppressed[partner_of_opener].append([t, muted.text])
                frames[partner_of_opener] = Frame(silence(), [], muted.finished)
            lo, hi = t * FRAME_SAMPLES, (t + 1) * FRAME_SAMPLES
            for i, side in enumerate(SIDES):
                audio[i, lo:hi] = frames[side].audio
                tokens.extend(Token(side, t, text) for text in frames[side].text)
            heard = {"a": frames["b"].audio, "b": frames["a"].audio}
            if bar is not None:
                bar.update(1)
            done = [s for s in SIDES if frames[s].finished]
            if done:
                end_reason, ticks = "finished:" + "+".join(done), t + 1
                break
        wall = time.perf_counter() - start
    finally:
        if bar is not None:
            bar.close()
        for stepper in steppers.values():
            stepper.stop()
        for side in opened:
            try:
                report = agents[side].close()
            except Exception:
                continue  # the first error is the one worth reporting
            if isinstance(report, dict) and side in info:  # facts known only after the session ran
                info[side].setdefault("extra", {}).update(report)
    rec = Recording(audio=audio[:, : ticks * FRAME_SAMPLES].copy(), tokens=tokens)
    return BridgeResult(recording=rec, agent_info=info, end_reason=end_reason, ticks=ticks, wall_time_s=wall,
                        step_wall_s=step_wall, suppressed_text=suppressed)
