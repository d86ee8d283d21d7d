"""`dyafdb verify` on a results folder the size of the paper's main suite (7,560 conversations):
a synthetic folder with a recording (meta.json with real provenance digests, a sparse audio.wav of
the right size, text.jsonl), segments, transcripts and measures per conversation, and a measures.tsv.

    python bench/bench_verify.py [--scenarios-per-archetype K] [--repeat 3]
    python bench/bench_verify.py --quick                  # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)

Prints wall and CPU seconds of `dyafdb verify` (a fresh process each run, one core). Goal (issue 23):
under 30 s for 7,560 conversations.
"""

from __future__ import annotations

from _figures import Bench, emit, row as figure  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("verify",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from dyafdb.clock import FRAME_SAMPLES, seconds_to_ticks  # noqa: E402
from dyafdb.config import validate_config  # noqa: E402
from dyafdb.paths import results_of  # noqa: E402
from dyafdb.record.spec import expected_ticks, inputs_digest, recording_inputs  # noqa: E402
from dyafdb.suite.design import build_design  # noqa: E402


def build(root: Path, per_archetype: int | None) -> tuple[Path, int]:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if per_archetype:
        for suite in cfg["suites"].values():
            suite["scenarios_per_archetype"] = per_archetype
    cfg["scenarios_dir"] = str(REPO / "scenarios")
    cfg["results_dir"] = str(root / "results")
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    config = validate_config(cfg, path)
    rows = build_design(config)
    results = results_of(config)
    table = ["conversation_id\tside\tmeasure\tjudge\tvalue\n"]
    for row in rows:
        cid = row.conversation_id
        folder = Path(results.recording(cid))
        folder.mkdir(parents=True)
        ticks = expected_ticks(config, row)
        total = ticks["lead_in_ticks"] + ticks["window_ticks"]
        with open(folder / "audio.wav", "wb") as fh:
            fh.truncate(total * FRAME_SAMPLES * 2 * 4 + 58)  # sparse: the size a float WAV has, no disk
        (folder / "text.jsonl").write_text(json.dumps({"channel": "a", "tick": 3, "time": 0.24, "text": "hi"}) + "\n")
        inputs = recording_inputs(config, row)
        digest = f"{abs(hash(cid)) % 16**16:016x}"
        meta = {"format": "dyafdb-recording/1", "conversation_id": cid, "archetype": row.archetype,
                "scenario": row.scenario, "channels": [{"index": i, "side": s, "model": row.model_of(s)}
                                                      for i, s in enumerate("ab")],
                **ticks, "ticks": total, "provenance": {"inputs": inputs, "spec": inputs_digest(inputs),
                                                       "recording": digest}, "complete": True}
        (folder / "meta.json").write_text(json.dumps(meta, indent=2))
        made = {"conversation_id": cid, "recording": digest}
        for out in (results.segments(cid), results.transcript_json(cid), results.transcript_txt(cid)):
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(json.dumps({"provenance": made}))
        Path(results.measures_json(cid)).parent.mkdir(parents=True, exist_ok=True)
        values = {s: {m: 0.5 for m in ("tor_pause", "occupancy", "turns", "dnsmos_ovrl", "speech_text_wer")}
                  for s in "ab"}
        Path(results.measures_json(cid)).write_text(json.dumps({"provenance": made, "conversation_id": cid,
                                                                "values": values, "events": {}}))
        table += [f"{cid}\t{s}\t{m}\t\t0.5\n" for s in "ab" for m in values[s]]
    Path(results.measures_table).parent.mkdir(parents=True, exist_ok=True)
    Path(results.measures_table).write_text("".join(table))
    return path, len(rows)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios-per-archetype", type=int, default=None,
                        help="a smaller suite of the same design (default: the paper's 20, 7,560 conversations)")
    parser.add_argument("--repeat", type=int, default=None, help="verify runs (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="1 scenario per archetype, one run (CI)")
    args = parser.parse_args()
    args.repeat = args.repeat or (1 if args.quick else 3)
    if args.quick and args.scenarios_per_archetype is None:
        args.scenarios_per_archetype = 1
    with tempfile.TemporaryDirectory() as scratch:
        t0 = time.perf_counter()
        config, n = build(Path(scratch), args.scenarios_per_archetype)
        print(f"built a results folder of {n:,} conversations in {time.perf_counter() - t0:.0f} s")
        walls, cpus = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "dyafdb", "verify", "-c", str(config)], capture_output=True,
                                 text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if out.returncode != 0:
                print(out.stdout[-2000:], out.stderr[-2000:])
                return 1
        print(out.stdout.strip())
        print(f"dyafdb verify, {n:,} conversations: wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}, "
              f"max {max(walls):.2f}), CPU median {statistics.median(cpus):.2f} s, {args.repeat} runs; goal < 30 s")
    emit("verify", [
        figure("conversations in the synthetic results folder (the main suite's 7,560 unless --quick)", [n], "conversations"),
        figure("`dyafdb verify`, one fresh process", walls, "s wall", "< 30 s at 7,560"),
        figure("... its CPU", cpus, "CPU s"),
        figure("... per 1,000 conversations", [w * 1000 / n for w in walls], "s wall"),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
