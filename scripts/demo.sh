#!/usr/bin/env bash
# The demo: installs the locked environment (.venv), converts the KTH-SP2 trace shipped in data/swf,
# simulates it with FCFS on the embedded Batsim-compatible engine and prints a metrics table.
# Extra arguments go to `batfeed demo` (e.g. --jobs 2000 --out runs/small).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/batfeed demo "$@"
