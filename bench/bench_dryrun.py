"""Planning cost of the paper's workflow: `snakemake -n` of everything (record, score, judge, analysis,
viewer) for the main suite, and for the main suite plus the game-balance and 30/120 s window suites.

    python bench/bench_dryrun.py [--main-only] [--target FILE ...]

Prints wall seconds, jobs planned and the record / score job counts. Target (issue 8): under 30 s for
the main suite on 2 cores. Run it on an idle machine: the number is CPU-bound and single-threaded.

On a machine with SLURM's client tools but no reachable controller, the SLURM executor plugin's probe
(`scontrol show config`, at start-up, whatever the executor) waits up to 10 s; the script says so when
it sees that case, since a real cluster answers at once and a laptop without SLURM skips it.
"""

from __future__ import annotations

import argparse
import os
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


def write_config(root: Path, enable_optional: bool) -> Path:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    scenarios = REPO / "scenarios"
    if all(len(list((scenarios / a).glob("*.yaml"))) >= 20 for a in ("T1-1", "T2", "T4-2", "T4-3", "T4-4")):
        cfg["scenarios_dir"] = str(scenarios)
    else:  # a checkout without the scenario files: a synthetic suite of the same size
        write_suite(root, per_archetype=20)
        cfg["scenarios_dir"] = str(root / "scenarios")
    cfg.setdefault("judge", {})["prompts_dir"] = str(REPO / "config" / "judge")  # planned from a scratch folder
    for name in OPTIONAL_SUITES:
        cfg["suites"][name]["enabled"] = enable_optional
    path = root / ("cfg-all.yaml" if enable_optional else "cfg-main.yaml")
    path.write_text(yaml.safe_dump(cfg))
    return path


def dry_run(root: Path, config: Path, targets: list[str]) -> tuple[float, dict[str, int]]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"),
                          "--directory", str(root), "--configfile", str(config), "-n", "--quiet", "rules",
                          "--cores", "2", *targets], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(f"snakemake -n failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    counts: dict[str, int] = {}
    for line in out.stdout.split("Job stats:")[-1].splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return elapsed, counts


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
    parser.add_argument("--target", nargs="*", default=[], help="plan only these targets (default: everything)")
    args = parser.parse_args()
    if slurm_probe_waits():
        print("note: scontrol is installed but no SLURM controller answers; each snakemake start waits up to 10 s "
              "for it (snakemake-executor-plugin-slurm's probe), included below")
    with tempfile.TemporaryDirectory() as tmp:
        for optional in (False,) if args.main_only else (False, True):
            config = write_config(Path(tmp), optional)
            seconds, counts = dry_run(Path(tmp), config, args.target)
            label = "main + game balance + 30/120 s windows" if optional else "main suite"
            print(f"dry-run, {label}: {seconds:6.1f} s, {counts.get('total', -1):,} jobs "
                  f"({counts.get('record', 0):,} record, {counts.get('score', 0):,} score; {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
