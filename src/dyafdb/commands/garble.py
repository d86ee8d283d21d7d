"""Run the garble watcher on an existing recording and print its verdict (no re-recording).

The record command runs the watcher itself for models marked ``garble_check: true`` and records
again while flagged; this command is for looking at one recording by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.paths import results_of
from dyafdb.suite.ids import check_id

NAME = "garble"
HELP = "transcribe a recording's channel(s) with Whisper and print the garble share (by hand)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--id", required=True, help="conversation id under <results_dir>/recordings/")
    parser.add_argument("--side", action="append", choices=["a", "b"],
                        help="side(s) to check (default: the sides whose model config marks garble_check)")


def run(args: argparse.Namespace) -> int:
    from dyafdb.record.garble import GarbleSettings, check_side, load_transcriber
    from dyafdb.record.recording import read_recording

    config = load_configs(args)
    rec = read_recording(Path(results_of(config, args.root).recording(check_id(args.id))))
    sides = args.side or [ch["side"] for ch in rec.meta.get("channels", [])
                          if (config["models"].get(ch["model"]) or {}).get("garble_check")]
    if not sides:
        print(f"{args.id}: no side's model is marked garble_check; pass --side a or --side b")
        return 0
    settings = GarbleSettings.from_config(config)
    transcriber = load_transcriber(settings)
    report = {side: check_side(rec, side, settings, transcriber) for side in sides}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0
