"""The demo's wall time: the whole demo suite (`profiles/demo`, config/demo.yaml) from nothing to the
report, in a scratch folder, as `bash scripts/demo.sh` runs it after the install.

    python bench/bench_demo.py [--keep DIR] [--quick]

Prints the wall time (target: under 20 minutes on 2 cores, issue 4), the number of jobs, and per stage
the jobs' summed wall and CPU seconds from Snakemake's benchmark files, so a slow stage stands out.
Run it on an idle machine; it takes about a quarter of an hour on 2 cores.
"""

from __future__ import annotations

from _figures import Bench, emit, row as figure  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("demo",), args=("--keep", "{demo}"), slow=True)  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import csv
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


from _slurm import no_slurm_probe  # noqa: E402
from dyafdb.paths import Results  # noqa: E402


def stage_of(path: Path, root: Path) -> str:
    """benchmarks/<stage>/... (record, score, judge, analysis, ...) or benchmarks/<rule>.tsv."""
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else path.stem


def print_timeline(spans: list[tuple[float, float, str]], wall: float, cores: int, step: float = 60.0) -> None:
    """Jobs running per minute and the stages they belong to, from each job's end (its benchmark
    file's time) and duration: where the cores sat idle, and which stage ran alone at the end."""
    busy = sum(end - start for start, end, _ in spans)
    print(f"cores busy {busy / (cores * wall):.0%} of {cores} x {wall:.0f} s "
          f"(idle core-seconds outside jobs: {cores * wall - busy:.0f}; Snakemake's own start-up and planning included)")
    print(f"{'minute':>6}{'jobs running':>14}  stages (share of the minute)")
    t = 0.0
    while t < wall:
        share: dict[str, float] = defaultdict(float)
        for start, end, stage in spans:
            overlap = min(end, t + step) - max(start, t)
            if overlap > 0:
                share[stage] += overlap / step
        mix = ", ".join(f"{k} {v:.1f}" for k, v in sorted(share.items(), key=lambda kv: -kv[1]))
        print(f"{t / 60:>6.0f}{sum(share.values()):>14.2f}  {mix}")
        t += step


def quick_targets(scratch: Path) -> list[str]:
    """The measures file of the demo's shortest conversation that has the polite agent on a side (a
    recording bench_reuse.py can read a polite channel from)."""
    from dyafdb.config import load_config
    from dyafdb.suite.design import build_design

    config = load_config(REPO / "config" / "demo.yaml")
    rows = [r for r in build_design(config, REPO) if "cpu_polite" in (r.model_a, r.model_b)]
    row = min(rows, key=lambda r: r.window_s)
    return [str(Path(Results(str(scratch / config["results_dir"])).measures_json(row.conversation_id)).relative_to(scratch))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (default: a temporary one)")
    parser.add_argument("--quick", action="store_true",
                        help="record and score one 10 s conversation with the polite agent through the demo profile (CI)")
    args = parser.parse_args()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="dyafdb-demo-"))
    scratch.mkdir(parents=True, exist_ok=True)
    for name in ("config", "scenarios", "profiles"):
        if not (scratch / name).exists():
            (scratch / name).symlink_to(REPO / name, target_is_directory=True)
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(scratch),
           "--profile", "profiles/demo", *(quick_targets(scratch) if args.quick else []), "--quiet", "all"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if args.quick:  # no 10 s wait for the SLURM plugin's probe where scontrol finds no controller (bench/_slurm.py)
        env.update(no_slurm_probe(scratch))
    print(f"demo in {scratch} on {os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.1f}", flush=True)
    t0, started = time.perf_counter(), time.time()
    done = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        raise SystemExit("the demo failed")
    demo = Results(str(scratch / "results" / "demo"))
    report = Path(demo.report)
    per_rule: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    spans: list[tuple[float, float, str]] = []
    jobs: dict[str, list[tuple[float, float]]] = defaultdict(list)  # stage -> (wall, CPU) of each job
    bench_root = Path(demo.benchmark_dir())
    for path in bench_root.rglob("*.tsv"):
        with open(path) as fh:
            row = next(csv.DictReader(fh, delimiter="\t"))
        stage = stage_of(path, bench_root)
        stats = per_rule[stage]
        stats[0] += 1
        stats[1] += float(row["s"])
        stats[2] += float(row.get("cpu_time") or 0)
        jobs[stage].append((float(row["s"]), float(row.get("cpu_time") or 0)))
        end = path.stat().st_mtime - started  # Snakemake writes the file when the job ends
        spans.append((end - float(row["s"]), end, stage))
    if args.quick:
        print(f"demo, one conversation recorded and scored (--quick): {wall:.0f} s wall")
    else:
        print(f"demo: {wall / 60:.1f} min wall ({wall:.0f} s); report {'written' if report.exists() else 'MISSING'}")
    print(f"{'stage':<22}{'jobs':>6}{'job wall s':>12}{'job CPU s':>11}")
    for stage, (n, s, cpu) in sorted(per_rule.items(), key=lambda kv: -kv[1][1]):
        print(f"{stage:<22}{n:>6}{s:>12.0f}{cpu:>11.0f}")
    print_timeline(spans, wall, os.cpu_count() or 1)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total_cpu = usage.ru_utime + usage.ru_stime
    job_cpu = sum(cpu for _, _, cpu in per_rule.values())
    print(f"CPU of Snakemake and every job together: {total_cpu:.0f} s (jobs' benchmark files: {job_cpu:.0f} s; "
          f"the rest is Snakemake's own work and what the jobs' sampling missed)")
    emit("demo", [
        figure("`snakemake --profile profiles/demo` (72 conversations; --quick: one), wall", [wall / 60], "min",
               "< 15 min"),
        figure("... CPU of Snakemake and every job", [total_cpu], "CPU s"),
        *(figure(f"{stage} jobs: wall per job", [w for w, _ in jobs[stage]], "s wall") for stage in ("record", "score")),
        *(figure(f"{stage} jobs: CPU per job", [c for _, c in jobs[stage]], "CPU s") for stage in ("record", "score")),
    ])
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
