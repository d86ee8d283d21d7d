"""Moshi conversations through an engine process: alone, and four at once sharing one model load.

A tiny random checkpoint in kyutai's layout (tests/standins/moshi_tiny.py) is loaded by the engine
host through the moshi adapter's own loader. Self-play conversations run through the real bridge
with both sides as sessions of the one engine; each gives the same text and audio (within float
tolerance) alone and when it shares its ticks with three other conversations.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("moshi")
pytest.importorskip("sentencepiece")
pytest.importorskip("torch")

import moshi_tiny  # noqa: E402
from test_engine_host import session, sockdir, start_host, stop_host  # noqa: E402,F401

from dyafdb.agents.engine.client import EngineAgent  # noqa: E402
from dyafdb.record.bridge import run_bridge  # noqa: E402

TICKS = 16


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return moshi_tiny.write_moshi_checkpoint(tmp_path_factory.mktemp("moshi") / "tiny")


def converse(sock: Path, cid: str, seed: int, out: dict) -> None:
    agents = {s: EngineAgent("moshi", sock, step_timeout_s=60) for s in "ab"}
    try:
        sessions = {s: session(cid, s, seed=seed + i, window=TICKS) for i, s in enumerate("ab")}
        out[cid] = run_bridge(agents, sessions, TICKS, 0, "a")
    except Exception as exc:  # reported by the test
        out[cid] = exc
    finally:
        for agent in agents.values():
            agent.shutdown()


def test_alone_and_in_a_group_of_four_through_the_engine(checkpoint, sockdir):
    params = {"checkpoint_dir": str(checkpoint), "device": "cpu", "dtype": "float32"}
    sock = sockdir / "moshi.sock"
    proc = start_host(sock, "moshi", "moshi", params, sessions=8, max_wait_ms=200)
    try:
        alone: dict = {}
        converse(sock, "x", 11, alone)
        group: dict = {}
        threads = [threading.Thread(target=converse, args=(sock, cid, seed, group))
                   for cid, seed in (("x", 11), ("p", 3), ("q", 5), ("r", 7))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        info = EngineAgent("moshi", sock).worker_info
    finally:
        log = stop_host(proc)
    for result in (alone["x"], *group.values()):
        assert not isinstance(result, Exception), f"{result}\n{log}"
    assert info["model_loads"] == 1 and info["sessions_opened"] == 10
    assert info["largest_batch"] == 8  # the four conversations' eight sessions stepped in one batch
    a, b = alone["x"].recording, group["x"].recording
    assert np.abs(a.audio).max() > 0.01
    np.testing.assert_allclose(a.audio, b.audio, rtol=0, atol=1e-4)
    assert a.tokens and list(a.tokens) == list(b.tokens)
    assert not np.allclose(group["p"].recording.audio, b.audio, atol=1e-3)  # company with other conversations
