"""Faults of out-of-process workers, end to end through `dyafdb record` (issue 15, items 5 and 8).

Each test stays within a few seconds so the whole fault suite runs in CI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import TEST_PATH, scripted_config, write_suite
from dyafdb.cli import main
from results_paths import results_at


def _probe_config(tmp_path: Path, params_a: dict, params_b: dict | None = None, **worker) -> tuple[str, str]:
    """A config with one or two probe models in workers; returns (config path, the conversation id)."""
    env = {"PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    models = {"left": {"adapter": "agents_for_tests:ProbeAgent", "params": params_a, "worker": {"env": env, **worker}}}
    if params_b is not None:
        models["right"] = {"adapter": "agents_for_tests:ProbeAgent", "params": params_b, "worker": {"env": env, **worker}}
    write_suite(tmp_path)
    cfg = scripted_config(in_process=False, models=models)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    pair = ("left", "right") if params_b is not None else ("left", "left")
    return str(path), f"t1-1-fixture-01__{pair[0]}__{pair[1]}__open-a__rep1__4s"


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent (now init) has yet to reap it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("wrapped", [False, True], ids=["worker", "worker-under-a-shell"])
def test_workers_die_with_a_killed_record_job(tmp_path, wrapped):
    """kill -9 of `dyafdb record` while a worker hangs must not leave workers running with PPID 1.

    Under a wrapper (a shell here, `conda run` on a cluster) the worker's parent outlives the bridge,
    so only the stdin watchdog can end it.
    """
    marker = tmp_path / "hanging"
    command = {"command": ["sh", "-c", f"{sys.executable} -m dyafdb.agents.worker; exit $?"]} if wrapped else {}
    config, cid = _probe_config(tmp_path, {"hang_at": 2, "hang_marker": str(marker)}, step_timeout_s=600, **command)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "dyafdb", "record", "--config", config, "--root", str(tmp_path),
                             "--id", cid, "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.time() + 30
        hanging = [Path(f"{marker}.{side}") for side in "ab"]
        while time.time() < deadline and not all(p.exists() for p in hanging):
            time.sleep(0.05)
        workers = _descendants(proc.pid)
        assert len(workers) == (4 if wrapped else 2) and all(p.exists() for p in hanging), "the workers never reached their hang"
        assert all(_alive(w) for w in workers)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "workers outlived their bridge"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for w in workers:  # never leave a stray process behind, even when the test fails
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def test_a_worker_that_exits_0_mid_run_is_reported_as_an_exit_with_its_side_and_tick(tmp_path, capsys):
    config, cid = _probe_config(tmp_path, {}, {"exit_at": 4, "exit_code": 0})
    assert main(["record", "--config", config, "--root", str(tmp_path), "--id", cid, "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "agent right (side b, tick 4): worker exited with code 0 while stepping" in err
    assert "crashed" not in err
    assert not (Path(results_at(tmp_path).recording(cid)) / "meta.json").exists()


def test_in_self_play_a_worker_error_names_the_side_and_the_tick(tmp_path, capsys):
    config, cid = _probe_config(tmp_path, {"crash_at": 6})
    assert main(["record", "--config", config, "--root", str(tmp_path), "--id", cid, "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "agent left (side a, tick 6): worker error while stepping: RuntimeError: boom" in err, err


def test_a_deleted_judge_batch_is_regenerated_even_when_measures_tsv_is_newer(tmp_path):
    """Snakemake leaves a missing intermediate file missing while everything downstream is newer,
    so a judge batch comes back only if the workflow asks for it itself: every batch must be an
    input of `rule all`, not only of measures.tsv (checked on the plan's DAG, one planning run)."""
    import re
    import shutil

    from conftest import REPO

    write_suite(tmp_path)
    shutil.copytree(REPO / "config" / "judge", tmp_path / "config" / "judge")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(scripted_config()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    dag = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory",
                          str(tmp_path), "--configfile", str(tmp_path / "config.yaml"), "--cores", "1", "--dag"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert dag.returncode == 0, dag.stderr[-2000:]
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"\\]+)', dag.stdout, re.M))
    edges = set(re.findall(r"^\s*(\d+) -> (\d+)", dag.stdout, re.M))
    [all_node] = [n for n, label in labels.items() if label == "all"]
    judges = [n for n, label in labels.items() if label == "judge"]
    assert judges and all((n, all_node) in edges for n in judges)
