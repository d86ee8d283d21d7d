"""Time the analysis stage on a synthetic measures table the size of the paper's corpus.

7,560 conversations (3 models, 6 pairings, 7 archetypes x 20 scenarios, role and opener swap, 3
repetitions), both sides, every mechanical measure and the judged ones from two judges; 1,000
bootstrap resamples. Prints the time of each product (in process) and of the whole stage as the
workflow runs it: one `dyafdb` process per rule, two at a time (as `snakemake -j 2` would on 2 cores).

    python bench/bench_analysis.py [--bootstrap 1000] [--jobs 2] [--skip-cli] [--quick]
"""

from __future__ import annotations

from _figures import Bench, emit, row  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("analysis",), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import copy
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from dyafdb.analysis import figures as F
from dyafdb.analysis import products as P
import _testpath  # noqa: F401 (puts tests/helpers on the path)
import synthetic_analysis as S
from dyafdb.analysis.columns import MAIN_TASKS, TURN_TAKING
from dyafdb.analysis.report import build_report
from dyafdb.analysis.settings import from_config
from dyafdb.config import validate_config

REPO = Path(__file__).resolve().parents[1]


def config(bootstrap: int) -> dict:
    models = ["alpha", "beta", "gamma"]
    return {
        "scenarios_dir": "scenarios", "results_dir": "results",
        "models": {m: {"adapter": "null"} for m in models},
        "suites": {"main": {"models": models, "archetypes": list(MAIN_TASKS), "repetitions": 3, "window_s": 60}},
        "judge": {"judges": {"judge-main": {"backend": "anthropic", "model": "a"}, "judge-second": {"backend": "anthropic", "model": "b"}}},
        "analysis": {"bootstrap": bootstrap},
    }


def in_process(work: Path, cfg: dict) -> dict[str, float]:
    settings = from_config(cfg)
    t = work / "tables"
    times: dict[str, float] = {}

    def step(name, fn):
        start = time.perf_counter()
        out = fn()
        times[name] = time.perf_counter() - start
        return out

    step("runs", lambda: P.runs_product([work / "measures.tsv"], settings, work / "runs.tsv"))
    runs = step("read runs", lambda: P.read_runs(work / "runs.tsv"))
    for task in MAIN_TASKS:
        step(f"matrix {task}", lambda task=task: P.matrix_product(runs, settings, task, t / f"score_{task}.tsv", t / f"score_{task}.html"))
    for metric in TURN_TAKING:
        step(f"turntaking {metric}", lambda metric=metric: P.turntaking_product(runs, settings, metric, t / f"tt_{metric}.tsv", t / f"tt_{metric}.html"))
    step("variance", lambda: P.variance_product(runs, settings, t / "variance.tsv", t / "variance.html"))
    step("timing", lambda: P.timing_product(runs, settings, t / "timing.tsv", t / "curves.tsv", t / "timing.html"))
    step("action-success", lambda: P.action_success_product(runs, settings, t / "as.tsv", t / "as.html"))
    step("windows", lambda: P.windows_product(runs, settings, t / "windows.tsv", t / "windows.html"))
    step("balance", lambda: P.balance_product(runs, settings, t / "balance.tsv", t / "balance.html"))
    step("profiles", lambda: P.profiles_product(runs, settings, t / "profiles.tsv", t / "profiles.html"))
    step("rating", lambda: P.rating_product(runs, settings, t / "leaderboard.tsv", t / "effects.tsv", t / "leaderboard.html"))
    step("agreement", lambda: P.agreement_product([work / "measures.tsv"], settings, t / "agreement.tsv", t / "agreement.html"))
    import pandas as pd

    def figs():
        from dyafdb.analysis.tables import Matrix

        F.save(F.variance_figure(pd.read_csv(t / "variance.tsv", sep="\t"), settings), work / "fig" / "variance", settings)
        F.save(F.timing_figure(pd.read_csv(t / "curves.tsv", sep="\t"), pd.read_csv(t / "timing.tsv", sep="\t"), settings), work / "fig" / "timing", settings)
        F.save(F.action_success_figure(pd.read_csv(t / "as.tsv", sep="\t"), settings), work / "fig" / "as", settings)
        F.save(F.windows_figure(pd.read_csv(t / "windows.tsv", sep="\t"), settings), work / "fig" / "windows", settings)
        F.save(F.balance_figure(pd.read_csv(t / "balance.tsv", sep="\t"), settings), work / "fig" / "balance", settings)
        F.save(F.leaderboard_figure(pd.read_csv(t / "leaderboard.tsv", sep="\t"), settings), work / "fig" / "leaderboard", settings)
        mats = [Matrix.from_frame(pd.read_csv(t / f"score_{task}.tsv", sep="\t"), title=task) for task in MAIN_TASKS]
        F.save(F.matrices_figure(mats, settings), work / "fig" / "matrices", settings)

    step("figures (7, PNG+PDF)", figs)
    step("report", lambda: build_report(sorted(t.glob("*.html")), sorted((work / "fig").glob("*.png")), settings,
                                        work / "report.html", REPO / "workflow" / "report",
                                        config=validate_config(copy.deepcopy(cfg), "bench")))  # captions read it
    return times


def cli_commands(work: Path, cfg_path: Path) -> list[list[list[str]]]:
    """The workflow's jobs as dyafdb command lines, in dependency waves."""
    c = ["--config", str(cfg_path)]
    t = work / "cli"
    runs = str(t / "runs.tsv")
    wave1 = [["analysis", "runs", *c, "--measures", str(work / "measures.tsv"), "--out", runs]]
    wave2 = [["analysis", "matrix", *c, "--runs", runs, "--task", task, "--out", str(t / f"score_{task}.tsv"), "--html", str(t / f"score_{task}.html")] for task in MAIN_TASKS]
    wave2 += [["analysis", "turntaking", *c, "--runs", runs, "--metric", m, "--out", str(t / f"tt_{m}.tsv"), "--html", str(t / f"tt_{m}.html")] for m in TURN_TAKING]
    for product in ("variance", "action-success", "windows", "balance", "profiles"):
        wave2.append(["analysis", product, *c, "--runs", runs, "--out", str(t / f"{product}.tsv"), "--html", str(t / f"{product}.html")])
    wave2.append(["analysis", "timing", *c, "--runs", runs, "--out", str(t / "timing.tsv"), "--curves", str(t / "curves.tsv"), "--html", str(t / "timing.html")])
    wave2.append(["analysis", "rating", *c, "--runs", runs, "--out", str(t / "leaderboard.tsv"), "--effects", str(t / "effects.tsv"), "--html", str(t / "leaderboard.html")])
    wave2.append(["analysis", "agreement", *c, "--measures", str(work / "measures.tsv"), "--out", str(t / "agreement.tsv"), "--html", str(t / "agreement.html")])
    wave2.append(["analysis", "versions", *c, "--out", str(t / "versions.tsv"), "--config-out", str(t / "config.yaml")])
    f = t / "fig"
    wave3 = [
        ["analysis", "figure", "matrices", *c, "--input", *[str(t / f"score_{task}.tsv") for task in MAIN_TASKS], "--out-prefix", str(f / "task_matrices")],
        ["analysis", "figure", "matrices", *c, "--input", *[str(t / f"tt_{m}.tsv") for m in TURN_TAKING], "--out-prefix", str(f / "turntaking_matrices")],
        ["analysis", "figure", "variance", *c, "--input", str(t / "variance.tsv"), "--out-prefix", str(f / "fig2_variance")],
        ["analysis", "figure", "timing", *c, "--input", str(t / "timing.tsv"), str(t / "curves.tsv"), "--out-prefix", str(f / "fig3_timing")],
        ["analysis", "figure", "action_success", *c, "--input", str(t / "action-success.tsv"), "--out-prefix", str(f / "fig4_action_success")],
        ["analysis", "figure", "windows", *c, "--input", str(t / "windows.tsv"), "--out-prefix", str(f / "fig5_windows")],
        ["analysis", "figure", "balance", *c, "--input", str(t / "balance.tsv"), "--out-prefix", str(f / "fig6_balance")],
        ["analysis", "figure", "leaderboard", *c, "--input", str(t / "leaderboard.tsv"), "--out-prefix", str(f / "leaderboard")],
    ]
    return [wave1, wave2, wave3]


QUICK_CHAIN = ("runs", "variance")  # the rules --quick runs as processes, each reading the one before


def run_cli(work: Path, cfg_path: Path, jobs: int, quick: bool = False) -> tuple[float, float, float]:
    """(wall seconds with `jobs` at a time, summed wall seconds of every job, CPU seconds of all jobs).
    ``quick``: one chain of commands, runs -> variance -> its figure, and the report (a process start
    costs about a CPU second, 31 of them most of a minute on a loaded machine; the in-process run
    covers every product).

    CPU seconds do not grow when other processes compete for the cores, so CPU / cores is what the
    stage takes on an otherwise idle machine."""
    exe = [sys.executable, "-m", "dyafdb"]
    total = 0.0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)

    def one(cmd):
        start = time.perf_counter()
        subprocess.run(exe + cmd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    start = time.perf_counter()
    for wave in cli_commands(work, cfg_path):
        if quick:
            wave = [cmd for cmd in wave if cmd[1] in QUICK_CHAIN or cmd[1:3] == ["figure", "variance"]]
        with ThreadPoolExecutor(jobs) as pool:
            total += sum(pool.map(one, wave))
    t = work / "cli"
    one(["analysis", "report", "--config", str(cfg_path), "--tables", *map(str, sorted(t.glob("*.html"))),
         "--figures", *map(str, sorted((t / "fig").glob("*.png"))), "--captions", str(REPO / "workflow" / "report"),
         "--out", str(t / "report.html")])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, total, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", type=int, default=None, help="resamples (default 1000; 20 with --quick)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="2 scenarios per archetype, 1 repetition, 20 resamples, in process; "
                             "runs, variance, its figure and the report as processes (CI)")
    args = parser.parse_args()
    args.bootstrap = args.bootstrap or (20 if args.quick else 1000)
    scenarios, repetitions = (2, 1) if args.quick else (20, 3)
    cfg = config(args.bootstrap)
    cfg["suites"]["main"]["repetitions"] = repetitions
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        spec = S.Spec(models=("alpha", "beta", "gamma"), tasks=MAIN_TASKS, scenarios=scenarios, repetitions=repetitions,
                      own={"alpha": 0.6, "gamma": -0.4}, partner={"beta": 0.5})
        frame = S.write(spec, work / "measures.tsv")
        conversations = frame["conversation_id"].nunique()
        print(f"synthetic measures.tsv: {conversations:,} conversations, {len(frame):,} rows, "
              f"{(work / 'measures.tsv').stat().st_size / 1e6:.1f} MB (made in {time.perf_counter() - start:.1f} s)")
        print(f"cpus available: {len(os.sched_getaffinity(0))}; bootstrap resamples: {args.bootstrap}")
        times = in_process(work, cfg)
        width = max(map(len, times))
        for name, sec in times.items():
            print(f"  {name:<{width}}  {sec:7.2f} s")
        print(f"in process, one after another: {sum(times.values()):.1f} s")
        rows = [row("conversations in the synthetic measures.tsv (7,560 unless --quick)", [conversations], "conversations"),
                row("every table and decomposition, in process, one after another", [sum(times.values())], "s wall",
                    "< 60 s at 7,560"),
                row("... the slowest product alone", [max(times.values())], "s wall")]
        if not args.skip_cli:
            cfg_path = work / "config.yaml"
            cfg_path.write_text(yaml.safe_dump(cfg))
            wall, summed, cpu = run_cli(work, cfg_path, args.jobs, args.quick)
            load = os.getloadavg()[0]
            print(f"as the workflow runs it (one dyafdb process per rule{' (--quick: runs, variance, its figure, report)' if args.quick else ''}, "
                  f"{args.jobs} at a time): {wall:.1f} s wall, "
                  f"{summed:.1f} s summed over jobs, {cpu:.1f} CPU s (load average {load:.1f})")
            print(f"on an idle machine with {args.jobs} cores: about {cpu / args.jobs:.1f} s (CPU s / cores); "
                  "target: under 60 s on 2 cores")
            rows += [row(f"as the workflow runs it (one `dyafdb analysis` process per rule, {args.jobs} at a time; "
                         "--quick: runs, variance, its figure and the report)", [wall],
                         "s wall"),
                     row("... CPU of those processes", [cpu], "CPU s")]
            emit("analysis", rows)


if __name__ == "__main__":
    main()
