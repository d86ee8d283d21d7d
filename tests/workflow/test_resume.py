"""A killed recording job leaves nothing that looks complete, and a rerun records it again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conftest import REPO, TEST_PATH, TESTS_DIR, scripted_config, write_suite
from results_paths import RESULTS, results_at

CID = "t1-1-fixture-01__slow__slow__open-a__rep1__10s"


def snakemake(tmp: Path, *args: str, **kw) -> subprocess.CompletedProcess | subprocess.Popen:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp),
           "--configfile", str(tmp / "config.yaml"), "--cores", "1", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    if kw.get("background"):
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_killed_recording_is_not_complete_and_reruns(tmp_path):
    write_suite(tmp_path)
    cfg = scripted_config(window_s=10, in_process=False,
                          models={"slow": {"adapter": "agents_for_tests:ProbeAgent", "params": {"sleep_s": 0.03}}})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    target = RESULTS.recording_file(CID, "meta.json")
    rec_dir = Path(results_at(tmp_path).recording(CID))

    proc = snakemake(tmp_path, target, background=True)
    deadline = time.time() + 120
    started = Path(results_at(tmp_path).worker_log_dir(CID))  # created when the job builds its agents
    while time.time() < deadline and not started.exists():
        time.sleep(0.05)
    assert started.exists(), "the record job never started"
    time.sleep(1.5)  # well inside the 125-tick run (~4 s)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    assert not (rec_dir / "meta.json").exists()
    assert not (rec_dir / "audio.wav").exists()
    snakemake(tmp_path, "--unlock")
    plan = snakemake(tmp_path, target, "-n")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "record" in plan.stdout and CID in plan.stdout

    done = snakemake(tmp_path, target)
    assert done.returncode == 0, done.stdout + done.stderr
    meta = yaml.safe_load((rec_dir / "meta.json").read_text())
    assert meta["complete"] and meta["ticks"] == 125
    assert not list(rec_dir.parent.glob(".partial-*"))
    assert "Nothing to be done" in snakemake(tmp_path, target, "-n").stdout
