"""Planning cost of the paper's workflow: `snakemake -n` of everything (record, score, judge, analysis,
viewer) for the main suite, and for the main suite plus the game-balance and 30/120 s window suites.

    python bench/bench_dryrun.py [--main-only] [--target FILE ...]
    python bench/bench_dryrun.py --quick                                        # the demo suite's plan (CI)
    python bench/bench_dryrun.py --main-only --baseline /tmp/base --repeat 3   # paired: old vs this tree
    python bench/bench_dryrun.py --scale --baseline /tmp/base --repeat 2       # 4 models x 3 windows

With --baseline (a checkout of an older commit, e.g. `git worktree add --detach /tmp/base <commit>`),
the old tree's Snakefile and sources and this tree's are run alternately on the same config, and the
ratio of medians is printed: on a shared machine the load drifts, a paired ratio does not.

Prints wall seconds, jobs planned and the record / score job counts. Target (issue 8): under 30 s for
the main suite on 2 cores. Run it on an idle machine: the number is CPU-bound and single-threaded.

On a machine with SLURM's client tools but no reachable controller, the SLURM executor plugin's probe
(`scontrol show config`, at start-up, whatever the executor) waits up to 10 s; the script says so when
it sees that case, since a real cluster answers at once and a laptop without SLURM skips it.
"""

from __future__ import annotations

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

import yaml

import _testpath  # noqa: F401 (puts tests/helpers on the path)
from synthetic_suite import write_suite

REPO = Path(__file__).resolve().parent.parent
OPTIONAL_SUITES = ("game_balance", "window_30", "window_120")


def write_config(root: Path, enable_optional: bool, scale: bool = False, source: str = "config.yaml") -> Path:
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


def dry_run(root: Path, config: Path, targets: list[str], tree: Path = REPO) -> tuple[float, float, dict[str, int], int]:
    """Wall and CPU seconds, job counts and peak memory (KiB) of one `snakemake -n` with the Snakefile
    and sources of `tree`. CPU seconds (user + system) are what a busy shared machine distorts least."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "src"), os.environ.get("PYTHONPATH", "")]))
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


def slurm_probe_waits() -> bool:
    if not shutil.which("scontrol"):
        return False
    try:
        subprocess.run(["scontrol", "ping"], capture_output=True, timeout=3, check=True)
    except (subprocess.SubprocessError, OSError):
        return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--main-only", action="store_true", help="skip the run with the optional suites")
    parser.add_argument("--scale", action="store_true", help="only the 4 models x 3 windows plan (~80,000 jobs)")
    parser.add_argument("--target", nargs="*", default=[], help="plan only these targets (default: everything)")
    parser.add_argument("--baseline", type=Path, help="an older checkout to run alternately with this one")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tree")
    parser.add_argument("--quick", action="store_true",
                        help="plan the demo suite (config/demo.yaml) instead: the same workflow at its smallest size (CI)")
    args = parser.parse_args()
    if slurm_probe_waits():
        print("note: scontrol is installed but no SLURM controller answers; each snakemake start waits up to 10 s "
              "for it (snakemake-executor-plugin-slurm's probe), included below")
    trees = [("baseline", args.baseline.resolve()), ("this tree", REPO)] if args.baseline else [("this tree", REPO)]
    plans = [("4 models x 3 windows", False, True, "config.yaml")] if args.scale else \
        [("demo suite", False, False, "demo.yaml")] if args.quick else \
        [("main suite", False, False, "config.yaml")] + \
        ([] if args.main_only else [("main + game balance + 30/120 s windows", True, False, "config.yaml")])
    with tempfile.TemporaryDirectory() as tmp:
        for label, optional, scale, source in plans:
            config = write_config(Path(tmp), optional, scale, source)
            seconds: dict[str, list[float]] = {name: [] for name, _ in trees}
            cpu_seconds: dict[str, list[float]] = {name: [] for name, _ in trees}
            for _ in range(args.repeat):
                for name, tree in trees:
                    elapsed, cpu, counts, peak = dry_run(Path(tmp), config, args.target, tree)
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
