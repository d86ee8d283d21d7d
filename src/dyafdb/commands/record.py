"""Record conversations of the design table on the lockstep bridge, or check a recording by hand.

  dyafdb record --id ID [--id ...]    record (and garble-check) conversations by id
  dyafdb record garble --id ID        run the garble watcher on an existing recording, print its verdict

Ids come from the design that the config implies (the same function Snakemake uses), so no stale
table can disagree with the config. Several ids in one call reuse the loaded models. Models the
config marks ``garble_check: true`` are checked by the garble watcher and recorded again while
flagged (dyafdb.record.checked).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.errors import InputError

NAME = "record"
HELP = "record conversations (by id) into <out>/<shard>/<id>/{audio.wav,text.jsonl,meta.json,garble.json}; `record garble` checks one"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="[garble]")
    add_config_argument(parser)
    parser.add_argument("--id", dest="ids", action="append", help="conversation id (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="the recordings folder (each conversation goes to <out>/<shard>/<id>, dyafdb.paths); default: <results_dir>/recordings")
    parser.add_argument("--log-dir", type=Path, default=None, help="where worker stderr logs go")
    parser.add_argument("--in-process", action="store_true", help="run agents in this process (no workers)")
    parser.add_argument("--no-progress", action="store_true")
    garble = sub.add_parser("garble", help="transcribe a recording's channel(s) with Whisper and print the garble share (no re-recording)")
    add_config_argument(garble)
    garble.add_argument("--id", dest="garble_id", required=True, help="conversation id under <results_dir>/recordings/<shard>/")
    garble.add_argument("--side", action="append", choices=["a", "b"],
                        help="side(s) to check (default: the sides whose model config marks garble_check)")


def run(args: argparse.Namespace) -> int:
    return _garble(args) if args.action == "garble" else _record(args)


def _record(args: argparse.Namespace) -> int:
    from dyafdb.paths import results_of
    from dyafdb.record.checked import record_many_checked
    from dyafdb.suite.design import build_design, find_conversation
    from dyafdb.suite.ids import check_id

    if not args.ids:
        raise InputError("dyafdb record needs --id (repeatable), or `dyafdb record garble --id ID`")
    config = load_configs(args)
    if args.in_process:
        config["bridge"]["in_process"] = True
    config["bridge"]["progress"] = config["bridge"]["progress"] and not args.no_progress and sys.stderr.isatty()
    rows = build_design(config, args.root)
    chosen = [find_conversation(rows, check_id(cid)) for cid in args.ids]
    out = args.out or Path(results_of(config, args.root).recordings)
    for meta, garble in record_many_checked(config, chosen, out, args.root, args.log_dir):
        print(f"{meta['conversation_id']}: {meta['ticks']} ticks, end={meta['end_reason']}, wall={meta['total_wall_time_s']} s,"
              f" attempt {meta['attempt']}, garble {garble['status']}")
    return 0


def _garble(args: argparse.Namespace) -> int:
    from dyafdb.paths import results_of
    from dyafdb.record.garble import check_recording
    from dyafdb.suite.ids import check_id

    config = load_configs(args)
    report = check_recording(config, Path(results_of(config, args.root).recording(check_id(args.garble_id))), args.side)
    if report is None:
        print(f"{args.garble_id}: no side's model is marked garble_check; pass --side a or --side b")
        return 0
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0
