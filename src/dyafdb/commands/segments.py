"""Energy VAD on the 80 ms grid: results/segments/<id>.json (half-open frame intervals per channel)."""

from __future__ import annotations

import argparse

from dyafdb.commands._score_stage import add_score_arguments, run_stages

NAME = "segments"
HELP = "VAD segments of recorded conversations -> results/segments/<id>.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_score_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_stages(args, ("segments",))
