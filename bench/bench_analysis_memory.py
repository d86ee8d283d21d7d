"""Peak memory of the analysis jobs whose input grows with the corpus, at two corpus sizes.

The per-run table of one archetype (`analysis_runs`) and the judge-agreement table (reads the whole
measures.tsv) are run each in a fresh process on synthetic tables (bench_analysis.py's generator,
both judges, every mechanical measure) of 3 and 6 repetitions: 7,560 and 15,120 conversations.
Prints each job's peak resident memory and the slope per 1,000 conversations, the figures the
workflow's `mem_mb` of these rules is declared from (dyafdb.analysis.inputs.AnalysisInputs.mem_mb).

    python bench/bench_analysis_memory.py [--repetitions 3 6]
    python bench/bench_analysis_memory.py --quick         # its smallest size, seconds to a minute (CI: tests/test_benchmarks.py)
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("analysis-memory",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _testpath  # noqa: F401 (puts tests/helpers on the path)
import synthetic_analysis as S
from dyafdb.analysis.columns import MAIN_TASKS

ARCHETYPE = "T1-1"
# One job each, as the workflow runs it: a fresh interpreter that imports the analysis and builds one table.
JOB = """
import json, sys
from pathlib import Path
from dyafdb.analysis import products as P
from dyafdb.analysis.settings import from_config
kind, measures, out, cfg = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4])
settings = from_config(cfg)
if kind == "runs":
    P.runs_product([measures], settings, out)
else:
    P.agreement_product([measures], settings, out, out.with_suffix(".html"))
"""


def config() -> dict:
    models = ["alpha", "beta", "gamma"]
    return {
        "scenarios_dir": "scenarios", "results_dir": "results",
        "models": {m: {"adapter": "null"} for m in models},
        "suites": {"main": {"models": models, "archetypes": list(MAIN_TASKS), "repetitions": 3, "window_s": 60}},
        "judge": {"judges": {"judge-main": {"backend": "anthropic", "model": "a"},
                             "judge-second": {"backend": "anthropic", "model": "b"}}},
        "analysis": {"bootstrap": 100},
    }


def peak_mb(kind: str, measures: Path, out: Path) -> float:
    """Peak resident memory (MB) of one job in its own process."""
    proc = subprocess.Popen([sys.executable, "-c", JOB, kind, str(measures), str(out), json.dumps(config())],
                            stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{kind} job failed on {measures}")
    return usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, nargs=2, default=None, help="the two corpus sizes (default 3 6)")
    parser.add_argument("--quick", action="store_true", help="2 scenarios per archetype, 1 and 2 repetitions (CI)")
    args = parser.parse_args()
    args.repetitions = args.repetitions or ([1, 2] if args.quick else [3, 6])
    scenarios = 2 if args.quick else 20
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for reps in args.repetitions:
            work = Path(tmp) / str(reps)
            work.mkdir()
            spec = S.Spec(models=("alpha", "beta", "gamma"), tasks=MAIN_TASKS, scenarios=scenarios, repetitions=reps)
            frame = S.write(spec, work / "measures.tsv")
            one = frame[frame["archetype"] == ARCHETYPE]
            one.to_csv(work / "one.tsv", sep="\t", index=False)
            n_all, n_one = frame["conversation_id"].nunique(), one["conversation_id"].nunique()
            runs = peak_mb("runs", work / "one.tsv", work / "runs.tsv")
            agreement = peak_mb("agreement", work / "measures.tsv", work / "agreement.tsv")
            rows.append((n_one, runs, n_all, agreement))
            print(f"{reps} repetitions: runs of {ARCHETYPE} ({n_one:,} conversations) {runs:,.0f} MB; "
                  f"agreement ({n_all:,} conversations, {len(frame):,} rows) {agreement:,.0f} MB", flush=True)
    (n1, r1, a1, g1), (n2, r2, a2, g2) = rows
    figures = []
    for name, (x1, y1, x2, y2) in (("runs", (n1, r1, n2, r2)), ("agreement", (a1, g1, a2, g2))):
        slope = (y2 - y1) / (x2 - x1) * 1000
        print(f"{name}: {slope:.1f} MB per 1,000 conversations, intercept {y1 - slope * x1 / 1000:.0f} MB")
        figures.append((slope, y1 - slope * x1 / 1000))
    label = {"runs": f"per-run table of one archetype ({ARCHETYPE})", "agreement": "judge agreement (whole measures.tsv)"}
    emit("analysis-memory", [
        row("conversations in the smaller and the larger corpus (7,560 and 15,120 unless --quick)", [a1, a2], "conversations"),
        row(f"{label['runs']}: peak memory, smaller and larger corpus", [r1, r2], "MB"),
        row(f"{label['agreement']}: peak memory, smaller and larger corpus", [g1, g2], "MB"),
        row(f"{label['runs']}: per 1,000 conversations it reads", [figures[0][0]], "MB"),
        row(f"{label['agreement']}: per 1,000 conversations it reads", [figures[1][0]], "MB"),
        row(f"{label['agreement']}: intercept", [figures[1][1]], "MB"),
    ])


if __name__ == "__main__":
    main()
