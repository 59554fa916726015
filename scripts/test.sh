#!/usr/bin/env bash
# The whole test suite: installs the locked environment (.venv), lints with ruff, runs pytest.
# Extra arguments go to pytest (e.g. -k engine -x).  Tests needing ../shared/data skip when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/ruff check .
# .venv/bin/pytest, not `python -m pytest`: the latter puts the repo root on sys.path, where our
# schedulers/ folder would shadow pybatsim's own `schedulers` package.
exec .venv/bin/pytest "$@"
