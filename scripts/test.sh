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
# Two workers (one per core of the CI machine; DYAFDB_TEST_WORKERS=0 runs in one process): the tests of a file
# that shares a module-scoped fixture stay on one worker, the rest spread test by test (tests/conftest.py).
python -m pytest -q -n "${DYAFDB_TEST_WORKERS:-2}" --dist loadscope "$@"
