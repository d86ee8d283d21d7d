"""Shared by the per-conversation scoring commands (score, segments, transcript, mechanical)."""

from __future__ import annotations

import argparse
import time
from typing import Sequence

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.suite.ids import check_id


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--id", dest="ids", action="append", required=True,
                        help="conversation id (repeatable); reads <results_dir>/recordings/<id>/")


def run_stages(args: argparse.Namespace, stages: Sequence[str]) -> int:
    from dyafdb.score.conversation import score_conversation

    config = load_configs(args)
    for cid in map(check_id, args.ids):
        t0 = time.perf_counter()
        paths = score_conversation(config, args.root, cid, stages)
        wrote = {"segments": paths.segments, "transcript": paths.transcript_txt, "measures": paths.measures}
        print(f"{cid}: {', '.join(str(wrote[s]) for s in stages)} ({(time.perf_counter() - t0) * 1000:.0f} ms)")
    return 0
