"""Shared fixtures: a small scenario suite and configs, generated in code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dyafdb.synthetic import scenario_doc, write_suite  # noqa: F401 (re-exported to tests)

TESTS_DIR = Path(__file__).parent
REPO = TESTS_DIR.parent
sys.path.insert(0, str(TESTS_DIR))
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
