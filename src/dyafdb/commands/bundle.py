"""Write a run's results as one archive anyone can check: results.json (config and scenario digests,
code and package versions, every headline score with its n and interval, the answer policy, the
judges, a digest of every member), the design table, measures.tsv, judge answers, transcripts, text
channels, segments, per-recording provenance (meta.json), the analysis tables, the scenarios and
judge prompts, and optionally audio. See docs/formats.md, "Results bundle".

  dyafdb bundle [-c CONFIG] -o FILE.tar.gz|FILE.zip [--with-audio | --preview-audio] [--model M ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs

NAME = "bundle"
HELP = "write a run's results as one checkable archive (results.json, measures, judge answers, transcripts, ...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("-o", "--out", type=Path, required=True, help="the archive: FILE.tar.gz (or .tgz) or FILE.zip")
    audio = parser.add_mutually_exclusive_group()
    audio.add_argument("--with-audio", action="store_true", help="add every recording's audio.wav as recorded")
    audio.add_argument("--preview-audio", action="store_true",
                       help="add a compressed preview of each recording (OGG/Vorbis, both channels), enough for "
                            "`dyafdb viewer --share`")
    parser.add_argument("--model", action="append", default=None, metavar="M",
                        help="only the conversations M plays in (repeatable): a lab's model against the reference set")


def run(args: argparse.Namespace) -> int:
    import warnings

    from dyafdb.errors import InputError
    from dyafdb.share.bundle import write_bundle

    if not args.out.name.endswith((".tar.gz", ".tgz", ".zip")):
        raise InputError(f"-o {args.out}: a bundle is a .tar.gz, .tgz or .zip file; fix: name it e.g. results.tar.gz")
    audio = "full" if args.with_audio else "preview" if args.preview_audio else "none"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        written = write_bundle(load_configs(args), args.root, args.out, audio=audio, models=args.model)
    print(f"{written.path}: {written.conversations} conversations, {written.members} files, "
          f"{written.size / 1e6:.2f} MB, audio {written.audio}")
    return 0
