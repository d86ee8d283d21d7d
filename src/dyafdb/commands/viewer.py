"""Build the static conversation viewer: an index filterable by archetype, pairing, opener and any
measure; one page per conversation (waveforms, VAD segments, overlap, audio with a moving cursor,
transcript, prompts, measures, each judge's answers and raw replies); and blind annotation pages
whose answers export as the human-labels CSV of the agreement analysis. Opens from file:// or any
static server; see docs/viewer.md."""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "viewer"
HELP = "static site: conversation pages (audio, waveforms, transcript, measures, judges) and blind annotation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--out", type=Path, default=None,
                        help="site folder (default: viewer.out, else <results_dir>/site; with --annotation-only "
                             "<results_dir>/annotation-site)")
    parser.add_argument("--id", dest="ids", action="append", default=None,
                        help="only this conversation (repeatable); default every recorded conversation of the design")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="conversations prepared in parallel (audio encoding)")
    parser.add_argument("--audio", choices=("vorbis", "flac", "wav"), default=None, help="audio format (default viewer.audio)")
    parser.add_argument("--annotation-only", action="store_true",
                        help="write only the blind annotation pages and their audio, to hand to raters")
    parser.add_argument("--no-annotation", action="store_true", help="leave the annotation pages out")
    parser.add_argument("--sample", action="append", default=None, metavar="ARCHETYPE=N",
                        help="conversations to annotate per archetype (repeatable; default viewer.annotation."
                             "conversations, else the paper's T1-1=40 T1-2=60)")
    parser.add_argument("--seed", type=int, default=None, help="sampling seed (default viewer.annotation.seed, else 0)")
    parser.add_argument("--share", type=Path, default=None, metavar="BUNDLE",
                        help="build a sealed, self-contained site from a results bundle with preview or full audio "
                             "(`dyafdb bundle --preview-audio`) instead of the config's run; needs --out")


def run(args: argparse.Namespace) -> int:
    if args.share is not None:
        from dyafdb.errors import InputError
        from dyafdb.share.site import share_site

        if args.out is None:
            raise InputError("--share BUNDLE needs --out FOLDER: the site is built there")
        out = share_site(args.share, args.out, jobs=args.jobs)
        print(f"open {out / 'index.html'} (file://) or serve {out} with any static server")
        return 0
    from dyafdb.suite.ids import check_id
    from dyafdb.viewer.settings import settings_with
    from dyafdb.viewer.site import build_site

    config = load_configs(args)
    settings = settings_with(config, args.root, out=args.out, audio=args.audio, annotation_only=args.annotation_only,
                             no_annotation=args.no_annotation, sample=args.sample, seed=args.seed)
    ids = [check_id(i) for i in args.ids] if args.ids else None
    summary = build_site(config, args.root, settings, ids=ids, jobs=args.jobs, annotation_only=args.annotation_only)
    print(f"open {Path(summary.out).resolve() / 'index.html'} (file://) or serve {summary.out} with any static server")
    return 0
