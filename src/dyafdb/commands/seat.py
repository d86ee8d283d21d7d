"""A person in one seat: serve a local page where a person talks to a model under a scenario (docs/seat.md).

  dyafdb seat -c CONFIG                      the design's conversations with a person (adapter: person)
  dyafdb seat -c CONFIG --participant new    study mode: a new pseudonymous participant and their share
  dyafdb seat -c CONFIG --participant p003   carry on with participant p003
  dyafdb seat -c CONFIG --pool [p001 ...]    pool participants (default: all registered) into one results
                                             folder, <results_dir>/pool, beside the models, scored

The page also offers /listen: a model-model conversation of the design, played as it is recorded.
Recordings go where the record stage puts them (a participant's into <results_dir>/participants/<id>),
so score, judge, measures, analysis and the viewer take them as they are.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from dyafdb.commands._common import add_config_argument, load_configs
from dyafdb.errors import InputError

NAME = "seat"
HELP = "serve a local page where a person talks to a model, recorded and scored like any conversation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only; "
                        "any other needs --token)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--token", default=None, help="a secret every request must carry as ?token=; required beyond 127.0.0.1")
    parser.add_argument("--judge", action="store_true", help="after a conversation, ask the config's judges too when the "
                        "page asks for its scores (a local judge loads its model; an API judge needs its key)")
    parser.add_argument("--participant", default=None, metavar="ID|new",
                        help="study mode: a pseudonymous id (p001) or 'new' for the next one; results go to "
                             "<results_dir>/participants/<id>")
    parser.add_argument("--pool", nargs="*", default=None, metavar="ID",
                        help="instead of serving: gather these participants' recordings (none named: every registered "
                             "one) and the model-model recordings into <results_dir>/pool, score what is not scored, "
                             "and write its config, <results_dir>/pool/seat-config.yaml, for measures and analysis")


def run(args: argparse.Namespace) -> int:
    from dyafdb.seat.server import Seat, check_host, serve_seat
    from dyafdb.seat.study import (check_participant, new_participant, participant_config, seat_rows,
                                   write_participant_config)

    check_host(args.host, args.token)
    config = load_configs(args)
    seat_rows(config, args.root)  # a config without a person stops here, before a participant is registered
    if args.pool is not None:
        if args.participant is not None:
            raise InputError("--pool and --participant: pool gathers participants, it serves none; give one of them")
        return _pool(config, args)
    participant = args.participant
    if participant is not None:
        if participant == "new":
            participant = new_participant(config, args.root)
        else:
            check_participant(participant)
        config = participant_config(config, args.root, participant)
        saved = write_participant_config(config, args.root)
        print(f"participant {participant}: results in {config['results_dir']}; score them with -c {saved}", flush=True)
    seat = Seat(config, args.root, participant, args.token, judge=args.judge)
    asyncio.run(serve_seat(seat, args.host, args.port, announce=lambda line: print(line, flush=True)))
    return 0


def _pool(config: dict, args: argparse.Namespace) -> int:
    from dyafdb.paths import results_of
    from dyafdb.score.conversation import score_conversation
    from dyafdb.seat.pool import gather, pool_config, registered
    from dyafdb.seat.study import write_participant_config
    from dyafdb.suite.design import build_design

    pooled = pool_config(config, args.root, args.pool or registered(config, args.root))
    saved = write_participant_config(pooled.config, args.root)  # first: the folder's config says what it holds
    gather(pooled, args.root, log=lambda line: print(line, flush=True))
    pool = results_of(pooled.config, args.root)
    rows = build_design(pooled.config, args.root)
    scored = 0
    for row in rows:
        if not Path(pool.measures_json(row.conversation_id)).exists():
            score_conversation(pooled.config, args.root, row.conversation_id, row=row)
            scored += 1
    print(f"scored {scored} of {len(rows)} conversations here; next: `dyafdb verify -c {saved}`, "
          f"`dyafdb measures -c {saved}` (or snakemake --configfile {saved} for judge and analysis)", flush=True)
    return 0
