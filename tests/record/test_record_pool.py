"""Shared record processes (dyafdb.record.pool on dyafdb.procpool): only with the agents in process,
none on a SLURM job step of its own, and a job that dies takes its conversation with it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from dyafdb.config import validate_config
from dyafdb.record.pool import RECORD, shares
from dyafdb.score.pool import SCORE

from conftest import scripted_config


def test_record_jobs_share_only_with_the_agents_in_process(monkeypatch):
    assert shares(validate_config(scripted_config(), "c")) == 32  # the schema's default
    assert shares(validate_config(scripted_config(in_process=False), "c")) == 1
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    monkeypatch.setenv(RECORD.env, RECORD.setting(5))
    assert RECORD.per_process() == 5 and SCORE.per_process() == 1  # each stage has its own setting
    assert RECORD.folder().name.startswith("record-")
    monkeypatch.setenv("SLURM_STEP_ID", "2")  # the jobstep executor's srun step: SLURM ends its processes
    assert RECORD.per_process() == 1


# A shared process whose conversation takes 3 s and then publishes its output (as the recorder does, atomically).
SERVER = """
import sys, time
from pathlib import Path
from dyafdb.procpool import serve

def answer(request):
    time.sleep(3)
    Path(request["argv"][0]).write_text("complete")
    return "", "", 0

serve(Path(sys.argv[1]), Path(sys.argv[2]), 4, answer)
"""


def _server(tmp_path):
    sock = tmp_path / "0.sock"
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(sock), str(tmp_path / "0.lock")])
    deadline = time.monotonic() + 60
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(sock))
    return proc, client


def test_a_job_that_dies_takes_its_conversation_with_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc, client = _server(tmp_path)
    client.sendall(json.dumps({"argv": [str(tmp_path / "out")], "cwd": str(tmp_path)}).encode() + b"\n")
    time.sleep(0.5)
    client.close()  # the job is killed mid-conversation: the kernel closes its end
    assert proc.wait(timeout=30) == 1  # the process left at once ...
    time.sleep(3)
    assert not (tmp_path / "out").exists()  # ... and published nothing after the job's end


def test_a_job_that_waits_gets_its_answer_and_the_process_stays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc, client = _server(tmp_path)
    try:
        client.sendall(json.dumps({"argv": [str(tmp_path / "out")], "cwd": str(tmp_path)}).encode() + b"\n")
        data = b""
        while chunk := client.recv(1 << 16):
            data += chunk
        assert json.loads(data)["rc"] == 0 and (tmp_path / "out").read_text() == "complete"
        time.sleep(0.5)
        assert proc.poll() is None  # the answered job closing its end does not end the process
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=30)
