"""Shared fixtures: a small scenario suite and configs, generated in code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


TESTS_DIR = Path(__file__).parent
REPO = TESTS_DIR.parent
# Fixtures, synthetic generators and stand-ins of upstream servers and models live beside the tests;
# subprocesses (workers, snakemake) get the same folders through TEST_PATH.
TEST_DIRS = [TESTS_DIR, TESTS_DIR / "helpers", TESTS_DIR / "standins"]
TEST_PATH = os.pathsep.join(str(d) for d in TEST_DIRS)
for _d in reversed(TEST_DIRS):
    sys.path.insert(0, str(_d))

from synthetic_suite import scenario_doc, write_suite  # noqa: E402,F401 (re-exported to tests)
os.environ.setdefault("NO_TORCH_COMPILE", "1")


@pytest.fixture
def suite_root(tmp_path: Path) -> Path:
    write_suite(tmp_path)
    return tmp_path


def scripted_config(models: dict | None = None, window_s: float = 4.0, in_process: bool = True, **suite) -> dict:
    models = models or {
        "talker": {"adapter": "scripted", "params": {"script": [{"start_s": 0.0, "end_s": 1.0, "text": "hello there"}]}},
        "quiet": {"adapter": "scripted", "params": {"script": [{"start_s": 2.0, "end_s": 2.8, "text": "hi"}]}},
    }
    return {
        "scenarios_dir": "scenarios",
        "models": models,
        "suites": {"t": {"models": list(models), "archetypes": ["T1-1"], "repetitions": 1, "window_s": window_s, **suite}},
        "bridge": {"in_process": in_process, "progress": False},
    }
