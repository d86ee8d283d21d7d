"""Record conversations of the design table on the lockstep bridge.

Ids come from the design that the config implies (the same function Snakemake uses), so no stale
table can disagree with the config. Several ids in one call reuse the loaded models.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.paths import results_of
from dyafdb.suite.design import build_design, find_conversation
from dyafdb.suite.ids import check_id

NAME = "record"
HELP = "record one or more conversations (by id) into <out>/<id>/{audio.wav,text.jsonl,meta.json,garble.json}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--id", dest="ids", action="append", required=True, help="conversation id (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="default: <results_dir>/recordings")
    parser.add_argument("--log-dir", type=Path, default=None, help="where worker stderr logs go")
    parser.add_argument("--in-process", action="store_true", help="run agents in this process (no workers)")
    parser.add_argument("--no-progress", action="store_true")


def run(args: argparse.Namespace) -> int:
    from dyafdb.record.garble import record_many_checked

    config = load_configs(args)
    if args.in_process:
        config["bridge"]["in_process"] = True
    config["bridge"]["progress"] = config["bridge"].get("progress", True) and not args.no_progress and sys.stderr.isatty()
    rows = build_design(config, args.root)
    chosen = [find_conversation(rows, check_id(cid)) for cid in args.ids]
    out = args.out or Path(results_of(config, args.root).recordings)
    # Models config marks garble_check are checked by the garble watcher and recorded again while flagged.
    for meta, garble in record_many_checked(config, chosen, out, args.root, args.log_dir):
        print(f"{meta['conversation_id']}: {meta['ticks']} ticks, end={meta['end_reason']}, wall={meta['total_wall_time_s']} s,"
              f" attempt {meta['attempt']}, garble {garble['status']}")
    return 0
