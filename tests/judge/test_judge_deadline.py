"""`dyafdb judge` against a gateway that trickles its replies one byte per second: with
``timeout_s: 3`` the command ends after about 3 s per try, on one line naming the judge, the
endpoint and the setting to raise (issue 25, class 3; the LLM layer's own cases are tests/llm)."""

from __future__ import annotations

import threading
import time

import pytest

from dyafdb.cli import main
from judge_stub import KEY, Stub
from test_judge import KEY_ENV, anthropic, make_project

HUNG = 40.0


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.trickle_s = None
    s.close()


def judge_in_thread(root, capsys) -> tuple[int | None, float, str]:
    """``dyafdb judge`` on one batch: its exit code, how long it took, what it printed on stderr."""
    outcome: dict[str, object] = {}

    def go() -> None:
        start = time.monotonic()
        outcome["rc"] = main(["judge", "--config", str(root / "config.yaml"), "--root", str(root),
                              "--archetype", "T3-2", "--question", "request_asked"])
        outcome["took"] = time.monotonic() - start

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(HUNG)
    assert not worker.is_alive(), f"dyafdb judge was still running after {HUNG} s with timeout_s 3"
    return outcome.get("rc"), float(outcome.get("took", HUNG)), capsys.readouterr().err  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_the_judge_command_ends_at_the_deadline(tmp_path, stub, monkeypatch, capsys, backend):
    monkeypatch.setenv(KEY_ENV, KEY)
    judges = anthropic(stub)
    if backend == "openai":
        judges = {"main": {**judges["main"], "backend": "openai", "model": "gpt-test", "base_url": stub.url + "/v1"}}
    make_project(tmp_path, judges, timeout_s=3, max_retries=0)
    stub.trickle_s = 1.0
    rc, took, err = judge_in_thread(tmp_path, capsys)
    assert rc == 4 and took < 3 + 3, (rc, took, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("dyafdb judge: error: judge main") and stub.url in err
    assert "no complete reply within 3 s after 1 tries" in err and "raise judge.timeout_s" in err
    assert not (tmp_path / "results/judge/main/T3-2/request_asked.jsonl").exists()
    stub.trickle_s = None
    rc, _, err = judge_in_thread(tmp_path, capsys)  # the gateway is fast again: the rerun completes
    assert rc == 0, err


def test_retries_of_a_trickling_call_each_end_at_the_deadline(tmp_path, stub, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, KEY)
    make_project(tmp_path, anthropic(stub), timeout_s=3, max_retries=1, backoff_s=0.1, max_backoff_s=0.1)
    stub.trickle_s = 1.0
    rc, took, err = judge_in_thread(tmp_path, capsys)
    assert rc == 4 and took < 2 * 3 + 3, (rc, took, err)
    assert "no complete reply within 3 s after 2 tries" in err
