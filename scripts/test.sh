#!/usr/bin/env bash
# The test command: installs what is missing, then runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# The viewer's browser tests drive Debian's Chromium (never a downloaded browser); they skip without it.
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "note: chromium is not installed; the browser tests will skip (apt-get install chromium)" >&2
  fi
fi
# shellcheck disable=SC1091
. .venv/bin/activate
export NO_TORCH_COMPILE=1 HF_HUB_OFFLINE=1
# Three workers on the CI machine's two cores (DYAFDB_TEST_WORKERS=0 runs in one process): about a third of a
# worker's time is spent waiting (on a subprocess's deadline, a browser, a workflow's shared processes), which a
# third worker fills; measured on 2 cores, 439 s against 493 s with two (BENCHMARKS.md "tests"). The tests of a
# file that shares a module-scoped fixture stay on one worker, the rest spread test by test (tests/conftest.py).
python -m pytest -q -n "${DYAFDB_TEST_WORKERS:-3}" --dist loadscope "$@"
