"""Snakemake's SLURM executor plugin runs `scontrol show config` when Snakemake starts, whatever the
executor. On a machine with SLURM's client tools but no controller that answers, each `snakemake`
start waits about 10 s for it (a real cluster answers at once; a laptop without SLURM skips it).
The bench scripts that start Snakemake can put a `scontrol` that fails at once first on PATH, as on
a machine without SLURM: the plugin then starts as it does there."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def no_slurm_probe(root: Path) -> dict[str, str]:
    """PATH with a `scontrol` that fails at once first, as on a machine without SLURM."""
    shim = root / "no-slurm"
    shim.mkdir(exist_ok=True)
    (shim / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    (shim / "scontrol").chmod(0o755)
    return {"PATH": os.pathsep.join([str(shim), os.environ.get("PATH", "")])}


def slurm_probe_waits() -> bool:
    """Whether `scontrol` is installed but no controller answers (up to 3 s to find out)."""
    if not shutil.which("scontrol"):
        return False
    try:
        subprocess.run(["scontrol", "ping"], capture_output=True, timeout=3, check=True)
    except (subprocess.SubprocessError, OSError):
        return True
    return False
