"""A PersonaPlex session joining an engine: its prompt phase riding in the ticks, beside today's stall.

    python bench/bench_personaplex_prompt.py                  # engine capacities 16 and 32, 8 sessions stepping
    python bench/bench_personaplex_prompt.py --quick      # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/bench_personaplex_prompt.py --capacity 16 --sessions 14

The engine is ``PersonaPlexEngine`` (adapter ``personaplex`` in ENGINES), loaded from the tests' tiny
random checkpoint in the published layout (tests/agents/test_engine_personaplex_load.py: moshi 0.2.13's
tiny LM with the 16-codebook depformer, tiny Mimi, a 5-frame .pt voice). ``--sessions`` sessions
(4 self-play conversations by default) step in ticks; then one more session joins, twice:

* stall (``ride_along`` off, the engine before issue 28): ``open`` runs the whole prompt phase (voice
  frames, 2 x 0.5 s of silence, one LM step per text-prompt token) under the model lock while every
  other session waits: their delay is the join's wall time, in ticks;
* ride along (what the engine host does: its tick batcher turns it on): ``open`` queues the prompt and each of the others' ticks also
  runs one prompt step of the joiner, in the same LM step, until it is done: their delay per tick is
  that tick's extra time over a plain tick (at most one tick: the goal), summed over the join.

Prints one JSON line per capacity, and the table BENCHMARKS.md keeps (block ``personaplex-prompt``).
One CPU thread.
"""

from __future__ import annotations

from _figures import Bench  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("personaplex-prompt",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The tiny checkpoint writer is a test module; it imports the stand-ins and the shared test helpers.
sys.path[:0] = [str(ROOT / "tests" / d) for d in ("standins", "helpers", "agents")]


def tiny_engine(capacity: int):
    import numpy as np
    import torch

    import moshi_tiny
    import test_engine_personaplex_load as tiny
    from dyafdb.agents.engine.models import make_engine
    from dyafdb.agents.moshi import personaplex_load as load

    # The tests' tiny stand-ins for the fork's 7B configuration and its Mimi's silence/sine codes.
    load.FORK_LM_KWARGS = tiny.tiny_kwargs()
    load.mimi_config = moshi_tiny.tiny_mimi_config
    torch.manual_seed(0)
    mimi = moshi_tiny.build_mimi()
    t = np.arange(1920) / 24000.0
    with torch.no_grad():
        load.SILENCE_TOKENS = tuple(mimi.encode(torch.zeros(1, 1, 1920))[0, :, 0].tolist())
        sine = torch.tensor(0.5 * np.sin(2 * np.pi * 440 * t), dtype=torch.float32).view(1, 1, -1)
        load.SINE_TOKENS = tuple(mimi.encode(sine)[0, :, 0].tolist())
    folder = tiny.write_fork_checkpoint(Path(tempfile.mkdtemp(prefix="dyafdb-pp-")) / "ckpt")
    return make_engine("personaplex", tiny.params(folder), "pp", capacity), tiny


def measure(capacity: int, sessions: int, ticks: int) -> dict:
    import numpy as np

    engine, tiny = tiny_engine(capacity)
    batched = engine.batched
    steps = {"n": 0, "without_others": 0}
    stepping: set[int] = set()
    execute = batched._execute

    def counted(slots, embeddings=None):  # LM steps, and those in which none of the stepping sessions moved
        steps["n"] += 1
        steps["without_others"] += not (stepping & set(slots))
        return execute(slots, embeddings)

    batched._execute = counted
    try:
        slots = [engine.open(tiny.session(f"c{i // 2}", "ab"[i % 2]))[0] for i in range(sessions)]
        for slot in slots:  # their prompts, before the clock (as any session's)
            while not engine.ready(slot):
                engine.step({})
        heard = {slot: np.zeros(1920, np.float32) for slot in slots}
        stepping.update(slots)
        for _ in range(3):
            engine.step(heard)
        plain = []
        for _ in range(ticks):
            t0 = time.perf_counter()
            engine.step(heard)
            plain.append(time.perf_counter() - t0)
        tick_ms = 1000 * statistics.median(plain)

        # today's stall: the prompt phase alone, under the model lock, before the next tick
        engine.ride_along = False
        steps["n"] = steps["without_others"] = 0
        t0 = time.perf_counter()
        late, info = engine.open(tiny.session("late", "a"))
        stall_ms = 1000 * (time.perf_counter() - t0)
        stall_steps, stall_alone = steps["n"], steps["without_others"]
        engine.close(late)

        # riding along: every tick of the others carries one prompt step of the joiner
        engine.ride_along = True
        steps["n"] = steps["without_others"] = 0
        joiner, _ = engine.open(tiny.session("late", "a"))
        riding = []
        while not engine.ready(joiner):
            t0 = time.perf_counter()
            engine.step(heard)
            riding.append(time.perf_counter() - t0)
        ride_steps, ride_alone = batched.prompt_steps(joiner), steps["without_others"]
        for _ in range(ticks):  # plain ticks after it too: the machine's load drifts
            t0 = time.perf_counter()
            engine.step(heard)
            plain.append(time.perf_counter() - t0)
        tick_ms = 1000 * statistics.median(plain)
    finally:
        batched.close()
    extra = [1000 * r - tick_ms for r in riding]
    return {"capacity": capacity, "sessions_stepping": sessions, "tick_ms": round(tick_ms, 1),
            "plain_ticks_ms": [round(1000 * t, 1) for t in plain],
            "voice_frames": 5, "silence_frames": 2 * batched.audio_silence_frame_cnt,
            "text_prompt_tokens": info.extra["text_prompt_tokens"],
            "stall": {"lm_steps": stall_steps, "lm_steps_the_others_wait": stall_alone, "join_ms": round(stall_ms, 1),
                      "delay_ticks": round(stall_ms / tick_ms, 1)},
            "ride_along": {"lm_steps": ride_steps, "lm_steps_the_others_wait": ride_alone, "join_ticks": len(riding),
                           "ticks_ms": [round(1000 * t, 1) for t in riding],
                           "tick_ms": round(1000 * statistics.median(riding), 1),
                           "worst_tick_delay_ticks": round(max(extra) / tick_ms, 2),
                           "delay_summed_ticks": round(sum(extra) / tick_ms, 1)}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--capacity", default=None, help="engine sizes (default 16,32; 4 with --quick)")
    parser.add_argument("--sessions", type=int, default=None, help="sessions stepping (default 8; 2 with --quick)")
    parser.add_argument("--ticks", type=int, default=None, help="timed ticks (default 10; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="one small engine, few ticks (CI)")
    args = parser.parse_args()
    args.capacity = args.capacity or ("4" if args.quick else "16,32")
    args.sessions = args.sessions or (2 if args.quick else 8)
    args.ticks = args.ticks or (3 if args.quick else 10)
    import torch

    torch.set_num_threads(1)
    from _figures import emit, row

    results = []
    for capacity in [int(c) for c in args.capacity.split(",")]:
        results.append(measure(capacity, min(args.sessions, capacity - 1), args.ticks))
        print(json.dumps(results[-1]), flush=True)
    # Rows name no size, so a --quick run and a full one fill the same table (n differs).
    joined = [x for r in results for x in r["ride_along"]["ticks_ms"]]
    rows = [row("a tick of the stepping sessions, nobody joining", [x for r in results for x in r["plain_ticks_ms"]], "ms"),
            row("a tick carrying a joiner's prompt step", joined, "ms", "at most one tick more than above"),
            row("stall (before): LM steps of a join the others wait through",
                [r["stall"]["lm_steps_the_others_wait"] for r in results], "steps"),
            row("stall (before): the others' wait for a join", [r["stall"]["delay_ticks"] for r in results], "ticks"),
            row("ride along: LM steps of a join the others wait through",
                [r["ride_along"]["lm_steps_the_others_wait"] for r in results], "steps", "0"),
            row("ride along: ticks a join takes (one prompt step each)", [r["ride_along"]["join_ticks"] for r in results],
                "ticks")]
    emit("personaplex-prompt", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
