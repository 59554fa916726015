#!/usr/bin/env bash
# Downloads, on the host, everything docker/Dockerfile installs, so that the build needs no network:
#
#   docker/wheelhouse.sh            -> docker/.build/wheelhouse/ (not committed; see .gitignore)
#
# requirements.txt is `uv export --frozen --no-dev --no-group kernel` of uv.lock (the kernel is compiled
# on the host: docker/ci.sh) (exact versions and their hashes, the
# pybatsim pyzmq override already applied); `pip download --no-deps --require-hashes` fetches them, plus
# the project's build backend (setuptools, wheel: pinned below) for the editable install.  The build
# runs `pip install --no-index --find-links /wheels`.  The download uses the project's own tools: the
# pip of .tools/ (the venv scripts/bootstrap.sh makes with python3 -m venv to install uv, so it has pip),
# never whatever `python3` or $PYTHON is at hand (the project's uv venv has no pip).  pip downloads for
# its own Python, which must have the image's minor version (3.11 for both base images of docker/ci.sh).
# Idempotent: files already there are kept (a few seconds when nothing changed).
# Environment: WHEELHOUSE_PYTHON (a Python with pip, default .tools/bin/python), UV (default
# .tools/bin/uv); both from scripts/bootstrap.sh, which runs first when either is missing.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
PY=${WHEELHOUSE_PYTHON:-$REPO/.tools/bin/python}
UV=${UV:-$REPO/.tools/bin/uv}
BUILD_BACKEND=(setuptools==80.9.0 wheel==0.45.1)  # pyproject.toml: setuptools>=69, wheel
OUT=docker/.build/wheelhouse

if [ ! -x "$UV" ] || ! command -v "$PY" > /dev/null; then scripts/bootstrap.sh > /dev/null; fi
"$PY" -m pip --version > /dev/null 2>&1 || "$PY" -m ensurepip --default-pip > /dev/null 2>&1 \
    || { echo "docker/wheelhouse.sh: $PY has no pip and ensurepip failed (set WHEELHOUSE_PYTHON to a Python with pip)" >&2; exit 1; }
mkdir -p "$OUT"
"$UV" export --frozen --no-dev --no-group kernel --no-emit-project --format requirements-txt --quiet -o "$OUT/requirements.txt.new"
# keep the file (and the build cache) unchanged when the lock did not change: drop uv's header comment
grep -v '^#' "$OUT/requirements.txt.new" > "$OUT/requirements.txt.tmp" && rm "$OUT/requirements.txt.new"
if cmp -s "$OUT/requirements.txt.tmp" "$OUT/requirements.txt"; then
    rm "$OUT/requirements.txt.tmp"
else
    mv "$OUT/requirements.txt.tmp" "$OUT/requirements.txt"
fi
pip=("$PY" -m pip download --disable-pip-version-check --quiet --no-deps --dest "$OUT")
"${pip[@]}" --require-hashes -r "$OUT/requirements.txt"
"${pip[@]}" "${BUILD_BACKEND[@]}"
echo "wheelhouse: $OUT ($(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1))"
