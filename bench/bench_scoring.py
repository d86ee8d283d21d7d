"""Mechanical scoring time for one 60 s conversation, and its projection for the 7,560-run corpus.

Builds a 60 s stereo recording on disk (two speakers taking turns with pauses, overlaps and
backchannels; one text token per 80 ms tick while speaking, like PersonaPlex), then times what the
`score` job does: read the recording, VAD both channels, the transcript, turn-taking, occupancy
and a T4-2 leak search, writing all four files. Also times a fresh `dyafdb score` process (the
per-job cost under Snakemake: interpreter start and imports).

    python bench/bench_scoring.py [--repeats 30] [--quick]
Target: under 50 ms per conversation (in process), audio health aside: that is its own line
(and bench/bench_health.py, which takes it apart).
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("scoring",), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

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
    parser.add_argument("--repeats", type=int, default=None,
                        help="in-process runs (default 30; 3 with --quick, and one of audio health)")
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI)")
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 30)
    processes = 1 if args.quick else 3
    # audio health costs ~2.5 CPU s a run against the mechanical line's ~20 ms: --quick times it once
    health_repeats = args.repeats or (1 if args.quick else 30)
    from dyafdb.score import conversation as C

    add_health = C.add_health
    with tempfile.TemporaryDirectory() as tmp:
        root, cid = Path(tmp), "bench60"
        config = build(root, cid)
        C.score_conversation(config, root, cid)  # warm up imports, caches and the health models
        # The mechanical line is the score job without its audio-health measures (timed on their own
        # below): VAD, transcript, turn-taking, occupancy and leak, reading and writing their files.
        health: list[float] = []

        def timed_health(*a, **k):
            t0 = time.process_time()
            add_health(*a, **k)
            health.append(time.process_time() - t0)

        times, cpu = [], []
        C.add_health = lambda *a, **k: None
        try:
            for _ in range(repeats):
                t0, c0 = time.perf_counter(), time.process_time()
                C.score_conversation(config, root, cid)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            stages: dict[str, list[float]] = {}
            for stage in ("segments", "transcript", "measures"):
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    C.score_conversation(config, root, cid, [stage])
                    stages.setdefault(stage, []).append(time.perf_counter() - t0)
            C.add_health = timed_health
            for _ in range(health_repeats):
                C.score_conversation(config, root, cid, ["measures"])
        finally:
            C.add_health = add_health
        cli = []
        for _ in range(processes):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "dyafdb", "score", "--config", str(root / "config.yaml"),
                            "--root", str(root), "--id", cid], check=True, capture_output=True)
            cli.append(time.perf_counter() - t0)
    median = statistics.median(times)
    job = statistics.median(cli)
    print(f"mechanical scoring of one 60 s conversation, audio health aside (in process, median of {repeats}): "
          f"{median * 1000:.1f} ms wall, {statistics.median(cpu) * 1000:.1f} ms CPU  "
          f"[target < 50 ms: {'met' if median < 0.05 else 'NOT met'}]")
    print("  alone, each reading its inputs from disk: "
          + ", ".join(f"{k} {statistics.median(v) * 1000:.1f} ms" for k, v in stages.items()))
    print(f"audio health of the same conversation (DNSMOS, Whisper, echo, no-response; models loaded): "
          f"{statistics.median(health):.2f} CPU s")
    print(f"projection for {CORPUS:,} conversations on {CORES} cores: mechanical {CORPUS * median / CORES:.0f} s in process;"
          f" as one `dyafdb score` process per conversation, audio health included ({job:.2f} s each, interpreter,"
          f" imports and model loads included): {CORPUS * job / CORES / 3600:.1f} h")
    emit("scoring", [
        row("mechanical scoring of one 60 s conversation, audio health aside (VAD, transcript, turn-taking, "
            "occupancy, leak), in process", [t * 1000 for t in times], "ms", "< 50 ms"),
        row("audio health of the same conversation (DNSMOS, Whisper, echo, no-response), in process, models loaded",
            health, "CPU s"),
        row("one `dyafdb score` process per conversation, audio health and start-up included", cli, "s"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
