"""`dyafdb <stage> ...`: one command per pipeline stage, so every Snakemake step also runs by hand."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Sequence

import dyafdb.commands
from dyafdb import __version__
from dyafdb.agents.base import AgentError
from dyafdb.errors import InputError
from dyafdb.llm.base import LLMError


def _command_modules():
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except InputError as exc:
        print(f"dyafdb {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except AgentError as exc:
        print(f"dyafdb {args.command}: agent failure: {exc}", file=sys.stderr)
        return 3
    except LLMError as exc:  # the message names the model, the call and what went wrong; never a key
        print(f"dyafdb {args.command}: error: {exc}", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
