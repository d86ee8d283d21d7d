"""Ctrl-C and SIGTERM stop every command within seconds: one line, the documented exit code, no
traceback, and no process of it left behind (pool workers, agent workers), none re-parented to PID 1.

Each command runs in its own session, so whatever it starts can be found by session id in /proc even
after its parent is gone. Ctrl-C is sent to the whole process group, as a terminal does; SIGTERM to
the command alone, as `kill` and a cluster's time limit do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
import yaml

from conftest import REPO, TEST_PATH
from scoring_fixtures import write_project

SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143)}
STOP_WITHIN_S = 10.0


def session_members(sid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live process of session ``sid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append((int(entry.name), cmd))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), TEST_PATH]), **(extra or {})}


def stop_and_check(proc: subprocess.Popen, busy: Callable[[], bool], name: str, code: int, sig: int,
                   started_children: int) -> str:
    """Wait until ``busy()``, send ``sig``, and check the command ended as documented, leaving nothing."""
    deadline = time.monotonic() + 120
    while not busy():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{name} never got busy"
        time.sleep(0.05)
    assert len(session_members(proc.pid)) >= 1 + started_children, session_members(proc.pid)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{name} did not stop within {STOP_WITHIN_S} s of {signal.Signals(sig).name}")
    took = time.monotonic() - t0
    left = []
    until = time.monotonic() + 5
    while time.monotonic() < until:
        left = session_members(proc.pid)
        if not left:
            break
        time.sleep(0.1)
    for pid, _ in left:  # leave no stray process to the next test, then fail
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"{name}: processes left after {signal.Signals(sig).name}: {left}"
    assert "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if line.startswith("dyafdb ")]
    assert proc.returncode == code and len(lines) == 1, (proc.returncode, err)
    assert took < STOP_WITHIN_S
    return lines[0]


# ---------------------------------------------------------------------------- viewer --jobs 2

# The pool workers are forked from this wrapper, so they inherit a libsndfile write that first says
# it began (a marker file per worker) and then takes a minute: a stand-in for encoding long audio.
SLOW_VIEWER = """
import os, sys, time
from pathlib import Path
import soundfile
_write = soundfile.write
def slow_write(file, *args, **kwargs):
    Path(os.environ["BUSY_DIR"], str(os.getpid())).touch()
    time.sleep(60)
    return _write(file, *args, **kwargs)
soundfile.write = slow_write
from dyafdb.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    from dyafdb.cli import main
    from dyafdb.config import load_config
    from dyafdb.suite.design import build_design

    root = tmp_path_factory.mktemp("interrupts")
    write_project(root, ["T1-1"])
    ids = [x for r in build_design(load_config(root / "config.yaml"), root) for x in ("--id", r.conversation_id)]
    c = ["-c", str(root / "config.yaml"), "--root", str(root)]
    assert main(["record", *ids, "--no-progress", *c]) == 0
    assert main(["score", *ids, *c]) == 0
    return root


@pytest.mark.parametrize("signame", sorted(SIGNALS))
def test_viewer_with_a_pool_stops_and_leaves_no_worker(signame, recorded, tmp_path):
    sig, code = SIGNALS[signame]
    busy_dir = tmp_path / "busy"
    busy_dir.mkdir()
    site = tmp_path / "site"
    argv = ["viewer", "--jobs", "2", "--no-annotation", "--out", str(site), "-c", str(recorded / "config.yaml"),
            "--root", str(recorded)]
    proc = subprocess.Popen([sys.executable, "-c", SLOW_VIEWER, *argv], env=_env({"BUSY_DIR": str(busy_dir)}),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    line = stop_and_check(proc, lambda: len(list(busy_dir.iterdir())) >= 2, "viewer --jobs 2", code, sig, 2)
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in line
    assert not (site / "index.html").exists()
    # the workers were killed inside an atomic write: their temporary files went with them
    assert [p for p in site.rglob("*") if p.is_file() and p.name.startswith(".")] == []


# ---------------------------------------------------------------------------- record with workers


@pytest.mark.parametrize("signame", sorted(SIGNALS))
def test_record_with_agent_workers_stops_and_leaves_no_worker(signame, tmp_path):
    sig, code = SIGNALS[signame]
    marker = tmp_path / "hung"
    probe = {"adapter": "agents_for_tests:ProbeAgent", "params": {"hang_at": 3, "hang_marker": str(marker)},
             "worker": {"step_timeout_s": 600}}
    write_project(tmp_path, ["T1-1"], models={"slow": probe, "other": probe}, window_s=2.0,
                  extra={"bridge": {"in_process": False, "progress": False}})
    cid = "t1-1-fixture-01__other__slow__open-a__rep1__2s"
    argv = ["record", "--id", cid, "--no-progress", "-c", str(tmp_path / "config.yaml"), "--root", str(tmp_path)]
    proc = subprocess.Popen([sys.executable, "-m", "dyafdb", *argv], env=_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    stop_and_check(proc, lambda: any(tmp_path.glob("hung.*")), "record", code, sig, 2)
    recordings = tmp_path / "results" / "recordings"
    assert not list(recordings.rglob("meta.json")) and not list(recordings.rglob(".partial-*"))


# ---------------------------------------------------------------------------- judge mid-batch


@pytest.mark.parametrize("signame", sorted(SIGNALS))
def test_judge_mid_batch_stops_in_one_line(signame, recorded, tmp_path):
    from judge_stub import Stub

    sig, code = SIGNALS[signame]
    stub = Stub()
    stub.answer = lambda messages: (time.sleep(30), "ANSWER: yes")[1]
    try:
        config = yaml.safe_load((recorded / "config.yaml").read_text())
        config["judge"] = {"judges": {"local": {"backend": "openai", "model": "qwen", "base_url": stub.url + "/v1",
                                                "api_key_env": None}},
                           "prompts_dir": str(REPO / "config" / "judge"), "cache_dir": str(tmp_path / "cache")}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        argv = ["judge", "-c", str(tmp_path / "config.yaml"), "--root", str(recorded)]
        proc = subprocess.Popen([sys.executable, "-m", "dyafdb", *argv], env=_env(), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        stop_and_check(proc, lambda: len(stub.requests) >= 1, "judge", code, sig, 0)
    finally:
        stub.close()
