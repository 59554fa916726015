#!/usr/bin/env bash
# The whole test suite: installs the locked environment (.venv), lints with ruff, runs pytest.
# Extra arguments go to pytest (e.g. -k engine -x).  Tests needing ../shared/data skip when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/ruff check .
# .venv/bin/pytest, not `python -m pytest`: the latter puts the repo root on sys.path, where our
# schedulers/ folder would shadow pybatsim's own `schedulers` package.
.venv/bin/pytest "$@"
# Then, when the compiled kernel is active (batfeed/kernel.py), the conformance kit, the driver-equivalence
# tests and the properties again on the pure-Python path (the `both_paths` marker, tests/conftest.py).
if .venv/bin/python -c 'import batfeed.kernel as k, sys; sys.exit(k.state()["path"] != "compiled")'; then
    BATFEED_PURE=1 .venv/bin/pytest "$@" -m both_paths
fi
