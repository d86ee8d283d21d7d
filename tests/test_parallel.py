"""scripts/test.sh runs the suite on pytest-xdist workers (three): a fixture shared by a file's tests is
built once (its file goes to one worker whole), and the other tests spread over the workers."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import TESTS_DIR, shared_fixture_files, worker_unit


def test_a_file_sharing_a_fixture_is_one_unit_and_any_other_test_its_own():
    shared = shared_fixture_files()
    assert "tests/verify/test_verify.py" in shared and "tests/analysis/test_analysis_cli.py" in shared
    assert "tests/test_yaml_strict.py" not in shared
    assert worker_unit("tests/verify/test_verify.py::test_x[a-b]", shared) == "tests/verify/test_verify.py"
    assert worker_unit("tests/test_yaml_strict.py::test_y", shared) == "tests/test_yaml_strict.py::test_y"


def test_two_workers_build_a_module_fixture_once_and_share_the_rest(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    # this suite's scheduler hook, loaded under another module name (the folder has its own conftest)
    (tests / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('suite_conftest', {str(TESTS_DIR / 'conftest.py')!r})\n"
        "suite = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(suite)\n"
        "pytest_xdist_make_scheduler = suite.pytest_xdist_make_scheduler\n")
    built = tmp_path / "built.txt"
    (tests / "test_shared.py").write_text(
        "import os, time\nimport pytest\n\n"
        "@pytest.fixture(scope=\"module\")\ndef model():\n"
        f"    with open({str(built)!r}, 'a') as f:\n        f.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n"
        "    return 1\n\n"
        + "".join(f"def test_s{i}(model):\n    time.sleep(0.1)\n\n" for i in range(6)))
    (tests / "test_free.py").write_text(
        "import time\n\n" + "".join(f"def test_f{i}():\n    time.sleep(0.3)\n\n" for i in range(8)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-n", "2", "--dist", "loadscope"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    workers: dict[str, str] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d)\] \[\s*\d+%\] PASSED (\S+)", done.stdout, re.M):
        workers[nodeid] = worker
    assert len(workers) == 14, done.stdout[-3000:]
    assert len(built.read_text().split()) == 1, "the module fixture was built on more than one worker"
    assert len({w for n, w in workers.items() if "test_shared" in n}) == 1
    assert set(workers.values()) == {"gw0", "gw1"}, "the other tests did not spread over both workers"
