"""Running a seat server in a test: in a thread of its own (its own event loop), on a free port."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

from dyafdb.seat.server import Seat, serve_seat


class SeatServer:
    def __init__(self, config: dict[str, Any], root: Path, participant: str | None = None, token: str | None = None,
                 judge: bool = False):
        self.seat_args = (config, root, participant, token, judge)
        self.url: str | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()

        def announce(line: str) -> None:
            self.url = line.split()[1].split("?")[0].rstrip("/")
            self._ready.set()

        async def main() -> None:
            seat = Seat(*self.seat_args)
            self._task = asyncio.current_task()
            await serve_seat(seat, "127.0.0.1", 0, announce)

        try:
            self._loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass

    def __enter__(self) -> "SeatServer":
        self._thread.start()
        assert self._ready.wait(60), "the seat server did not start"
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(30)

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as res:
                body = res.read()
                return res.status, json.loads(body) if res.headers.get("Content-Type") == "application/json" else body
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    @property
    def ws(self) -> str:
        return "ws" + self.url[len("http"):]


class StallAgent:
    """A partner that speaks a steady tone and holds the clock up once, as a model thinking inside one
    step does (params: stall_at tick, stall_s seconds)."""

    concurrent_step = False

    def __init__(self, params: dict[str, Any], model_name: str = "stall"):
        self.stall_at, self.stall_s = int(params.get("stall_at", 25)), float(params.get("stall_s", 1.0))
        self.tick = 0

    def open(self, session: Any) -> Any:
        from dyafdb.agents.base import AgentInfo

        self.tick = 0
        return AgentInfo(adapter="stall", adapter_version="test", model="stall")

    def step(self, heard: Any) -> Any:
        import time

        import numpy as np

        from dyafdb.agents.base import Frame
        from dyafdb.clock import FRAME_SAMPLES

        if self.tick == self.stall_at:
            time.sleep(self.stall_s)
        self.tick += 1
        return Frame(np.full(FRAME_SAMPLES, 0.05, dtype=np.float32), [], False)

    def close(self) -> None:
        pass
