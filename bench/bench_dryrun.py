"""Planning cost of the paper's workflow: `snakemake -n --quiet rules` of everything (record, score,
judge, analysis, viewer) for the main suite, and for the main suite plus the game-balance and 30/120 s
window suites.

    python bench/bench_dryrun.py --compare          # both goals, today's plan beside this tree's (bench/run.py)
    python bench/bench_dryrun.py --compare --repeat 3                           # the same, 3 runs of each
    python bench/bench_dryrun.py --quick --compare  # the same plans of a small suite (CI, tests/test_benchmarks.py)
    python bench/bench_dryrun.py [--main-only] [--target FILE ...]
    python bench/bench_dryrun.py --main-only --baseline /tmp/base --repeat 3   # paired: old vs this tree
    python bench/bench_dryrun.py --scale --baseline /tmp/base --repeat 2       # 4 models x 3 windows

Goals (issue 30): the main suite (7,560 conversations, 15,197 jobs) planned in under 10 s and the
4 models x 3 windows plan (80,717 jobs) in under 60 s, on 2 cores. --compare plans both
twice, alternately: with this tree's workflow, and with the same workflow less the planning shortcut
`skip_unshown_job_info()` (workflow/rules/common/shortcuts.smk), which is how Snakemake planned before
it; the job counts must agree. Each row is one plan, wall and CPU seconds (user + system: what a
shared machine distorts least). --quick plans the same two configs cut to one scenario per archetype
and one repetition (a few hundred and about 1,400 jobs): the same code path in seconds, not the goals,
which hold for the full-size plans only. Run it on an idle machine: the number is CPU-bound and single-threaded.

With --baseline (a checkout of an older commit, e.g. `git worktree add --detach /tmp/base <commit>`),
the old tree's Snakefile and sources and this tree's are run alternately on the same config, and the
ratio of medians is printed: on a shared machine the load drifts, a paired ratio does not.

On a machine with SLURM's client tools but no reachable controller, the SLURM executor plugin's probe
(`scontrol show config`, at start-up, whatever the executor) waits 10 s; a real cluster answers at
once and a laptop without SLURM skips it. There the plans run with a `scontrol` that fails at once
first on PATH, as on a laptop, and the script says so (--slurm-probe keeps the wait); --quick does so
without asking (`scontrol ping` itself waits 3 s there), as bench_demo.py and bench_agent.py do in
their --quick runs (bench/_slurm.py).
"""

from __future__ import annotations

from _figures import Bench  # noqa: E402 (bench/ is the script's folder)

BENCH = Bench(blocks=("planning",), args=("--compare",))  # what bench/run.py runs and fills (bench/_figures.py)

import argparse
import os
import resource
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

import _testpath  # noqa: F401 (puts tests/helpers on the path)
from _figures import emit, row
from _slurm import no_slurm_probe, slurm_probe_waits
from synthetic_suite import write_suite

REPO = Path(__file__).resolve().parent.parent
OPTIONAL_SUITES = ("game_balance", "window_30", "window_120")


def write_config(root: Path, enable_optional: bool, scale: bool = False, source: str = "config.yaml",
                 small: bool = False) -> Path:
    cfg = yaml.safe_load((REPO / "config" / source).read_text())
    scenarios = REPO / "scenarios"
    if all(len(list((scenarios / a).glob("*.yaml"))) >= 20 for a in ("T1-1", "T2", "T4-2", "T4-3", "T4-4")):
        cfg["scenarios_dir"] = str(scenarios)
    else:  # a checkout without the scenario files: a synthetic suite of the same size
        write_suite(root, per_archetype=20)
        cfg["scenarios_dir"] = str(root / "scenarios")
    cfg.setdefault("judge", {})["prompts_dir"] = str(REPO / "config" / "judge")  # planned from a scratch folder
    for name in OPTIONAL_SUITES:
        if name in cfg["suites"]:  # the paper's config; the demo's has suites of its own
            cfg["suites"][name]["enabled"] = enable_optional
    if scale:
        _scale_up(cfg)
    if small:  # --quick: every suite at one scenario per archetype and one repetition
        for suite in cfg["suites"].values():
            suite["scenarios_per_archetype"], suite["repetitions"] = 1, 1
    path = root / ("cfg-scale.yaml" if scale else "cfg-all.yaml" if enable_optional else f"cfg-main-{source}")
    path.write_text(yaml.safe_dump(cfg))
    return path


def _scale_up(cfg: dict) -> None:
    """The issue's 80,000-job plan: four of the configured models (copies if fewer) and three windows."""
    models = cfg["models"]
    for name in list(models)[: max(0, 4 - len(models))]:
        models[f"{name}-b"] = dict(models[name])
    for suite in cfg["suites"].values():
        if "models" in suite:
            suite["models"] = list(models)
    for name in OPTIONAL_SUITES:
        cfg["suites"][name]["enabled"] = name.startswith("window")


def dry_run(root: Path, config: Path, targets: list[str], tree: Path = REPO, src: Path | None = None,
            env_extra: dict[str, str] | None = None) -> tuple[float, float, dict[str, int], int]:
    """Wall and CPU seconds, job counts and peak memory (KiB) of one `snakemake -n` with the Snakefile
    of `tree` and the sources of `src` (else `tree`'s). CPU seconds (user + system) are what a busy
    shared machine distorts least."""
    env = dict(os.environ, **(env_extra or {}))
    env["PYTHONPATH"] = os.pathsep.join([str((src or tree) / "src"), os.environ.get("PYTHONPATH", "")])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu0 = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(tree / "workflow" / "Snakefile"),
                          "--directory", str(root), "--configfile", str(config), "-n", "--quiet", "rules",
                          "--cores", "2", *targets], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu0
    peak = usage.ru_maxrss if usage.ru_maxrss > before else -1  # of children: a running maximum
    if out.returncode:
        raise SystemExit(f"snakemake -n failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    counts: dict[str, int] = {}
    for line in out.stdout.split("Job stats:")[-1].splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return elapsed, cpu, counts, peak


SHORTCUT = "skip_unshown_job_info()\n"


def todays_workflow(root: Path) -> Path:
    """This tree's workflow less the shortcut measured here: Snakemake describing every job it plans."""
    shutil.copytree(REPO / "workflow", root / "workflow")
    snakefile = root / "workflow" / "Snakefile"
    text = snakefile.read_text()
    if SHORTCUT not in text:
        raise SystemExit(f"{snakefile.relative_to(root)} no longer calls {SHORTCUT.strip()}: update bench/bench_dryrun.py")
    snakefile.write_text(text.replace(SHORTCUT, ""))
    return root


QUICK_SIZE = "--quick: 1 scenario per archetype, 1 repetition"


def compare(tmp: Path, repeat: int, env_extra: dict[str, str], small: bool = False) -> None:
    """Both goals, today's plan beside this tree's, alternately on the same configs (``small``: the
    configs cut to one scenario per archetype and one repetition, the goals not judged).

    A row's label names the plan, never its job count, so the rows of a --quick run are the rows of a
    full one (tests/test_benchmarks.py holds the document's block to them); the counts are rows."""
    goals = [("main suite", False, False, "config.yaml", 10.0), ("4 models x 3 windows", False, True, "config.yaml", 60.0)]
    trees = [("without the shortcut", todays_workflow(tmp / "today")), ("this tree", REPO)]
    rows = []
    for label, optional, scale, source, goal in goals:
        config = write_config(tmp, optional, scale, source, small)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
        counts: dict[str, dict[str, int]] = {}
        for _ in range(repeat):
            for name, tree in trees:
                elapsed, cpu, counts[name], _peak = dry_run(tmp, config, [], tree, src=REPO, env_extra=env_extra)
                runs[name].append((elapsed, cpu))
                print(f"dry-run, {label}, {name}: {elapsed:6.1f} s ({cpu:.1f} s CPU), {counts[name].get('total', -1):,} jobs",
                      flush=True)
        if len({json_counts(c) for c in counts.values()}) != 1:
            raise SystemExit(f"{label}: the job counts differ with and without the shortcut: {counts}")
        jobs, record = counts["this tree"]["total"], counts["this tree"].get("record", 0)
        what = f"{label} ({QUICK_SIZE})"
        rows.append(row(f"{what}, jobs planned", [jobs], "jobs"))
        rows.append(row(f"{what}, record jobs planned", [record], "jobs"))
        for name, _ in trees:
            walls, cpus = [w for w, _ in runs[name]], [c for _, c in runs[name]]
            met = {k: "met" if statistics.median(v) < goal else "NOT met" for k, v in (("wall", walls), ("CPU", cpus))}
            verdict = (f"goal < {goal:g} s at full size, not judged on a --quick plan" if small
                       else f"goal < {goal:g} s: wall {met['wall']}, CPU {met['CPU']}")
            print(f"{label}, {jobs:,} jobs ({record:,} record), {name}: median {statistics.median(walls):.1f} s wall, "
                  f"{statistics.median(cpus):.1f} s CPU ({verdict}; load average {os.getloadavg()[0]:.1f} "
                  f"on {os.cpu_count()} CPUs)")
            target = f"< {goal:g} s" if name == "this tree" else ""
            rows.append(row(f"{label}, {name}", walls, "s wall", target))
            rows.append(row(f"... {name}", cpus, "s CPU", target))  # an idle machine's wall time is about this
    emit("planning", rows)


def json_counts(counts: dict[str, Any]) -> str:
    return repr(sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--main-only", action="store_true", help="skip the run with the optional suites")
    parser.add_argument("--scale", action="store_true", help="only the 4 models x 3 windows plan (~80,000 jobs)")
    parser.add_argument("--target", nargs="*", default=[], help="plan only these targets (default: everything)")
    parser.add_argument("--baseline", type=Path, help="an older checkout to run alternately with this one")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tree")
    parser.add_argument("--compare", action="store_true",
                        help="both goals (main suite, 80,000 jobs), with and without the planning shortcut, alternately")
    parser.add_argument("--quick", action="store_true",
                        help="--compare on a small suite (1 scenario per archetype, 1 repetition): seconds, for CI")
    parser.add_argument("--slurm-probe", action="store_true",
                        help="keep the SLURM plugin's 10 s probe where scontrol finds no controller")
    args = parser.parse_args()
    env_extra: dict[str, str] = {}
    # --quick plans locally whatever the machine: no wait for the probe, nor for `scontrol ping` to find out
    quick_shim = args.quick and not args.slurm_probe
    probe = quick_shim or slurm_probe_waits()
    if quick_shim:
        print("note: --quick: the plans run with a scontrol that fails at once first on PATH, as without SLURM "
              "(--slurm-probe keeps the SLURM plugin's probe)")
    elif probe:
        if args.slurm_probe:
            print("note: scontrol is installed but no SLURM controller answers; each snakemake start waits up to 10 s "
                  "for it (snakemake-executor-plugin-slurm's probe), included below")
        else:
            print("note: scontrol is installed but no SLURM controller answers; the plans run with a scontrol that "
                  "fails at once first on PATH, as without SLURM (--slurm-probe keeps the plugin's 10 s wait)")
    if args.quick or args.compare:
        with tempfile.TemporaryDirectory() as tmp:
            if probe and not args.slurm_probe:
                env_extra = no_slurm_probe(Path(tmp))
            compare(Path(tmp), args.repeat, env_extra, small=args.quick)
        return
    trees = [("baseline", args.baseline.resolve()), ("this tree", REPO)] if args.baseline else [("this tree", REPO)]
    plans = [("4 models x 3 windows", False, True, "config.yaml")] if args.scale else \
        [("main suite", False, False, "config.yaml")] + \
        ([] if args.main_only else [("main + game balance + 30/120 s windows", True, False, "config.yaml")])
    with tempfile.TemporaryDirectory() as tmp:
        if probe and not args.slurm_probe:
            env_extra = no_slurm_probe(Path(tmp))
        for label, optional, scale, source in plans:
            config = write_config(Path(tmp), optional, scale, source)
            seconds: dict[str, list[float]] = {name: [] for name, _ in trees}
            cpu_seconds: dict[str, list[float]] = {name: [] for name, _ in trees}
            for _ in range(args.repeat):
                for name, tree in trees:
                    elapsed, cpu, counts, peak = dry_run(Path(tmp), config, args.target, tree, env_extra=env_extra)
                    seconds[name].append(elapsed)
                    cpu_seconds[name].append(cpu)
                    mem = f", peak {peak / 1024:,.0f} MiB" if peak > 0 else ""
                    print(f"dry-run, {label}, {name}: {elapsed:6.1f} s ({cpu:.1f} s CPU), {counts.get('total', -1):,} jobs "
                          f"({counts.get('record', 0):,} record, {counts.get('score', 0):,} score; "
                          f"{os.cpu_count()} CPUs{mem})", flush=True)
            if args.baseline:
                for what, runs in (("wall", seconds), ("CPU", cpu_seconds)):
                    old, new = (statistics.median(runs[name]) for name, _ in trees)
                    print(f"{label}: median {what} {old:.1f} s -> {new:.1f} s, ratio {new / old:.2f}")


if __name__ == "__main__":
    main()
