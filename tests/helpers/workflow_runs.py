"""The workflow run on a test project, as the tests of shared processes run it (score, record)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, TEST_PATH


def _command(tmp: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([TEST_PATH, os.environ.get("PYTHONPATH", "")])}
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp),
            "--configfile", str(tmp / "config.yaml"), *args], env


def snakemake(tmp: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``snakemake`` on the project ``tmp`` with its config.yaml; the test helpers on the path."""
    cmd, env = _command(tmp, *args)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def snakemake_in_background(tmp: Path, *args: str) -> subprocess.Popen:
    """:func:`snakemake` started in a session of its own (a test kills its process group)."""
    cmd, env = _command(tmp, *args)
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def job_logs(tmp: Path, rule: str) -> list[str]:
    """The logs of the project's per-conversation jobs of ``rule``, in path order."""
    return [p.read_text() for p in sorted((tmp / "results" / "logs" / rule).rglob("*.log"))]
