"""Score conversations mechanically: VAD segments, anonymised transcript, turn-taking and task
measures, each written to its own file (one job per conversation in the workflow)."""

from __future__ import annotations

import argparse

from dyafdb.commands._score_stage import add_score_arguments, run_stages

NAME = "score"
HELP = "segments + transcript + mechanical measures of recorded conversations (one job per conversation)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_score_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_stages(args, ("segments", "transcript", "measures"))
