"""Several conversations per scoring process, one job per conversation in the plan.

Each score job is one `dyafdb score all --id ID` (the plan keeps one job per conversation: its
inputs, outputs and reruns stay per conversation), but most of a job's CPU time is the process
itself: the imports and the audio-health models (Whisper tiny.en, DNSMOS), loaded again by every
job. When the workflow sets :data:`POOL_ENV` (``score.conversations_per_process`` above 1), a job
hands its command to a scoring process that stays up for the next jobs, and prints what that
process printed; the scoring runs the same code (:func:`dyafdb.cli.main`) on the same files.

The processes live in slots on the node the jobs run on (a folder under the temporary folder, named
by the user, the working folder, the workflow process that set :data:`POOL_ENV` and, on SLURM, the
job: a new run, with whatever config or code it has, never reaches an earlier run's processes). A job takes the first free slot with a lock held
for its whole request, so each process scores one conversation at a time and there are at most as
many processes as jobs running at once; it starts the slot's process when none listens. A process
leaves after ``conversations_per_process`` conversations (so memory cannot creep) or when idle
(under the slot's lock, so no job is left waiting on it). Not on SLURM's job steps: the jobstep
executor runs each job of a group as an `srun` step of its own, whose processes SLURM stops when the
job's command ends, so there each job scores in its own process, as before (see :func:`_setting`).

A job that cannot reach a process (no room for the socket, a process that fails to start or dies
mid-conversation) says so; one that cannot start one scores in its own process as before.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Sequence

# The number of conversations one scoring process serves; set by the workflow (workflow/rules/score.smk).
POOL_ENV = "DYAFDB_SCORE_PER_PROCESS"
IDLE_S = 20.0  # a process with no job for this long leaves (Snakemake starts the next job at once)
START_TIMEOUT_S = 120.0
MAX_SLOTS = 256
_SOCKET_MAX = 100  # AF_UNIX paths are limited to ~107 bytes


def _setting() -> tuple[int, str]:
    count, _, rest = (os.environ.get(POOL_ENV) or "").partition(":")
    run, _, step = rest.partition(":")
    try:
        wanted = max(1, int(count))
    except ValueError:
        return 1, ""
    # SLURM's jobstep executor runs each job of a group as its own `srun` step, and SLURM ends a
    # step's processes with it: a process started by a job would not outlive the job. There every job
    # scores in its own process (a job in the workflow's own step, as under salloc, still shares).
    if os.environ.get("SLURM_STEP_ID", "") != step:
        return 1, run
    return wanted, run


def per_process() -> int:
    """Conversations per scoring process the workflow asked for (1: each job scores in its own)."""
    return _setting()[0]


def pool_setting(conversations: int) -> str:
    """:data:`POOL_ENV`'s value for one workflow process: the count, a name of its own (a new run,
    or an edited config or checkout, never reaches an earlier run's processes) and its SLURM step."""
    return f"{conversations}:{uuid.uuid4().hex[:16]}:{os.environ.get('SLURM_STEP_ID', '')}"


def pool_dir() -> Path:
    """This run's slots on this node (on SLURM, this SLURM job's)."""
    key = hashlib.sha256("\0".join([_setting()[1], os.getcwd(), sys.executable,
                                    os.environ.get("SLURM_JOB_ID", "")]).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"dyafdb-{os.getuid()}" / f"score-{key}"


def _request(argv: Sequence[str]) -> dict[str, Any]:
    return {"argv": list(argv), "cwd": os.getcwd()}


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def _start(folder: Path, slot: int) -> socket.socket | None:
    """Start the slot's process and connect to it (None when it does not come up)."""
    path = folder / f"{slot}.sock"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a process that died without removing it; this job holds the slot's lock
    log = open(folder / f"{slot}.log", "ab")
    env = {k: v for k, v in os.environ.items() if k != POOL_ENV}  # the process scores itself
    proc = subprocess.Popen([sys.executable, "-m", "dyafdb.score.pool", "--socket", str(path),
                             "--lock", str(folder / f"{slot}.lock"), "--conversations", str(per_process())],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)  # not the job's process group: it outlives the job
    log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists():
            sock = _connect(path)
            if sock is not None:
                return sock
        if proc.poll() is not None:
            return None
        time.sleep(0.02)
    return None


def score_in_pool(argv: Sequence[str]) -> int | None:
    """Run ``dyafdb <argv>`` in one of this run's scoring processes and print what it printed; its
    exit code, or None when no process could take it (the caller then scores in its own process)."""
    folder = pool_dir()
    if len(str(folder / f"{MAX_SLOTS}.sock")) > _SOCKET_MAX:
        return None
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for slot in range(MAX_SLOTS):
        lock = open(folder / f"{slot}.lock", "a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        try:  # this job holds the slot until its reply is in
            sock = _connect(folder / f"{slot}.sock") or _start(folder, slot)
            if sock is None:
                print(f"note: no scoring process came up in {folder} (see {slot}.log); scoring here", file=sys.stderr)
                return None
            with sock:
                sock.sendall(json.dumps(_request(argv)).encode() + b"\n")
                data = b""
                while chunk := sock.recv(1 << 16):
                    data += chunk
            if not data:
                print(f"error: the scoring process of slot {slot} ({folder}) ended before answering; "
                      f"see {folder / f'{slot}.log'}, then run the job again", file=sys.stderr)
                return 1
            reply = json.loads(data)
            sys.stdout.write(reply["stdout"])
            sys.stderr.write(reply["stderr"])
            print(f"scored in shared process {reply['pid']} (conversation {reply['served']} of at most "
                  f"{per_process()} there)", file=sys.stderr, flush=True)
            return int(reply["rc"])
        finally:
            lock.close()
    return None


def _answer(request: dict[str, Any]) -> tuple[str, str, int]:
    """Run one request with `dyafdb`'s own entry point, capturing what it prints."""
    from dyafdb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(request["argv"])
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
        except Exception:  # a bug: its traceback goes to the job's log, as the job's own process would print it
            traceback.print_exc()
            rc = 1
    return out.getvalue(), err.getvalue(), rc


def serve(path: Path, lock_path: Path, conversations: int, idle_s: float = IDLE_S) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(idle_s)
    lock = open(lock_path, "a+")
    served = 0
    try:
        while served < conversations:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                try:  # idle: leave only while no job holds the slot (one may be about to connect)
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                break
            with conn:
                conn.settimeout(None)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(1 << 16)
                    if not chunk:
                        break
                    data += chunk
                if not data.endswith(b"\n"):
                    continue
                request = json.loads(data)
                os.chdir(request["cwd"])
                out, err, rc = _answer(request)
                served += 1
                if served >= conversations:
                    # Gone before the reply: the next job finds no socket and starts a fresh process.
                    listener.close()
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                with contextlib.suppress(OSError):  # a job killed meanwhile; its outputs are written atomically
                    conn.sendall(json.dumps({"stdout": out, "stderr": err, "rc": rc, "pid": os.getpid(),
                                             "served": served}).encode())
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if served < conversations:
                path.unlink()
        lock.close()


def _main() -> None:
    parser = argparse.ArgumentParser(description="a scoring process of the workflow (dyafdb.score.pool)")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--conversations", type=int, required=True)
    parser.add_argument("--idle-s", type=float, default=IDLE_S)
    args = parser.parse_args()
    serve(args.socket, args.lock, args.conversations, args.idle_s)


if __name__ == "__main__":
    _main()
