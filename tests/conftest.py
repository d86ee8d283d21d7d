"""Shared fixtures: a small scenario suite and configs, generated in code."""

from __future__ import annotations

import os
import re
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


# Module-, class- and package-scoped fixtures (a demo run, a loaded model, a browser) as this scan finds
# them in a test file's source: ``@pytest.fixture(...scope="module"...)``.
SHARED_SCOPE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](?:module|class|package)[\"']")


def shared_fixture_files(tests_dir: Path = TESTS_DIR) -> set[str]:
    """Test files (rootdir-relative, as in node ids) that define a fixture shared beyond one test."""
    return {p.relative_to(tests_dir.parent).as_posix() for p in tests_dir.rglob("test_*.py")
            if SHARED_SCOPE.search(p.read_text(encoding="utf-8"))}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """scripts/test.sh runs the suite on pytest-xdist workers (``-n 3 --dist loadscope``). Its scheduler
    here: the tests of a file that defines a module-, class- or package-scoped fixture go to one worker
    together (the fixture is built once, not once per worker); every other test is its own unit, so
    the workers share the load test by test. xdist's ``--dist loadgroup`` would say this with
    markers, but xdist 3.8.0 renames a grouped test through ``item._nodeid``, which pytest 9.2 no
    longer reads (it keeps ``item._id``), so its groups are silently ignored."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    shared = shared_fixture_files(Path(str(config.rootpath)) / "tests")

    class FileWhereShared(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_unit(nodeid, shared)

    return FileWhereShared(config, log)


def worker_unit(nodeid: str, shared: set[str]) -> str:
    """What goes to one worker whole: the test's file where the file shares a fixture, else the test."""
    path = nodeid.split("::", 1)[0]
    return path if path in shared else nodeid
