"""The share stage's command family (dyafdb.share): results that travel between labs.

  dyafdb share bundle ...    = dyafdb bundle ...     one checkable archive of a run
  dyafdb share compare A B   = dyafdb compare A B    two runs cell by cell
  dyafdb share verify BUNDLE = dyafdb verify BUNDLE  a bundle's schema, digests and numbers
  dyafdb share site BUNDLE   = dyafdb viewer --share BUNDLE   a sealed site from a bundle

The short forms are the ones docs and the issue name; these keep the stage's commands together.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dyafdb.commands import bundle as _bundle
from dyafdb.commands import compare as _compare

NAME = "share"
HELP = "results that travel: bundle a run, compare two runs, verify a bundle, a site from a bundle"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="share_action", metavar="bundle|compare|verify|site")
    sub.required = True
    _bundle.add_arguments(sub.add_parser("bundle", help=_bundle.HELP))
    _compare.add_arguments(sub.add_parser("compare", help=_compare.HELP))
    v = sub.add_parser("verify", help="check a bundle: schema, digests, recordings, judge answers, recomputed numbers")
    v.add_argument("bundle", type=Path)
    v.add_argument("--json", action="store_true", help="print the report as JSON")
    s = sub.add_parser("site", help="a sealed, self-contained viewer site from a bundle with preview (or full) audio")
    s.add_argument("bundle", type=Path)
    s.add_argument("--out", type=Path, required=True, help="the site folder")
    s.add_argument("--jobs", "-j", type=int, default=1, help="conversations prepared in parallel")


def run(args: argparse.Namespace) -> int:
    if args.share_action == "bundle":
        return _bundle.run(args)
    if args.share_action == "compare":
        return _compare.run(args)
    if args.share_action == "verify":
        from dyafdb.commands.verify import _bundle as verify_bundle

        return verify_bundle(args)
    from dyafdb.share.site import share_site

    out = share_site(args.bundle, args.out, jobs=args.jobs)
    print(f"open {out.resolve() / 'index.html'} (file://) or serve {out} with any static server")
    return 0
