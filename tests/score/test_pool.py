"""Scoring processes shared by score jobs (dyafdb.score.pool): several requests per process, a fresh
process after N or after one died, none on a SLURM job step of its own."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from dyafdb.score import pool


STARTED: list[int] = []


@pytest.fixture
def setting(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    monkeypatch.setenv(pool.POOL_ENV, pool.pool_setting(3))
    yield
    while STARTED:  # the processes these tests started (they would leave when idle)
        with contextlib.suppress(ProcessLookupError):
            os.kill(STARTED.pop(), signal.SIGTERM)


def _pid(capsys) -> int:
    err = capsys.readouterr().err
    pid = int(err.rsplit("scored in shared process ", 1)[1].split()[0])
    STARTED.append(pid)
    return pid


def test_requests_share_a_process_until_it_has_served_its_count(setting, capsys):
    pids = []
    for _ in range(4):
        assert pool.score_in_pool(["--version"]) == 0
        pids.append(_pid(capsys))
    assert pids[0] == pids[1] == pids[2] != pids[3]  # 3 per process, then a fresh one


def test_a_failing_command_keeps_its_exit_code_and_message(setting, capsys):
    assert pool.score_in_pool(["score", "all", "--id", "../x"]) == 2
    assert "dyafdb score:" in capsys.readouterr().err


def test_a_dead_process_is_replaced(setting, capsys):
    assert pool.score_in_pool(["--version"]) == 0
    first = _pid(capsys)
    os.kill(first, signal.SIGKILL)  # its socket file stays behind
    time.sleep(0.2)
    assert pool.score_in_pool(["--version"]) == 0
    assert _pid(capsys) != first


def test_no_sharing_on_a_slurm_step_of_its_own(monkeypatch):
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    monkeypatch.setenv(pool.POOL_ENV, pool.pool_setting(8))
    assert pool.per_process() == 8
    monkeypatch.setenv("SLURM_STEP_ID", "3")  # the jobstep executor's srun step, not the workflow's
    assert pool.per_process() == 1
    monkeypatch.setenv(pool.POOL_ENV, "8:abc:3")  # a job in the workflow's own step (salloc) shares
    assert pool.per_process() == 8


def test_a_process_that_goes_as_a_job_connects_is_replaced_and_the_job_runs_once(setting, capsys):
    """A process killed with an earlier job, or leaving after its count, can still hold its socket as the
    next job connects: the job's request lies unread and the connection is reset. The job then runs in a
    fresh process (nothing of it ran in the one that went), not fails with ECONNRESET."""
    import select
    import socket
    import threading

    folder = pool.pool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    going = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a process on its way out: listens, never reads
    going.bind(str(folder / "0.sock"))
    going.listen(4)
    answer: list[int | None] = []
    job = threading.Thread(target=lambda: answer.append(pool.score_in_pool(["--version"])))
    job.start()
    assert select.select([going], [], [], 30)[0], "the job never connected"
    time.sleep(0.2)  # its request is in, unread
    going.close()  # gone, with the connection still queued: the job's connection is reset
    job.join(120)
    assert answer == [0]
    assert _pid(capsys) != os.getpid()
