"""Anonymised transcripts from segments and text channels: results/transcripts/<id>.{txt,json}."""

from __future__ import annotations

import argparse

from dyafdb.commands._score_stage import add_score_arguments, run_stages

NAME = "transcript"
HELP = "anonymised transcript (Speaker A/B) from segments and text tokens -> results/transcripts/<id>.txt"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_score_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return run_stages(args, ("transcript",))
