"""Mechanical scoring time for one 60 s conversation, and its projection for the 7,560-run corpus.

Builds a 60 s stereo recording on disk (two speakers taking turns with pauses, overlaps and
backchannels; one text token per 80 ms tick while speaking, like PersonaPlex), then times what the
`score` job does: read the recording, VAD both channels, the transcript, turn-taking, occupancy
and a T4-2 leak search, writing all four files. Also times a fresh `dyafdb score` process (the
per-job cost under Snakemake: interpreter start and imports).

    python bench/bench_scoring.py [--repeats 30]
Target: under 50 ms per conversation (in process).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from dyafdb.paths import Results
from dyafdb.clock import FRAME_SAMPLES, FRAME_SECONDS, SAMPLE_RATE
from dyafdb.record.recording import Recording, Token, write_recording
import _testpath  # noqa: F401 (puts tests/helpers on the path)
from synthetic_suite import write_suite

CORPUS = 7_560
CORES = 2


def synthetic_segments(ticks: int, rng: np.random.Generator) -> dict[str, list[tuple[int, int]]]:
    """Alternating turns of 1-6 s with 0.2-1.5 s gaps, some overlap, and short backchannels."""
    segs: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}
    t, side = 0, "a"
    while t < ticks - 10:
        length = int(rng.integers(12, 75))
        segs[side].append((t, min(t + length, ticks)))
        other = "b" if side == "a" else "a"
        if length > 30 and rng.random() < 0.5:  # a backchannel from the listener
            s = t + int(rng.integers(5, length - 15))
            segs[other].append((s, s + int(rng.integers(3, 10))))
        t += length + int(rng.integers(-6, 19))  # negative: the next turn starts in overlap
        side = other
    for side in segs:  # tidy: sorted, non-overlapping within a channel
        merged: list[tuple[int, int]] = []
        for s, e in sorted(segs[side]):
            s = max(s, 0)
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
            else:
                merged.append((s, e))
        segs[side] = merged
    return segs


def build(root: Path, cid: str) -> dict:
    write_suite(root, archetypes=["T4-2"])
    config = {"scenarios_dir": "scenarios", "results_dir": "results",
              "models": {"m1": {"adapter": "null", "label": "Model One"}, "m2": {"adapter": "null"}},
              "suites": {"s": {"models": ["m1", "m2"], "archetypes": ["T4-2"], "repetitions": 1, "window_s": 60}}}
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    rng = np.random.default_rng(0)
    ticks = 750
    segs = synthetic_segments(ticks, rng)
    audio = np.zeros((2, ticks * FRAME_SAMPLES), dtype=np.float32)
    tokens = []
    words = "the cottage number is something I cannot share with you today sorry".split()
    for i, side in enumerate("ab"):
        for s, e in segs[side]:
            noise = rng.standard_normal((e - s) * FRAME_SAMPLES).astype(np.float32) * 0.05
            audio[i, s * FRAME_SAMPLES:e * FRAME_SAMPLES] = noise
            tokens += [Token(side, t, " " + words[t % len(words)]) for t in range(max(s - 3, 0), e)]
    meta = {"conversation_id": cid, "archetype": "T4-2", "scenario": "t4-2-fixture-01", "opener": "a", "attempt": 1,
            "sample_rate": SAMPLE_RATE, "frame_samples": FRAME_SAMPLES, "frame_seconds": FRAME_SECONDS, "ticks": ticks}
    write_recording(Recording(audio, sorted(tokens, key=lambda t: t.tick), meta), Path(Results(str(root / "results")).recording(cid)))
    from dyafdb.config import load_config

    return load_config(root / "config.yaml")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    from dyafdb.score.conversation import score_conversation

    with tempfile.TemporaryDirectory() as tmp:
        root, cid = Path(tmp), "bench60"
        config = build(root, cid)
        score_conversation(config, root, cid)  # warm up imports and caches
        times, cpu = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            score_conversation(config, root, cid)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        stages = {}
        for stage in ("segments", "transcript", "measures"):
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                score_conversation(config, root, cid, [stage])
            stages[stage] = (time.perf_counter() - t0) / args.repeats
        cli = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "dyafdb", "score", "--config", str(root / "config.yaml"),
                            "--root", str(root), "--id", cid], check=True, capture_output=True)
            cli.append(time.perf_counter() - t0)
    median = statistics.median(times)
    job = statistics.median(cli)
    print(f"mechanical scoring of one 60 s conversation (in process, median of {args.repeats}): {median * 1000:.1f} ms"
          f" wall, {statistics.median(cpu) * 1000:.1f} ms CPU  [target < 50 ms: {'met' if median < 0.05 else 'NOT met'}]")
    print("  alone, each reading its inputs from disk: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in stages.items()))
    print(f"projection for {CORPUS:,} conversations on {CORES} cores: {CORPUS * median / CORES:.0f} s in process;"
          f" as one `dyafdb score` process per conversation ({job * 1000:.0f} ms each, interpreter and imports"
          f" included): {CORPUS * job / CORES / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
