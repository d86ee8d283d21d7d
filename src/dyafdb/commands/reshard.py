"""Move a results folder written before the shards into them.

  dyafdb reshard [--config FILE] [--dry-run]

Earlier versions put every per-conversation file directly in its folder (``recordings/<id>/``,
``segments/<id>.json``, ``logs/record/<id>.log``, ...); now each sits in its shard
(``recordings/<shard>/<id>/``, :mod:`dyafdb.paths`). Without this move the workflow would see no
recording where it looks and record all of them again; `dyafdb plan --check`, the workflow's
preflight and `dyafdb status` say so and name this command. Each entry is renamed in place (same
file system, nothing copied, times kept, so Snakemake sees the outputs as up to date); one whose
place in the shard is already taken is left where it is and named. Snakemake's own records of the
moved outputs (under .snakemake/) stay keyed by the old paths, so a params or code change made
before the move no longer reruns their jobs: finish or rerun such a change first.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.paths import Results, flat_layout_entries, results_of, sharded

NAME = "reshard"
HELP = "move per-conversation results of the old flat layout (recordings/<id>/ ...) into their shard folders"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="list what would move, move nothing")


def reshard(results: Results, dry_run: bool = False) -> tuple[list[tuple[Path, Path]], list[Path]]:
    """Move every flat entry into its shard: (moved as (old, new), left in place because taken)."""
    moved: list[tuple[Path, Path]] = []
    taken: list[Path] = []
    for old, cid in list(flat_layout_entries(results)):
        new = Path(sharded(str(old.parent), cid, old.name[len(cid):]))
        if new.exists():
            taken.append(old)
            continue
        moved.append((old, new))
        if dry_run:
            continue
        if new.parent == old:
            # An id without "__" is its own shard: recordings/c1/ becomes recordings/c1/c1/, so the
            # folder steps aside under a hidden name first (hidden entries are never results).
            aside = old.with_name(f".reshard-{old.name}-{os.getpid()}")
            os.rename(old, aside)
            old.mkdir()
            os.rename(aside, new)
        else:
            new.parent.mkdir(parents=True, exist_ok=True)
            os.rename(old, new)
    return moved, taken


def run(args: argparse.Namespace) -> int:
    config = load_configs(args)
    results = results_of(config, args.root)
    moved, taken = reshard(results, args.dry_run)
    verb = "would move" if args.dry_run else "moved"
    print(f"{results.root}: {verb} {len(moved)} per-conversation entries into their shard folders")
    for old, new in moved[:5]:
        print(f"  {old} -> {new}")
    if len(moved) > 5:
        print(f"  ... and {len(moved) - 5} more")
    if taken:
        print(f"{len(taken)} left in place, their place in the shard is taken (compare and delete one by hand):")
        for old in taken:
            print(f"  {old}")
        return 1
    return 0
