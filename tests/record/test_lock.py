"""One writer per recording at a time (issue 23, item 5): a second `dyafdb record` of an id being
recorded refuses, naming the running one; a partial folder goes only when its owner is dead."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, TEST_PATH
from dyafdb.cli import main
from results_paths import results_at
from scoring_fixtures import write_project


def _project(tmp_path: Path, sleep_s: float = 0.0) -> tuple[Path, str]:
    """A one-scenario project whose conversations take about ``25 * 2 * sleep_s`` seconds to record."""
    from dyafdb.config import load_config
    from dyafdb.suite.design import build_design

    probe = {"adapter": "agents_for_tests:ProbeAgent", "params": {"sleep_s": sleep_s}}
    write_project(tmp_path, ["T1-1"], models={"slow": probe, "other": probe}, window_s=2.0)
    config = load_config(tmp_path / "config.yaml")
    row = next(r for r in build_design(config, tmp_path) if r.play == "cross")
    return tmp_path / "config.yaml", row.conversation_id


def _record(tmp_path: Path, cid: str) -> list[str]:
    return ["record", "--config", str(tmp_path / "config.yaml"), "--root", str(tmp_path), "--id", cid, "--no-progress"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), TEST_PATH])}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _lock_file(out: Path) -> Path:
    return out.parent / f".lock-{out.name}"


def test_a_second_record_of_the_same_id_refuses_naming_the_running_one(tmp_path, capsys):
    """`dyafdb record --id X` twice, 5 s apart: the second deleted the first's partial folder, the first failed."""
    _, cid = _project(tmp_path, sleep_s=0.3)
    out = Path(results_at(tmp_path).recording(cid))
    first = subprocess.Popen([sys.executable, "-m", "dyafdb", *_record(tmp_path, cid)], env=_env(), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (_lock_file(out).exists() and _lock_file(out).read_text().strip()
                   and any(out.parent.glob(f".partial-{cid}-*"))):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first record never took its lock"
            time.sleep(0.05)
        partial = out.parent / f".partial-{cid}-{first.pid}"
        assert partial.is_dir()

        rc = main(_record(tmp_path, cid))
        err = capsys.readouterr().err.strip()
        assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert f"pid {first.pid}" in err and socket.gethostname() in err and "since" in err and cid in err, err
        assert "wait" in err and f"kill {first.pid}" in err, err
        assert partial.is_dir(), "the refused record touched the running one's partial folder"
    finally:
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert json.loads((out / "meta.json").read_text())["complete"] is True
    assert not list(out.parent.glob(".partial-*")) and not _lock_file(out).exists()


def test_a_dead_owners_partial_and_lock_are_cleaned_up_by_the_next_record(tmp_path, capsys):
    _, cid = _project(tmp_path)
    out = Path(results_at(tmp_path).recording(cid))
    out.parent.mkdir(parents=True)
    dead = _dead_pid()
    (out.parent / f".partial-{cid}-{dead}").mkdir()
    (out.parent / f".partial-{cid}-{dead}" / "audio.wav").write_bytes(b"half")
    _lock_file(out).write_text(json.dumps({"pid": dead, "host": socket.gethostname(), "start": 1,
                                           "since": "2024-01-01T00:00:00+00:00", "command": "dyafdb record"}))
    assert main(_record(tmp_path, cid)) == 0, capsys.readouterr().err
    assert (out / "meta.json").exists()
    assert not list(out.parent.glob(".partial-*")) and not _lock_file(out).exists()


def test_a_reused_pid_does_not_keep_a_lock_or_a_partial_alive(tmp_path, capsys):
    """The pid in a stale lock or partial name may belong to a new process now: its start time tells."""
    _, cid = _project(tmp_path)
    out = Path(results_at(tmp_path).recording(cid))
    out.parent.mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lock_file(out).write_text(json.dumps({"pid": other.pid, "host": socket.gethostname(), "start": 1,
                                               "since": "2000-01-01T00:00:00+00:00", "command": "dyafdb record"}))
        old = out.parent / f".partial-{cid}-{other.pid}"
        old.mkdir()
        os.utime(old, (946684800, 946684800))  # made in 2000, long before that process started
        assert main(_record(tmp_path, cid)) == 0, capsys.readouterr().err
        assert not old.exists() and not _lock_file(out).exists()
    finally:
        other.kill()
        other.wait()


def test_a_live_owners_partial_is_never_removed(tmp_path, capsys):
    from dyafdb.record.recording import staging_dir

    _, cid = _project(tmp_path)
    out = Path(results_at(tmp_path).recording(cid))
    out.parent.mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.05)
        theirs = out.parent / f".partial-{cid}-{other.pid}"
        theirs.mkdir()
        (theirs / "audio.wav").write_bytes(b"being written")
        mine = staging_dir(out)
        assert theirs.is_dir() and mine.is_dir() and mine != theirs
        mine.rmdir()
        assert main(_record(tmp_path, cid)) == 0, capsys.readouterr().err
        assert (theirs / "audio.wav").read_bytes() == b"being written"
    finally:
        other.kill()
        other.wait()


def test_an_owner_on_another_host_is_refused_with_the_fix(tmp_path, capsys):
    """flock may not reach across NFS: the lock file's owner on another host counts as live."""
    _, cid = _project(tmp_path)
    out = Path(results_at(tmp_path).recording(cid))
    out.parent.mkdir(parents=True)
    lock = _lock_file(out)
    lock.write_text(json.dumps({"pid": 4242, "host": "gpu-node-17", "start": 99, "since": "2024-05-01T10:00:00+00:00",
                                "command": "dyafdb record --id x"}))
    assert main(_record(tmp_path, cid)) == 2
    err = capsys.readouterr().err.strip()
    assert "pid 4242" in err and "gpu-node-17" in err and "2024-05-01T10:00:00" in err, err
    assert "cannot" in err and f"delete {lock}" in err and len(err.splitlines()) == 1, err
    lock.unlink()
    assert main(_record(tmp_path, cid)) == 0


def test_the_lock_is_reentrant_and_refuses_another_process(tmp_path):
    from dyafdb.errors import InputError
    from dyafdb.record.recording import recording_lock

    out = tmp_path / "rec" / "x1"
    script = ("import sys, time; from pathlib import Path; from dyafdb.record.recording import recording_lock\n"
              "with recording_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n")
    with recording_lock(out):
        with recording_lock(out):
            pass
        assert _lock_file(out).exists()  # still held by the outer one
        child = subprocess.run([sys.executable, "-c", script.replace("time.sleep(60)", "pass"), str(out)],
                               env=_env(), capture_output=True, text=True, timeout=60)
        assert child.returncode != 0 and f"pid {os.getpid()}" in child.stderr, child.stderr
    assert not _lock_file(out).exists()
    holder = subprocess.Popen([sys.executable, "-c", script, str(out)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(InputError, match=rf"pid {holder.pid} on host"):
            with recording_lock(out):
                pass
    finally:
        holder.kill()
        holder.wait()
    with recording_lock(out):  # killed: flock went with it, and its record is stale
        pass
