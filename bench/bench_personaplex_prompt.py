"""How long a joining PersonaPlex session stalls the others in an engine (its prompt phase), tiny model.

    python bench/bench_personaplex_prompt.py                  # engine capacities 16 and 32, 8 sessions stepping
    python bench/bench_personaplex_prompt.py --quick      # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
    python bench/bench_personaplex_prompt.py --capacity 16 --sessions 14

The engine is ``PersonaPlexEngine`` (adapter ``personaplex`` in ENGINES), loaded from the tests' tiny
random checkpoint in the published layout (tests/agents/test_engine_personaplex_load.py: moshi 0.2.13's
tiny LM with the 16-codebook depformer, tiny Mimi, a 5-frame .pt voice). ``--sessions`` sessions
(4 self-play conversations by default) step in ticks; then one more session joins. The engine host
runs ``open`` under its model lock, so the join's prompt phase (voice frames, 2 x 0.5 s of silence,
one LM step per text-prompt token) is time every other session waits. One CPU thread.

Prints one JSON line per capacity: ms per tick, the join's LM steps and ms, and the stall in ticks
(join / tick). A prompt step is a full-width LM step (the exec mask keeps other rows' state but does
not skip their compute) without Mimi; a tick adds Mimi encode and decode.
"""

from __future__ import annotations

from _figures import Bench  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench()  # what bench/run.py runs and fills (bench/_figures.py)

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
    steps = {"n": 0}
    execute = batched._execute

    def counted(slots, embeddings=None):
        steps["n"] += 1
        return execute(slots, embeddings)

    batched._execute = counted
    try:
        slots = [engine.open(tiny.session(f"c{i // 2}", "ab"[i % 2]))[0] for i in range(sessions)]
        heard = {slot: np.zeros(1920, np.float32) for slot in slots}
        for _ in range(3):
            engine.step(heard)
        times = []
        for _ in range(ticks):
            t0 = time.perf_counter()
            engine.step(heard)
            times.append(time.perf_counter() - t0)
        tick_ms = 1000 * statistics.median(times)
        steps["n"] = 0
        t0 = time.perf_counter()
        _, info = engine.open(tiny.session("late", "a"))
        join_ms = 1000 * (time.perf_counter() - t0)
    finally:
        batched.close()
    return {"capacity": capacity, "sessions_stepping": sessions, "tick_ms": round(tick_ms, 1),
            "join_lm_steps": steps["n"], "voice_frames": 5, "silence_frames": 2 * batched.audio_silence_frame_cnt,
            "text_prompt_tokens": info.extra["text_prompt_tokens"], "join_ms": round(join_ms, 1),
            "ms_per_prompt_step": round(join_ms / max(steps["n"], 1), 1), "stall_ticks": round(join_ms / tick_ms, 1)}


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
    for capacity in [int(c) for c in args.capacity.split(",")]:
        print(json.dumps(measure(capacity, min(args.sessions, capacity - 1), args.ticks)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
