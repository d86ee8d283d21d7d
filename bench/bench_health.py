"""Added scoring time of the audio health measures (dyafdb.score.health) per conversation.

Builds conversations of real speech (the packaged Piper voice; the two sides take turns with
0.5-1 s gaps, each side's words as its text tokens), then times, in process on one thread, what
the score job adds to the mechanical scoring: DNSMOS on each side's speech, Whisper tiny.en on each
side's speech (and its model load, once per job), echo and no-response. Two shapes: a 60 s
conversation (about 27 s of speech per side) and a demo conversation (20 s). Also times one
``dyafdb score`` process on the 60 s conversation, health included, against the same process with
``health.asr: false``. --quick measures one 20 s conversation for both shapes (and the processes).

    python bench/bench_health.py [--repeats 3] [--quick]
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("health",), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

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
from scoring_fixtures import piper_speech
from synthetic_suite import write_suite

LINES = ["The quick brown fox jumps over the lazy dog near the river bank before sunrise",
         "I think we should meet at the library tomorrow afternoon to finish the plan",
         "That sounds fine to me but could we make it a little later in the day",
         "Sure, let us say four o'clock at the main entrance next to the coffee shop",
         "Do you remember which of the three rooms on the second floor we booked last time",
         "It was the small one with the broken window, so maybe ask for another room",
         "Good idea, I will call the front desk and check what they have available",
         "Thanks, and please bring the printed notes because my laptop battery is dying",
         "No problem, I still have the folder with the drawings from our first meeting",
         "Perfect, then we can compare both versions and decide on the final layout"]
DEMO_CONVERSATIONS = 72  # the demo's conversations (10-20 s windows)
CORES = 2


def conversation(seconds: float, rng: np.random.Generator) -> Recording:
    ticks = int(round(seconds / FRAME_SECONDS))
    audio = np.zeros((2, ticks * FRAME_SAMPLES), dtype=np.float32)
    tokens: list[Token] = []
    t, side, i = 2, 0, 0
    while True:
        line = LINES[i % len(LINES)]
        speech = piper_speech(line)
        n = len(speech) // FRAME_SAMPLES
        if t + n >= ticks:
            break
        audio[side, t * FRAME_SAMPLES:t * FRAME_SAMPLES + len(speech)] = speech
        words = line.split()
        tokens += [Token("ab"[side], t + (j * n) // len(words), " " + w) for j, w in enumerate(words)]
        t += n + int(rng.integers(6, 13))
        side, i = 1 - side, i + 1
    return Recording(audio, sorted(tokens, key=lambda x: x.tick), {"ticks": ticks})


CPU: dict[str, float] = {}
CPU_RUNS: dict[str, list[float]] = {}  # every run's CPU seconds, for the figure table


def timed(fn, repeats: int, name: str = "") -> tuple[float, object]:
    """Median wall seconds of ``fn`` (and its median CPU seconds in CPU[name]: the machine may be shared)."""
    times, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU[name] = statistics.median(cpu)
    CPU_RUNS[name] = cpu
    return statistics.median(times), out


def components(rec: Recording, repeats: int) -> dict[str, float]:
    from dyafdb.score.health.measure import HealthParams, measure_health
    from dyafdb.record.garble import load_transcriber
    from dyafdb.score.health.agreement import load_whisper, speech_only
    from dyafdb.localmodels.whisper_model import whisper_model
    from dyafdb.score.health.dnsmos import dnsmos
    from dyafdb.polyphase import resample
    from dyafdb.score.turntaking import measure_conversation
    from dyafdb.score.vad import VadParams, detect_stereo

    segments = detect_stereo(rec.audio, VadParams())
    turn_ends = {s: v.turn_ends for s, v in measure_conversation(segments, rec.ticks).items()}
    load_transcriber.cache_clear()  # a score job loads Whisper once: time that load each time
    whisper_model.cache_clear()
    t0 = time.perf_counter()
    whisper = load_whisper({}, 1)
    load = time.perf_counter() - t0
    out = {"whisper_load": load}
    out["speech_s"] = sum(e - s for side in "ab" for s, e in segments[side]) * FRAME_SECONDS / 2
    out["dnsmos"], _ = timed(lambda: [dnsmos(resample(speech_only(rec.channel(s), segments[s]), 2, 3)) for s in "ab"],
                             repeats, "dnsmos")
    out["asr"], _ = timed(lambda: [whisper.transcribe(speech_only(rec.channel(s), segments[s])) for s in "ab"],
                          repeats, "asr")
    no_asr = HealthParams(asr=False)
    out["health_no_asr"], _ = timed(lambda: measure_health(rec, segments, turn_ends, no_asr, {}), repeats, "no_asr")
    out["health"], doc = timed(lambda: measure_health(rec, segments, turn_ends, HealthParams(), {}, whisper),
                               repeats, "health")
    out["values"] = doc["values"]
    return out


def score_process(rec: Recording, asr: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root, cid = Path(tmp), "bench60"
        write_suite(root, archetypes=["T1-1"])
        config = {"scenarios_dir": "scenarios", "results_dir": "results",
                  "models": {"m1": {"adapter": "null"}, "m2": {"adapter": "null"}},
                  "suites": {"s": {"models": ["m1", "m2"], "archetypes": ["T1-1"], "repetitions": 1,
                                        "window_s": round(rec.ticks * FRAME_SECONDS)}},
                  "health": {"asr": asr}}
        (root / "config.yaml").write_text(yaml.safe_dump(config))
        meta = {"conversation_id": cid, "archetype": "T1-1", "scenario": "t1-1-fixture-01", "opener": "a",
                "attempt": 1, "sample_rate": SAMPLE_RATE, "frame_samples": FRAME_SAMPLES,
                "frame_seconds": FRAME_SECONDS, "ticks": rec.ticks}
        write_recording(Recording(rec.audio, rec.tokens, meta), Path(Results(str(root / "results")).recording(cid)))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dyafdb", "score", "all", "--config", str(root / "config.yaml"),
                        "--root", str(root), "--id", cid], check=True, capture_output=True)
        return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="timed runs of each part (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="one run of each part on one 20 s conversation, one score process each way (CI)")
    args = parser.parse_args()
    args.repeats = args.repeats or (1 if args.quick else 3)
    processes = 1 if args.quick else 2
    rng = np.random.default_rng(0)
    # --quick: the 20 s demo conversation stands for both shapes (measured once): same code, a third of the audio
    long = conversation(20 if args.quick else 60, rng)
    demo = long if args.quick else conversation(20, rng)
    runs: dict[str, dict[str, list[float]]] = {}
    shapes = (("60 s conversation", long), ("20 s demo conversation", demo))
    for name, rec in shapes[:1] if args.quick else shapes:
        c = components(rec, args.repeats)
        runs[name] = {**{k: list(v) for k, v in CPU_RUNS.items()}, "whisper_load": [c["whisper_load"]]}
        shown = "20 s conversation (--quick: both shapes)" if args.quick else name
        print(f"{shown} ({c['speech_s']:.1f} s of speech per side), in process, one thread, median of {args.repeats}:")
        print(f"  wall: DNSMOS both sides {c['dnsmos']:.2f} s; Whisper both sides {c['asr']:.2f} s (+ {c['whisper_load']:.2f} s "
              f"model load per job); all health measures {c['health']:.2f} s, without ASR {c['health_no_asr']:.2f} s")
        print(f"  CPU:  DNSMOS {CPU['dnsmos']:.2f} s; Whisper {CPU['asr']:.2f} s; all health measures {CPU['health']:.2f} s, "
              f"without ASR {CPU['no_asr']:.2f} s")
        a = c["values"]["a"]
        print(f"  side a: OVRL {a['dnsmos_ovrl']}, share {a['text_share']}, WER {a['text_wer']}, echo {a['echo']}, "
              f"no_response {a['no_response']}")
        if rec is demo and not args.quick:
            added = CPU["health"] + c["whisper_load"]
            print(f"  demo projection: {DEMO_CONVERSATIONS} conversations x {added:.2f} CPU s = {DEMO_CONVERSATIONS * added:.0f} "
                  f"CPU s, about {DEMO_CONVERSATIONS * added / CORES:.0f} s of wall time on {CORES} cores "
                  "(fewer: Whisper is skipped on sides that wrote no text)")
    if args.quick:
        runs["20 s demo conversation"] = runs["60 s conversation"]
    with_asr = [score_process(long, True) for _ in range(processes)]
    without = [score_process(long, False) for _ in range(processes)]
    print(f"one `dyafdb score` process, {'20' if args.quick else '60'} s conversation: {min(with_asr):.2f} s with health, "
          f"{min(without):.2f} s with health.asr: false")
    long_runs, demo_runs = runs["60 s conversation"], runs["20 s demo conversation"]
    emit("health", [
        row("60 s conversation (--quick: 20 s) of Piper speech: DNSMOS P.835 on both sides' speech", long_runs["dnsmos"],
            "CPU s"),
        row("... Whisper tiny.en on both sides' speech", long_runs["asr"], "CPU s"),
        row("... Whisper's model load, once per score job", [runs[k]["whisper_load"][0] for k in runs], "s wall"),
        row("... all health measures (DNSMOS, Whisper, echo, no-response)", long_runs["health"], "CPU s"),
        row("... all health measures with `health.asr: false`", long_runs["no_asr"], "CPU s"),
        row("20 s demo-shaped conversation: all health measures", demo_runs["health"], "CPU s"),
        row("one `dyafdb score all` process on the 60 s conversation (--quick: 20 s), start-up and every stage included",
            with_asr,
            "s wall"),
        row("... the same with `health.asr: false`", without, "s wall"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
