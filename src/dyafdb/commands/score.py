"""Score recorded conversations mechanically, one job per conversation in the workflow.

  dyafdb score [all] --id ID         segments + transcript + mechanical measures
  dyafdb score segments --id ID      energy VAD on the 80 ms grid -> <results_dir>/segments/<shard>/<id>.json
  dyafdb score transcript --id ID    anonymised transcript (Speaker A/B) -> <results_dir>/transcripts/<shard>/<id>.{txt,json}
  dyafdb score mechanical --id ID    turn-taking, occupancy, leak -> <results_dir>/measures/<shard>/<id>.json

Each stage writes its own file and reads the files of the stages before it.
"""

from __future__ import annotations

import argparse
import time

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "score"
HELP = "segments, transcript and mechanical measures of recorded conversations (all, or one stage)"

# command word -> dyafdb.score.conversation stage(s)
STAGES = {"all": ("segments", "transcript", "measures"), "segments": ("segments",), "transcript": ("transcript",),
          "mechanical": ("measures",)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stage", nargs="?", choices=list(STAGES), default="all", help="what to compute (default: all)")
    add_config_argument(parser)
    parser.add_argument("--id", dest="ids", action="append", required=True,
                        help="conversation id (repeatable); reads <results_dir>/recordings/<shard>/<id>/")


def run(args: argparse.Namespace) -> int:
    from dyafdb.score.conversation import score_conversation
    from dyafdb.suite.design import build_design
    from dyafdb.suite.ids import check_id

    config = load_configs(args)
    stages = STAGES[args.stage]
    # Each recording is checked against its design row (score.check.check_identity); an id outside
    # the design (a recording made by hand) is checked against its own folder name only.
    design = {row.conversation_id: row for row in build_design(config, args.root)}
    for cid in map(check_id, args.ids):
        t0 = time.perf_counter()
        paths = score_conversation(config, args.root, cid, stages, row=design.get(cid))
        wrote = {"segments": paths.segments, "transcript": paths.transcript_txt, "measures": paths.measures}
        print(f"{cid}: {', '.join(str(wrote[s]) for s in stages)} ({(time.perf_counter() - t0) * 1000:.0f} ms)")
    return 0
