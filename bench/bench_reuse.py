"""What sharing costs and saves in the demo's record and judge jobs, side by side on a finished demo:

    python bench/bench_demo.py --keep /tmp/demo          # a finished demo to read
    python bench/bench_reuse.py /tmp/demo [--channels 12] [--archetype T1-2 --question role_adherence]
    python bench/bench_reuse.py /tmp/demo --quick         # after bench_demo.py --quick --keep /tmp/demo (CI)

1. The garble watcher's Whisper at one CPU thread (the demo's record jobs have one) and at two (its
   default): the polite agent's channels of the demo's recordings, transcribed alternately, CPU
   seconds of each and whether every transcript is the same.
2. The local judge's llama.cpp server with its host-RAM prompt cache (``shared_prefixes``, what the
   judge uses) and without it (the private-slot servers of the CPU agent and the text models): one
   judge batch of the demo asked afresh with each (an empty reply cache), CPU seconds and whether
   the replies are the same.

Each measurement runs in a fresh process, alternating, so both sides share the machine's state.
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("reuse",), args=("{demo}",), after=("bench_demo",), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_WHISPER = """
import glob, json, resource, sys
from dataclasses import replace
from dyafdb.record.garble import GarbleSettings, load_transcriber
from dyafdb.record.recording import read_recording
threads, count = int(sys.argv[1]), int(sys.argv[2])
whisper = load_transcriber(replace(GarbleSettings(), cpu_threads=threads))
channels = []
for path in sorted(glob.glob("results/demo/recordings/*/*")):
    meta = json.load(open(path + "/meta.json"))
    for ch in meta["channels"]:
        if ch["model"] == "cpu_polite" and len(channels) < count:
            channels.append(read_recording(path).channel(ch["side"]))
before = resource.getrusage(resource.RUSAGE_SELF)
texts = [whisper.transcribe(c) for c in channels]
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"cpu": cpu, "texts": texts}))
"""

_JUDGE = """
import json, resource, sys
import dyafdb.localmodels.llama_server as server
from dyafdb.cli import main
shared, archetype, question, cache, out = sys.argv[1] == "1", sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
start = server.shared_server
server_fn = lambda *a, **k: start(*a, **{**k, "shared_prefixes": shared})
import dyafdb.llm.llamacpp as llamacpp
llamacpp.shared_server = server_fn
open(cache + ".yaml", "w").write("judge:\\n  cache_dir: " + cache + "\\n")
main(["judge", "--config", "config/demo.yaml", "--config", cache + ".yaml", "--judge", "demo",
      "--archetype", archetype, "--question", question, "--out", out])
usage = resource.getrusage(resource.RUSAGE_SELF)
replies = [r["replies"] for r in map(json.loads, open(out))]
print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime, "replies": replies}))
"""


def _run(demo: Path, code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=demo, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cpus(runs: list[dict]) -> str:
    return ", ".join(f"{r['cpu']:.2f}" for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("demo", type=Path, help="a folder bench/bench_demo.py --keep left (results/demo inside)")
    parser.add_argument("--channels", type=int, default=12)
    parser.add_argument("--archetype", default="T1-2")
    parser.add_argument("--question", default="role_adherence")
    parser.add_argument("--pairs", type=int, default=2, help="alternating runs of each side")
    parser.add_argument("--quick", action="store_true",
                        help="one polite channel, one pair, no judge batch: for `bench_demo.py --quick --keep DIR`'s "
                             "one conversation, which has no archetype's transcripts to judge (CI)")
    args = parser.parse_args()
    if args.quick:
        args.channels, args.pairs = 1, 1
    demo = args.demo.resolve()

    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(args.pairs):
        for threads in (2, 1):
            runs[threads].append(_run(demo, _WHISPER, str(threads), str(args.channels)))
    same = all(r["texts"] == runs[1][0]["texts"] for r in runs[1] + runs[2])
    print(f"garble watcher's Whisper on {args.channels} polite channels: 1 thread {_cpus(runs[1])} CPU s, "
          f"2 threads {_cpus(runs[2])} CPU s; the same transcripts: {same}")
    if not same:
        raise SystemExit("the garble watcher's transcripts differ between one and two threads")
    emit("reuse", [
        row("garble watcher's Whisper on the demo's polite channels (12 unless --quick), one CPU thread "
            "(`garble.cpu_threads: 1`)", [r["cpu"] for r in runs[1]], "CPU s"),
        row("... two threads (its default); the same transcripts", [r["cpu"] for r in runs[2]], "CPU s"),
    ])

    if args.quick:
        print("judge batch: not run with --quick (it needs a whole archetype recorded and transcribed)")
        return
    judged: dict[bool, list[dict]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for shared in (True, False):
                cache, out = f"{tmp}/cache-{shared}-{i}", f"{tmp}/out-{shared}-{i}.jsonl"
                judged[shared].append(_run(demo, _JUDGE, "1" if shared else "0", args.archetype, args.question, cache, out))
    same = all(r["replies"] == judged[True][0]["replies"] for r in judged[True] + judged[False])
    print(f"judge batch {args.archetype} {args.question} (empty reply cache): host-RAM prompt cache "
          f"{_cpus(judged[True])} CPU s, without {_cpus(judged[False])} CPU s; the same replies: {same}")


if __name__ == "__main__":
    main()
