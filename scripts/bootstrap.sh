#!/usr/bin/env bash
# Creates .venv with exactly the versions in uv.lock, then compiles batfeed's kernel (batfeed/kernel.py;
# ~1-2 min the first time, skipped when up to date; without a C compiler one warning line and the
# pure-Python path).  Idempotent, ~5 s when already done.
# Needs only python3 (>= 3.11) and access to PyPI.  uv is used because pybatsim 3.2.1 pins
# pyzmq<23, which cannot be built on Python >= 3.11: pyproject.toml overrides that pin.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
PY=${PYTHON:-python3}
if [ ! -x .tools/bin/uv ] || [ "$(.tools/bin/uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    "$PY" -m venv .tools
    .tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi
UV_PYTHON_DOWNLOADS=never .tools/bin/uv sync --frozen --quiet --python "$(command -v "$PY")"
.venv/bin/python -m batfeed.kernel_build --quiet
