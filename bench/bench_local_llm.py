"""What the local SmolLM2 calls cost, measured side by side in one run (one llama.cpp thread each):

    python bench/bench_local_llm.py [--archetype T1-1] [--conversations 2]
    python bench/bench_local_llm.py --quick               # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)

1. Text pairing (Appendix E, the demo's two SmolLM2 settings): one archetype's text conversations
   generated with each speaker in a KV slot of its own (reused from its second turn on) and, for
   comparison, with every turn's whole history computed again (the code before). Prints the wall and
   CPU seconds of each and whether the turns are identical run to run.
2. The embedded CPU agent's replies: the first demo conversations of the archetype recorded in one
   process with generation stopped once the reply is settled (``reply_settled``) and then run to
   ``max_tokens`` as before; prints both times and whether audio and text are bit-identical.

Run it from the repository root with the demo's config; it writes only into a temporary folder.
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("local-llm",), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent


FULL_TURNS, QUICK_TURNS = 8, 4  # config/demo.yaml's text_pairing.max_turns; --quick's: each speaker's slot reused once
# --quick: each text turn cut to this many tokens (the demo's 48 make a reply ~1.5 s on one thread, 36
# of them in the three runs); the slots, the reuse and the comparison are the same code.
QUICK_TOKENS = 12
# --quick: the agent's conversation is the demo's own 10 s T1-1 one (suite demo_window_10), not a 20 s
# one: the same record command and settled stop, half the audio, twice.
QUICK_SUITE = "demo_window_10"


def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def text_pairing(config: dict, root: Path, archetype: str, tmp: Path) -> list[dict]:
    import dyafdb.llm.text_backends as backends
    from dyafdb.text_pairing.pairing import generate

    own_slots, w1, c1 = timed(generate, config, root, archetype, tmp / "slots.jsonl", log=open(os.devnull, "w"))
    again, _, _ = timed(generate, config, root, archetype, tmp / "again.jsonl", log=open(os.devnull, "w"))
    reply = backends.Chat.reply
    backends.Chat.reply = lambda self, messages, seed, slot=None, reuse=False: reply(self, messages, seed)
    try:
        whole, w2, c2 = timed(generate, config, root, archetype, tmp / "whole.jsonl", log=open(os.devnull, "w"))
    finally:
        backends.Chat.reply = reply
    turns = sum(len(r["turns"]) for r in own_slots)
    same = [[t["text"] for t in r["turns"]] for r in own_slots] == [[t["text"] for t in r["turns"]] for r in again]
    print(f"text pairing {archetype}: {len(own_slots)} conversation(s), {turns} turns")
    print(f"  speaker slots (now):        {w1:6.1f} s wall {c1:6.1f} s CPU; the same turns when run again: {same}")
    print(f"  whole history every turn:   {w2:6.1f} s wall {c2:6.1f} s CPU  (ratio now/before {w1 / w2:.2f})")
    del whole
    if not same:
        raise SystemExit("text pairing: the same config gave other turns when run again")
    return [row(f"text pairing, one {archetype} text conversation ({FULL_TURNS} turns; --quick: {QUICK_TURNS}), each speaker in "
                "its own KV slot", [w1], "s wall"),
            row("... every turn's whole history recomputed (before)", [w2], "s wall"),
            row("... ratio now / before", [w1 / w2], "ratio", "< 1")]


def agent_replies(config: dict, root: Path, archetype: str, count: int, tmp: Path, suite: str = "demo") -> list[dict]:
    from dyafdb.agents.cascade import models as cascade_models
    from dyafdb.cli import main
    from dyafdb.suite.design import build_design

    rows = [r for r in build_design(config, root) if r.archetype == archetype and r.suite == suite][:count]
    if not rows:
        raise SystemExit(f"config/demo.yaml: suite {suite} has no {archetype} conversation: update bench/bench_local_llm.py")
    ids = [arg for r in rows for arg in ("--id", r.conversation_id)]

    def record(out: Path) -> None:
        sys.argv = ["dyafdb", "record", "-c", str(root / "config/demo.yaml"), *ids, "--no-progress", "--out", str(out)]
        try:
            main()
        except SystemExit as exc:
            if exc.code:
                raise

    def fresh_record(out: Path) -> None:
        cascade_models._speak_cached.cache_clear()  # Piper's output is cached per text: start each run cold
        record(out)

    cascade_models.get_models(1)  # load once beforehand, so neither run pays it
    _, w1, c1 = timed(fresh_record, tmp / "settled")
    chat = cascade_models.Models.chat
    cascade_models.Models.chat = lambda self, *a, settled=None, **k: chat(self, *a[:9], **k)
    try:
        _, w2, c2 = timed(fresh_record, tmp / "full")
    finally:
        cascade_models.Models.chat = chat
    same = all((tmp / "settled" / p.relative_to(tmp / "full")).read_bytes() == p.read_bytes()
               for p in (tmp / "full").rglob("*") if p.name in ("audio.wav", "text.jsonl"))
    print(f"agent replies, {len(rows)} demo conversation(s) of {archetype} ({rows[0].window_s:g} s) in one process:")
    print(f"  stop when settled (now):    {w1:6.1f} s wall {c1:6.1f} s CPU")
    print(f"  run to max_tokens (before): {w2:6.1f} s wall {c2:6.1f} s CPU  (ratio now/before {w1 / w2:.2f}); "
          f"audio and text bit-identical: {same}")
    if not same:
        raise SystemExit("agent replies: stopping once settled changed the recordings")
    return [row(f"CPU agent, demo {archetype} conversations in one process (3 unless --quick), generation stopped once "
                "the reply is settled", [c1], "CPU s"),
            row("... run to `max_tokens` (before); bit-identical audio and text", [c2], "CPU s"),
            row("... ratio now / before", [c1 / c2], "ratio", "<= 1")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archetype", default="T1-1")
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help=f"the smallest size that runs every part (CI): {QUICK_TURNS} text turns of at most {QUICK_TOKENS} "
                             f"tokens, one 10 s agent conversation ({QUICK_SUITE})")
    # --quick changes the defaults only, so an option given beside it still wins.
    if "--quick" in sys.argv[1:]:
        parser.set_defaults(conversations=1)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from dyafdb.config import load_config

    config = load_config(REPO / "config/demo.yaml")
    if config["text_pairing"]["max_turns"] != FULL_TURNS:
        raise SystemExit(f"config/demo.yaml: text_pairing.max_turns is no longer {FULL_TURNS}: update bench/bench_local_llm.py")
    if args.quick:
        config["text_pairing"]["max_turns"] = QUICK_TURNS
        for model in config["text_pairing"]["models"].values():
            model["max_tokens"] = min(model["max_tokens"], QUICK_TOKENS)
    with tempfile.TemporaryDirectory(prefix="dyafdb-llm-") as tmp:
        rows = text_pairing(config, REPO, args.archetype, Path(tmp))
        rows += agent_replies(config, REPO, args.archetype, args.conversations, Path(tmp),
                              QUICK_SUITE if args.quick else "demo")
    emit("local-llm", rows)


if __name__ == "__main__":
    main()
