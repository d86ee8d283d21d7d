"""Concurrent judge runs never pay twice for one question (issue 25, class 9): a question is asked
only under its claim; a run that finds it claimed waits for the cached reply, takes over the claim
of a run that died, and gives up with a message on one that holds it for longer than any call can take."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dyafdb.cli import main
from judge_stub import KEY, Stub
from test_judge import KEY_ENV, anthropic, make_project, read_out, run

QUESTIONS = 8  # T3-2's request_asked: 2 self-play x 2 openers + 2 x 2 x 2 cross-play


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


def batch_keys(config, root: Path) -> list[str]:
    """The cache keys of T3-2's request_asked batch, as the runner computes them."""
    from dyafdb.judge.cache import cache_key
    from dyafdb.judge.client import make_backend
    from dyafdb.judge.rubric import QUESTIONS as ALL
    from dyafdb.judge.runner import build_items
    from dyafdb.judge.settings import judge_settings
    from dyafdb.llm import Request
    from dyafdb.suite.design import build_design

    settings = judge_settings(config, root)
    spec = settings.judge("main")
    backend = make_backend(spec, settings)
    items = build_items(config, root, settings, "T3-2", ALL["request_asked"], build_design(config, root))
    return sorted({cache_key(spec.cache_identity, backend.request_body(Request(list(it.messages))))
                   for it in items})


HOLDER = """
import sys, time
from dyafdb.judge.cache import ReplyCache
cache = ReplyCache(sys.argv[1])
held = [cache.try_claim(key) for key in sys.argv[2:]]
assert all(held), "the test's holder found a claim already held"
print("held", flush=True)
time.sleep(120)
"""


def hold_claims(cache_dir: Path, keys: list[str]) -> subprocess.Popen:
    """Another judge run, as far as claims go: a process holding the claims on ``keys``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(cache_dir), *keys], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_two_runs_at_once_in_threads_ask_each_question_once(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    stub.delay_s = 0.5  # both runs are asking while the first replies are on their way
    usages, errors = [], []

    def one() -> None:
        try:
            usages.append(run(config, tmp_path))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(usages) == 2, errors
    assert len(stub.posts("/v1/messages")) == QUESTIONS
    assert sorted(u.cached for u in usages) == [0, QUESTIONS] or sum(u.cached for u in usages) == QUESTIONS
    assert all(r["label"] == "yes" for r in read_out(tmp_path, "main", "T3-2", "request_asked"))
    assert not list((tmp_path / "results/judge/cache").rglob("*.claim"))  # nothing left behind


@pytest.mark.parametrize("batch", [False, True], ids=["direct", "message-batches"])
def test_two_judge_commands_at_once_ask_each_question_once(tmp_path, stub, monkeypatch, batch):
    """Two `dyafdb judge` processes on one batch, as two cluster jobs would run."""
    monkeypatch.setenv(KEY_ENV, KEY)
    extra = {"batch": True, "batch_poll_s": 0.2} if batch else {}
    make_project(tmp_path, anthropic(stub, **extra))
    stub.delay_s = 1.0
    args = [sys.executable, "-m", "dyafdb", "judge", "--config", str(tmp_path / "config.yaml"), "--root",
            str(tmp_path), "--archetype", "T3-2", "--question", "request_asked"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    if batch:
        asked = sum(len(r["body"]["requests"]) for r in stub.posts("/v1/messages/batches"))
        assert asked == QUESTIONS and stub.posts("/v1/messages") == []
    else:
        assert len(stub.posts("/v1/messages")) == QUESTIONS
    assert all(r["label"] == "yes" for r in read_out(tmp_path, "main", "T3-2", "request_asked"))


def test_a_claim_whose_holder_dies_is_taken_over(tmp_path, stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    keys = batch_keys(config, tmp_path)
    assert len(keys) == QUESTIONS
    holder = hold_claims(tmp_path / "results/judge/cache", keys)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(run(config, tmp_path)), daemon=True)
    worker.start()
    time.sleep(1.5)
    assert stub.posts("/v1/messages") == [] and worker.is_alive()  # waits while the holder lives
    killed = time.monotonic()
    os.kill(holder.pid, signal.SIGKILL)  # no clean-up of its own: the claim files stay behind
    holder.wait()
    worker.join(60)
    assert done and time.monotonic() - killed < 10
    assert len(stub.posts("/v1/messages")) == QUESTIONS
    assert all(r["label"] == "yes" for r in read_out(tmp_path, "main", "T3-2", "request_asked"))
    assert not list((tmp_path / "results/judge/cache").rglob("*.claim"))


def test_a_claim_held_too_long_fails_with_one_line_naming_its_holder(tmp_path, stub, monkeypatch, capsys):
    import socket

    from dyafdb.judge import runner

    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    keys = batch_keys(config, tmp_path)
    holder = hold_claims(tmp_path / "results/judge/cache", keys[:1])  # one question stuck elsewhere
    # long enough for the other questions to be asked on a loaded machine, short enough for the test
    monkeypatch.setattr(runner, "claim_wait_s", lambda settings, spec: 3.0)
    try:
        start = time.monotonic()
        rc = main(["judge", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path),
                   "--archetype", "T3-2", "--question", "request_asked"])
        took = time.monotonic() - start
        err = capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    assert rc == 4 and took < 15, (rc, took, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"pid {holder.pid} on host {socket.gethostname()}" in err and "stop it and rerun" in err
    assert len(stub.posts("/v1/messages")) == QUESTIONS - 1  # the others were asked and cached
    assert not (tmp_path / "results/judge/main/T3-2/request_asked.jsonl").exists()


def test_one_run_asks_a_repeated_request_once(tmp_path, stub, monkeypatch):
    """Two seats of one run with the same request (here: every conversation alike) cost one call."""
    from dyafdb.judge.cache import ReplyCache
    from dyafdb.judge.rubric import QUESTIONS as ALL
    from dyafdb.judge.runner import Usage, build_items, judge_items
    from dyafdb.judge.client import make_backend
    from dyafdb.judge.settings import judge_settings
    from dyafdb.suite.design import build_design
    import asyncio

    monkeypatch.setenv(KEY_ENV, KEY)
    config = make_project(tmp_path, anthropic(stub))
    settings = judge_settings(config, tmp_path)
    items = build_items(config, tmp_path, settings, "T3-2", ALL["request_asked"], build_design(config, tmp_path))
    for it in items[1:]:
        it.messages = list(items[0].messages)
    usage = Usage()

    async def go() -> None:
        backend = make_backend(settings.judge("main"), settings)
        try:
            await judge_items(backend, ReplyCache(settings.cache_dir), items, ALL["request_asked"], 0, usage)
        finally:
            await backend.aclose()

    asyncio.run(go())
    assert len(stub.posts("/v1/messages")) == 1 and usage.calls == QUESTIONS and usage.cached == QUESTIONS - 1
    assert all(it.verdict and it.verdict.label == "yes" for it in items)
