"""`dyafdb <stage> ...`: one command per pipeline stage, so every Snakemake step also runs by hand.

Every command ends in one of the exit codes of :data:`EXIT_CODES` (README "Exit codes"). The
mapping from exceptions to a one-line message and a code lives in :func:`main` alone: a stage raises
(InputError, AgentError, LLMError, OSError, ...) and never prints its own traceback-free variant.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
import threading
from types import FrameType
from typing import Iterator, Sequence

import dyafdb.commands
from dyafdb import __version__
from dyafdb.errors import InputError, Terminated, describe_os_fault, is_os_fault

EXIT_CODES = {
    0: "success",
    1: "the command ran and found problems (suite check, plan --check, verify, reshard: entries left in place)",
    2: "bad input: config, scenario, override, argument (the message names the file, the field and the fix)",
    3: "an agent (model worker) failed",
    4: "an LLM judge or text model failed",
    5: "the operating system refused: disk full, folder not writable, path blocked, out of memory",
    130: "interrupted (Ctrl-C, SIGINT)",
    143: "terminated (SIGTERM: kill, the cluster's time limit)",
}


def _command_modules() -> Iterator:
    for info in sorted(pkgutil.iter_modules(dyafdb.commands.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"dyafdb.commands.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            yield module


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dyafdb", description="Dyadic evaluation of full-duplex spoken dialogue models.")
    parser.add_argument("--version", action="version", version=f"dyafdb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<stage>")
    sub.required = True
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=getattr(module, "__doc__", None))
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


class _StopOnSignal:
    """SIGINT and SIGTERM raise in the main thread, so the command unwinds: context managers close
    agent workers and pools, atomic writes remove their temporary files.

    Only the first signal raises: a second one (Ctrl-C pressed again, a scheduler that repeats its
    SIGTERM) would interrupt that cleanup and leave children behind, so it is ignored; a third one
    means the cleanup itself hangs, and the process exits at once.
    """

    def __init__(self) -> None:
        self.count = 0
        self.previous: dict[int, object] = {}

    def __enter__(self) -> "_StopOnSignal":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            # A terminal's Ctrl-C reaches the whole process group, `kill` and a scheduler's SIGTERM
            # only this process: the children (agent workers, pool workers) are told to stop either
            # way, so that none is left mid-step waiting for a bridge that is gone, and none holds
            # the unwinding up while it is asked politely.
            _signal_children(signal.SIGTERM)
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        if self.count >= 3:
            os._exit(128 + signum)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def _signal_children(sig: int) -> None:
    """Send ``sig`` to every direct child of this process (Linux /proc; elsewhere nothing)."""
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            if ppid == me:
                os.kill(int(entry), sig)
        except (OSError, ValueError, IndexError):
            continue


def _failure(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, message) for an exception a user can act on; None for a bug (its traceback helps)."""
    # imported here: numpy and asyncio come with them, which a job handed to a shared process never needs
    from dyafdb.agents.base import AgentError
    from dyafdb.llm.base import LLMError

    if isinstance(exc, InputError):
        return 2, f"error: {exc}"
    if isinstance(exc, AgentError):
        return 3, f"agent failure: {exc}"
    if isinstance(exc, LLMError):  # the message names the model, the call and what went wrong; never a key
        return 4, f"error: {exc}"
    if isinstance(exc, Terminated):
        return 143, "terminated (SIGTERM); finished outputs are kept, run the same command again to resume"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted (Ctrl-C); finished outputs are kept, run the same command again to resume"
    if is_os_fault(exc):
        return 5, f"error: {describe_os_fault(exc)}"
    return None


def _in_shared_process(argv: Sequence[str]) -> int | None:
    """A workflow job of a stage whose jobs share processes (``dyafdb.<stage>.pool``, whose variable
    the workflow sets; dyafdb.procpool) hands its command line over here, before any command is
    imported: those imports are what the shared process saves, and building the parser alone would
    cost this process ~0.3 CPU-s. Its exit code, or None to run the command here."""
    if not argv or not argv[0].isidentifier() or not any(
            key.startswith("DYAFDB_") and key.endswith("_PER_PROCESS") for key in os.environ):
        return None
    name = f"dyafdb.{argv[0]}.pool"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):  # no such stage, or it shares no processes
            return None
        raise
    from dyafdb.procpool import SharedProcesses

    for shared in vars(module).values():
        if isinstance(shared, SharedProcesses) and shared.stage == argv[0] and shared.takes(argv):
            return shared.run(argv) if shared.per_process() > 1 else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    prefix = "dyafdb"
    argv = list(sys.argv[1:] if argv is None else argv)
    with _StopOnSignal():
        try:
            shared = _in_shared_process(argv)
            if shared is not None:
                return shared
            args = build_parser().parse_args(argv)
            prefix = f"dyafdb {args.command}"
            return int(args._run(args) or 0)
        except BaseException as exc:
            failure = _failure(exc)
            if failure is None:
                raise
            print(f"{prefix}: {failure[1]}", file=sys.stderr, flush=True)
            return failure[0]


if __name__ == "__main__":
    sys.exit(main())
