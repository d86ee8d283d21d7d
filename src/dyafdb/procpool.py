"""Several conversations per process, one workflow job per conversation in the plan.

Each score job, and each record job of in-process models, is one ``dyafdb <stage> --id ID`` (the
plan keeps one job per conversation: its inputs, outputs and reruns stay per conversation), and each
analysis job one ``dyafdb analysis ...``, but much of a job's CPU time is the process itself: the
imports and the models it loads (the audio-health models of scoring; Whisper, the Piper voice and
the llama.cpp server of the embedded CPU agent; pandas and matplotlib), again in every job. When the
workflow sets a stage's variable (:meth:`SharedProcesses.share_in_workflow`), a job hands its
command line to a process that stays up for the next jobs of that stage, and prints what that
process printed (:func:`dyafdb.cli.main` does so before it imports any command, from the stage's
``dyafdb.<stage>.pool``, so the job itself costs a bare interpreter's start); the process runs the
same entry point (:func:`dyafdb.cli.main`, through
``dyafdb.commands._pool_server``: this leaf imports no stage and not the command line) on the same
files, so every conversation builds its own state as in a process of its own and only the
process-wide model caches carry over.

The processes live in slots on the node the jobs run on (a folder under the temporary folder, named
by the stage, the user, the working folder, the workflow process that set the variable and, on
SLURM, the job: a new run, with whatever config or code it has, never reaches an earlier run's
processes). A job takes the first free slot with a lock held for its whole request, so each process
serves one conversation at a time and there are at most as many processes as jobs running at once;
it starts the slot's process when none listens. A process leaves after its count of conversations
(so memory cannot creep) or when idle (under the slot's lock, so no job is left waiting on it). Not
on SLURM's job steps: the jobstep executor runs each job of a group as an `srun` step of its own,
whose processes SLURM stops when the job's command ends, so there each job runs in its own process,
as before (see :meth:`SharedProcesses.per_process`).

A job that dies (killed, timed out) takes its conversation with it: the process notices the job's
connection closing before its answer and exits at once, before it can publish anything, so no
output of a dead job appears later (outputs are written atomically: none or complete). A job that
cannot reach a process (no room for the socket, a process that fails to start or dies
mid-conversation) says so; one that cannot start one runs in its own process as before.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

IDLE_S = 20.0  # a process with no job for this long leaves (Snakemake starts the next job at once)
START_TIMEOUT_S = 120.0
MAX_SLOTS = 256
_SOCKET_MAX = 100  # AF_UNIX paths are limited to ~107 bytes
# The module a shared process runs (it answers with dyafdb.cli.main); named, not imported, here.
SERVER_MODULE = "dyafdb.commands._pool_server"

Answer = Callable[[dict[str, Any]], "tuple[str, str, int]"]


@dataclass(frozen=True)
class SharedProcesses:
    """The shared processes of one stage: ``env`` carries the workflow's setting to its jobs,
    ``verb`` names what a process did in the job's log ("scored in shared process 123 ..."), and
    ``unit`` what one request is there ("conversation 3 of at most 32")."""

    stage: str
    env: str
    verb: str
    unit: str = "conversation"
    # Which of the stage's command lines go to a shared process (dyafdb.cli hands them over): all of them,
    # unless the stage says otherwise (record: not its garble checks, which the workflow runs as their own jobs).
    takes: Callable[[Sequence[str]], bool] = lambda argv: True

    def _setting(self) -> tuple[int, str]:
        count, _, rest = (os.environ.get(self.env) or "").partition(":")
        run, _, step = rest.partition(":")
        try:
            wanted = max(1, int(count))
        except ValueError:
            return 1, ""
        # SLURM's jobstep executor runs each job of a group as its own `srun` step, and SLURM ends a
        # step's processes with it: a process started by a job would not outlive the job. There every
        # job runs in its own process (a job in the workflow's own step, as under salloc, still shares).
        if os.environ.get("SLURM_STEP_ID", "") != step:
            return 1, run
        return wanted, run

    def per_process(self) -> int:
        """Conversations per process the workflow asked for (1: each job runs in its own)."""
        return self._setting()[0]

    def setting(self, conversations: int) -> str:
        """:attr:`env`'s value for one workflow process: the count, a name of its own (a new run, or
        an edited config or checkout, never reaches an earlier run's processes) and its SLURM step."""
        return f"{conversations}:{uuid.uuid4().hex[:16]}:{os.environ.get('SLURM_STEP_ID', '')}"

    def share_in_workflow(self, per_process: int) -> None:
        """Set (or, for 1, clear) :attr:`env` in the workflow's own process, whose jobs inherit it:
        through the environment, like the config files, so neither a job's shell command nor its
        params change and changing the count reruns nothing."""
        if per_process > 1:
            os.environ[self.env] = self.setting(per_process)
        else:
            os.environ.pop(self.env, None)

    def folder(self) -> Path:
        """This run's slots of this stage on this node (on SLURM, this SLURM job's)."""
        key = hashlib.sha256("\0".join([self._setting()[1], os.getcwd(), sys.executable,
                                        os.environ.get("SLURM_JOB_ID", "")]).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"dyafdb-{os.getuid()}" / f"{self.stage}-{key}"

    def _start(self, folder: Path, slot: int) -> socket.socket | None:
        """Start the slot's process and connect to it (None when it does not come up)."""
        path = folder / f"{slot}.sock"
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a process that died without removing it; this job holds the slot's lock
        log = open(folder / f"{slot}.log", "ab")
        env = {k: v for k, v in os.environ.items() if k != self.env}  # the process runs the command itself
        proc = subprocess.Popen([sys.executable, "-m", SERVER_MODULE, "--socket", str(path),
                                 "--lock", str(folder / f"{slot}.lock"), "--conversations", str(self.per_process())],
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

    def run(self, argv: Sequence[str]) -> int | None:
        """Run ``dyafdb <argv>`` in one of this run's processes and print what it printed; its exit
        code, or None when no process could take it (the caller then runs it in its own process)."""
        folder = self.folder()
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
                return self._ask(folder, slot, argv)
            finally:
                lock.close()
        return None

    def _ask(self, folder: Path, slot: int, argv: Sequence[str]) -> int | None:
        env = {k: v for k, v in os.environ.items() if k != self.env}  # the process runs it itself
        request = json.dumps({"argv": list(argv), "cwd": os.getcwd(), "env": env}).encode() + b"\n"
        sock = _connect(folder / f"{slot}.sock") or self._start(folder, slot)
        for fresh in (False, True):
            if sock is None:
                print(f"note: no shared {self.stage} process came up in {folder} (see {slot}.log); running here",
                      file=sys.stderr)
                return None
            try:
                with sock:
                    sock.sendall(request)
                    data = b""
                    while chunk := sock.recv(1 << 16):
                        data += chunk
                break
            except (ConnectionResetError, BrokenPipeError):
                # The process went as this job connected (killed with an earlier job, or leaving after its
                # count) and never read the request: a reset means it lay unread, so nothing of this job ran
                # there. Once, in a fresh process; a process that read the request and died answers empty.
                if fresh:
                    raise
                sock = self._start(folder, slot)
        if not data:
            print(f"error: the shared {self.stage} process of slot {slot} ({folder}) ended before answering; "
                  f"see {folder / f'{slot}.log'}, then run the job again", file=sys.stderr)
            return 1
        reply = json.loads(data)
        sys.stdout.write(reply["stdout"])
        sys.stderr.write(reply["stderr"])
        print(f"{self.verb} in shared process {reply['pid']} ({self.unit} {reply['served']} of at most "
              f"{self.per_process()} there)", file=sys.stderr, flush=True)
        return int(reply["rc"])


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def _exit_when_the_job_goes(conn: socket.socket, answered: threading.Event) -> None:
    """The job sends nothing after its request: the connection reads empty only once it is closed.
    Closed before the answer, the job is gone (killed, timed out) and its conversation with it: the
    process exits at once, so nothing of that conversation is published after the job's end."""
    with contextlib.suppress(OSError):
        conn.recv(1)
    if not answered.is_set():
        print(f"the job went before its conversation ended; process {os.getpid()} exits", file=sys.stderr, flush=True)
        os._exit(1)


def serve(path: Path, lock_path: Path, conversations: int, answer: Answer, idle_s: float = IDLE_S) -> None:
    """Answer requests on the socket ``path`` with ``answer`` (one at a time) until ``conversations``
    are done or none came for ``idle_s`` while no job held the slot's lock ``lock_path``."""
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
                answered = threading.Event()
                threading.Thread(target=_exit_when_the_job_goes, args=(conn, answered), daemon=True).start()
                os.chdir(request["cwd"])
                if "env" in request:  # the job's own (its config files, its threads), not the first job's
                    os.environ.clear()
                    os.environ.update(request["env"])
                out, err, rc = answer(request)
                answered.set()
                served += 1
                if served >= conversations:
                    # Gone before the reply: the next job finds no socket and starts a fresh process.
                    listener.close()
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                with contextlib.suppress(OSError):  # the job killed meanwhile; its outputs are written atomically
                    conn.sendall(json.dumps({"stdout": out, "stderr": err, "rc": rc, "pid": os.getpid(),
                                             "served": served}).encode())
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)  # wakes the watcher, which sees the answer given
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if served < conversations:
                path.unlink()
        lock.close()


def serve_main(answer: Answer, argv: Sequence[str] | None = None) -> None:
    """The command line of a shared process (started by :meth:`SharedProcesses.run`)."""
    parser = argparse.ArgumentParser(description="a shared process of the workflow (dyafdb.procpool)")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--conversations", type=int, required=True)
    parser.add_argument("--idle-s", type=float, default=IDLE_S)
    args = parser.parse_args(argv)
    serve(args.socket, args.lock, args.conversations, answer, args.idle_s)
