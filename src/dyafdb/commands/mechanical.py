"""Mechanical measures from segments: turn-taking, occupancy, leak -> results/measures/<id>.json."""

from __future__ import annotations

import argparse

from dyafdb.commands._score_stage import add_score_arguments, run_stages

NAME = "mechanical"
HELP = "turn-taking, channel occupancy and secret leak per side -> results/measures/<id>.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_score_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_stages(args, ("measures",))
