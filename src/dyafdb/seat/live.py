"""The lockstep bridge on the wall clock: a person's browser on one side, or a model pair listened to live.

The same :class:`dyafdb.record.bridge.Bridge` and t-1 coupling as offline; only what drives
``tick()`` differs. With a person, the recording's clock is the browser's capture clock: tick t is the
person's frame t (capture samples ``t*1920 ... t*1920+1919``), and the bridge runs tick t as soon as
that frame has arrived, or ``INPUT_SLACK_S`` after it should have (``arrival of frame 0 + t*80 ms``):
then the person's frame is silence, counted as a late input frame. So one tick per 80 ms of the
person's audio clock, and a step that takes longer (the CPU agent thinking) is caught up from the
frames that queued meanwhile. The model's frame of tick t goes back to the browser, which plays it at
``capture time of frame t + playback delay`` (its jitter buffer; late frames are silence and
counted). docs/seat.md compares this with the models' coupling.

Listening in, the bridge ticks at ``start + t*80 ms`` and each tick's two frames go to the page.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping

import numpy as np

from dyafdb.agents.person import PersonAgent
from dyafdb.clock import FRAME_SECONDS, seconds_to_ticks
from dyafdb.record.bridge import SIDES, Bridge, BridgeResult
from dyafdb.record.checked import record_checked
from dyafdb.record.conversation import AgentPool, build_sessions, conversation_meta
from dyafdb.record.recording import Recording, recording_lock, write_recording
from dyafdb.record.spec import recording_inputs
from dyafdb.seat.asr import TEXT_SOURCE, asr_tokens
from dyafdb.seat.study import person_side
from dyafdb.suite.design import Conversation
from dyafdb.suite.scenarios import Scenario, find_scenario

# How long past the moment a person's frame should have arrived the bridge waits for it. Three
# frames: the browser sends a frame once it is captured (80 ms) and its audio thread delivers in
# 128-sample blocks; a loaded machine adds tens of milliseconds more.
INPUT_SLACK_S = 0.24

SendFrame = Callable[[int, dict[str, np.ndarray]], Awaitable[None]]


def _summary(values: list[float], scale: float = 1.0, digits: int = 3) -> dict[str, Any]:
    """n, median, p95 and max of a list (empty: n 0 only)."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "median": round(statistics.median(values) * scale, digits),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * scale, digits),
            "max": round(ordered[-1] * scale, digits)}


def role_card(scenario: Scenario, row: Conversation, side: str) -> dict[str, Any]:
    """What the person is shown: the situation and their own side only, never the partner's prompt."""
    own = scenario.sides[side]
    return {"title": scenario.title, "situation": scenario.situation.strip(), "name": own["name"],
            "persona": own.get("persona", ""), "prompt": own["prompt"].strip(), "opens": row.opener == side,
            "window_s": row.window_s}


def _write(config: Mapping[str, Any], root: Path, row: Conversation, out_dir: Path, rec: Recording,
           pool: AgentPool) -> dict[str, Any]:
    """Publish ``rec`` as the recording of ``row`` with its garble verdict, as the record stage does.

    The garble watcher still checks a marked model's side; a flagged side cannot be re-recorded
    without the person, so the verdict is kept (``failed``) rather than the conversation redone."""
    def record(_config: Any, _row: Any, attempt_dir: Path, _pool: Any, _root: Any, attempt: int) -> dict[str, Any]:
        write_recording(rec, attempt_dir)
        return rec.meta

    once = {**config, "garble": {**(config.get("garble") or {}), "rerecordings": 0}}
    with recording_lock(out_dir):
        meta, _ = record_checked(once, row, out_dir, pool, root, record=record)
    return meta


class _Live:
    """What the person's and the listener's runs share: sessions, the bridge, meta and the write."""

    def __init__(self, config: Mapping[str, Any], root: Path, row: Conversation, agents: dict[str, Any]):
        self.config, self.root, self.row = dict(config), root, row
        self.scenario = find_scenario(root / config["scenarios_dir"], row.scenario)
        self.inputs = recording_inputs(config, row, root)
        self.sessions = build_sessions(row, self.scenario, row.attempt, seconds_to_ticks(row.window_s))
        self.bridge = Bridge(agents, self.sessions, seconds_to_ticks(row.window_s),
                             seconds_to_ticks(config["bridge"]["lead_in_s"]), row.opener,
                             names={s: row.model_of(s) for s in SIDES})
        self.started = datetime.now(timezone.utc)
        self.t0 = time.perf_counter()
        self.tick_lag: list[float] = []
        # A tick runs on a worker thread; an abandoned conversation closes its agents only once the
        # tick in flight has returned, never under it.
        self._stepping = threading.Lock()

    async def open(self) -> None:
        await asyncio.to_thread(self.bridge.open)

    def _tick(self) -> dict[str, Any]:
        with self._stepping:
            return self.bridge.tick()

    async def tick(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._tick)

    def close(self) -> None:
        with self._stepping:
            self.bridge.close()

    def meta(self, result: BridgeResult) -> dict[str, Any]:
        return conversation_meta(self.config, self.row, self.scenario, self.row.attempt, self.sessions, result,
                                 self.inputs, self.started, total_wall_s=time.perf_counter() - self.t0)


class SeatConversation(_Live):
    """One conversation with a person: feed their frames, run, then :meth:`finish` writes the recording."""

    def __init__(self, config: Mapping[str, Any], root: Path, row: Conversation, pool: AgentPool,
                 participant: str | None = None):
        self.side = person_side(config, row)
        self.model_side = "b" if self.side == "a" else "a"
        self.person = PersonAgent({}, row.model_of(self.side))
        self.person.live = True
        model = pool.get(row.model_of(self.model_side), SIDES.index(self.model_side))
        super().__init__(config, root, row, {self.side: self.person, self.model_side: model})
        self.pool, self.participant = pool, participant
        self.arrived = asyncio.Event()
        self.arrival0: float | None = None

    def card(self) -> dict[str, Any]:
        return role_card(self.scenario, self.row, self.side)

    def feed(self, index: int, audio: np.ndarray) -> None:
        if index == 0 and self.arrival0 is None:
            self.arrival0 = time.perf_counter()
        self.person.feed(index, audio)
        self.arrived.set()

    async def _frame_or_deadline(self, t: int) -> None:
        while True:
            self.arrived.clear()
            if self.person.has(t):
                return
            remaining = (self.arrival0 or time.perf_counter()) + t * FRAME_SECONDS + INPUT_SLACK_S - time.perf_counter()
            if self.arrival0 is not None and remaining <= 0:
                return
            try:
                await asyncio.wait_for(self.arrived.wait(), None if self.arrival0 is None else remaining)
            except TimeoutError:
                return

    async def run(self, send: SendFrame) -> None:
        """Tick once per frame of the person's capture clock until the window ends; each model frame to ``send``."""
        while not self.bridge.done:
            t = self.bridge.state.t
            await self._frame_or_deadline(t)
            self.tick_lag.append(time.perf_counter() - (self.arrival0 + t * FRAME_SECONDS))
            frames = await self.tick()
            await send(t, {self.model_side: frames[self.model_side].audio})

    def finish(self, browser: Mapping[str, Any], consent: Mapping[str, Any]) -> dict[str, Any]:
        """Close the bridge, add the person's ASR text channel and the timing, write; returns meta.json."""
        self.close()
        result = self.bridge.result()
        rec = result.recording
        tokens, asr = asr_tokens(self.config, rec.channel(self.side), self.side)
        rec.tokens = sorted([*rec.tokens, *tokens], key=lambda tok: (tok.tick, SIDES.index(tok.channel)))
        meta = self.meta(result)
        for channel in meta["channels"]:
            channel["text_source"] = TEXT_SOURCE if channel["side"] == self.side else "model"
        person = result.agent_info[self.side].get("extra", {})
        meta["seat"] = {
            "person_side": self.side, "participant": self.participant, "asr": asr, "consent": dict(consent),
            "timing": {
                "clock": "the person's capture clock: tick t is capture samples t*1920 to t*1920+1919 (24 kHz)",
                "input_slack_s": INPUT_SLACK_S,
                "tick_lag_s": _summary(self.tick_lag),
                "late_input_frames": person.get("late_input_frames"),
                "stale_input_frames": person.get("stale_input_frames"),
                **{k: browser.get(k) for k in BROWSER_TIMING},
            },
        }
        rec.meta = meta
        out_dir = Path(results_recording(self.config, self.root, self.row))
        return _write(self.config, self.root, self.row, out_dir, rec, self.pool)


# What the page measures and reports at the end (docs/seat.md, "Timing").
BROWSER_TIMING = ("playback_delay_s", "output_latency_s", "jitter_buffer_s", "late_playback_frames", "late_playback_ticks",
                  "played_frames", "round_trip_ms", "context_rate", "capture_offset_s", "mic_open_s", "echo_cancellation",
                  "playback_grows", "playback_delay_changes")


def results_recording(config: Mapping[str, Any], root: Path, row: Conversation) -> str:
    from dyafdb.paths import results_of

    return results_of(config, root).recording(row.conversation_id)


class ListenConversation(_Live):
    """A model-model conversation, ticked on the wall clock so a page can play it as it is recorded."""

    def __init__(self, config: Mapping[str, Any], root: Path, row: Conversation, pool: AgentPool):
        agents = dict(zip(SIDES, pool.get_all([(row.model_of(s), i) for i, s in enumerate(SIDES)])))
        super().__init__(config, root, row, agents)
        self.pool = pool

    async def run(self, send: SendFrame) -> None:
        start = time.perf_counter()
        while not self.bridge.done:
            t = self.bridge.state.t
            wait = start + t * FRAME_SECONDS - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            self.tick_lag.append(time.perf_counter() - (start + t * FRAME_SECONDS))
            frames = await self.tick()
            await send(t, {s: frames[s].audio for s in SIDES})

    def finish(self) -> dict[str, Any]:
        self.close()
        result = self.bridge.result()
        rec = result.recording
        rec.meta = {**self.meta(result), "listen": {"paced": True, "tick_lag_s": _summary(self.tick_lag)}}
        return _write(self.config, self.root, self.row, Path(results_recording(self.config, self.root, self.row)),
                      rec, self.pool)
