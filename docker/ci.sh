#!/usr/bin/env bash
# Docker stage of CI (.ci/run calls it when CI=true; also runnable by hand, from anywhere):
#
#   docker/ci.sh
#
# 1. a Docker engine: the running one; else, as root, dockerd from the OS packages (apt-get install
#    docker.io when missing, waiting at most APT_LOCK_WAIT s while another apt holds the lock), started with its default options and stopped again at the end (by PID);
# 2. a base image: python:3.11-slim-bookworm (local, or pulled where a registry answers), else one made
#    from Debian's packages (debootstrap --variant=minbase + docker import), kept as $CI_BASE_IMAGE
#    and reused by later runs on the same machine;
# 3. the batfeed image from docker/Dockerfile (wheels downloaded on the host by docker/wheelhouse.sh,
#    installed with --no-index: no network inside the build);
# 4. every scenario of docker/scenarios under Docker Compose (v2 where available, else v1), through
#    docker/run-integration.sh --docker, which checks the outputs.  The `batsim` service is
#    $BATSIM_IMAGE (real Batsim) when that variable is set, else batfeed's embedded engine in its own
#    container (docker/compose.embedded.yml).
#
# When no engine can be had (BATFEED_DOCKER=off, not root and no running engine, no packages, dockerd
# does not start …) it prints one line saying why and exits 0; once an engine is there, any failure
# exits 1.  Logs: runs/docker-ci/ (dockerd, apt, debootstrap, build); scenario outputs:
# runs/integration/SCENARIO-docker/.
#
# Environment: BATFEED_DOCKER=off (skip), BATSIM_IMAGE, BATFEED_IMAGE (default batfeed:local),
# BATFEED_BASE_IMAGE (a base image to use as is), DEBIAN_MIRROR (debootstrap, default
# http://deb.debian.org/debian), PULL_TIMEOUT (seconds per `docker pull`, default 30), APT_LOCK_WAIT
# (seconds to wait for another apt/dpkg to release its lock, default 300; docker/apt.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
cd "$REPO"
LOGS=$REPO/runs/docker-ci
PY_IMAGE=python:3.11-slim-bookworm
CI_BASE_IMAGE=batfeed-ci-base:bookworm          # made from Debian packages; cached between runs
BATFEED_IMAGE=${BATFEED_IMAGE:-batfeed:local}
PULL_TIMEOUT=${PULL_TIMEOUT:-30}
export BATFEED_IMAGE

t0=$(date +%s)
log() { echo "[docker-ci +$(( $(date +%s) - t0 ))s] $*"; }
# Until an engine is there, progress lines are held back, so that a skip is one line only.
held=()
hold() { held+=("[docker-ci +$(( $(date +%s) - t0 ))s] $*"); }
skip() { echo "docker/ci.sh: Docker stage skipped: $*"; exit 0; }
fail() { echo "docker/ci.sh: FAILED: $*" >&2; exit 1; }
show_tail() { echo "---- last lines of $1" >&2; tail -n "${2:-30}" "$1" >&2 || true; }

[ "${BATFEED_DOCKER:-}" != off ] || skip "BATFEED_DOCKER=off"

dockerd_pid=""
stop_dockerd() {
    [ -n "$dockerd_pid" ] || return 0
    kill "$dockerd_pid" 2> /dev/null || true
    for _ in $(seq 60); do kill -0 "$dockerd_pid" 2> /dev/null || break; sleep 0.5; done
    if kill -0 "$dockerd_pid" 2> /dev/null; then kill -9 "$dockerd_pid" 2> /dev/null || true; fi
    log "dockerd (pid $dockerd_pid) stopped"
    dockerd_pid=""
}
trap stop_dockerd EXIT
trap 'exit 143' TERM INT

APT_LOG=$LOGS/apt.log
# shellcheck source=docker/apt.sh
. "$HERE/apt.sh"          # apt_install: waits (bounded, APT_LOCK_WAIT) while another apt holds the lock

# ------------------------------------------------------------------------------ 1. the engine
if command -v docker > /dev/null && timeout 20 docker info > /dev/null 2>&1; then
    hold "using the running Docker engine"
else
    [ "$(id -u)" = 0 ] || skip "no running Docker engine, and not root (cannot install or start dockerd)"
    mkdir -p "$LOGS"
    if ! command -v dockerd > /dev/null; then
        command -v apt-get > /dev/null || skip "no dockerd, and no apt-get to install docker.io"
        hold "installing docker.io from the OS packages"
        rc=0; apt_install docker.io || rc=$?
        [ "$rc" != 2 ] || skip "no dockerd, and another apt/dpkg held the lock for ${APT_LOCK_WAIT}s (see $LOGS/apt.log)"
        [ "$rc" = 0 ] || skip "no dockerd, and apt-get install docker.io failed (see $LOGS/apt.log)"
    fi
    command -v docker > /dev/null || skip "dockerd installed but no docker client"
    # a dockerd killed earlier may leave its pid file behind, which stops the next one from starting
    if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2> /dev/null; then
        rm -f /var/run/docker.pid
    fi
    hold "starting dockerd (log: $LOGS/dockerd.log)"
    dockerd > "$LOGS/dockerd.log" 2>&1 &
    dockerd_pid=$!
    for _ in $(seq 60); do
        docker info > /dev/null 2>&1 && break
        kill -0 "$dockerd_pid" 2> /dev/null || break
        sleep 0.5
    done
    if ! docker info > /dev/null 2>&1; then
        why=$(grep -iE 'level=(fatal|error)|failed' "$LOGS/dockerd.log" | tail -n 1 | cut -c1-200)
        kill "$dockerd_pid" 2> /dev/null || true
        wait "$dockerd_pid" 2> /dev/null || true
        dockerd_pid=""
        skip "dockerd did not start (${why:-see $LOGS/dockerd.log})"
    fi
    hold "dockerd started (pid $dockerd_pid): $(docker version -f 'server {{.Server.Version}}, client {{.Client.Version}}')"
fi
printf '%s\n' "${held[@]}"
mkdir -p "$LOGS"
# From here on an engine is there: every failure fails the stage.

if docker compose version > /dev/null 2>&1; then
    compose_version=$(docker compose version)
elif command -v docker-compose > /dev/null; then
    compose_version=$(docker-compose version --short 2> /dev/null || true)
    compose_version="docker-compose $compose_version"
else
    [ "$(id -u)" = 0 ] || fail "no Docker Compose ('docker compose' or 'docker-compose'), and not root to install it"
    log "installing docker-compose (Compose v1) from the OS packages"
    apt_install docker-compose || fail "apt-get install docker-compose failed (see $LOGS/apt.log)"
    compose_version="docker-compose $(docker-compose version --short 2> /dev/null || true)"
fi
log "compose: $compose_version"

# --------------------------------------------------------------------------- 2. the base image
pull() { timeout "$PULL_TIMEOUT" docker pull -q "$1" > "$LOGS/pull.log" 2>&1; }
if [ -n "${BATFEED_BASE_IMAGE:-}" ]; then
    base=$BATFEED_BASE_IMAGE
    docker image inspect "$base" > /dev/null 2>&1 || pull "$base" || fail "base image $base: not here, pull failed"
    log "base image: $base (BATFEED_BASE_IMAGE)"
elif docker image inspect "$PY_IMAGE" > /dev/null 2>&1; then
    base=$PY_IMAGE
    log "base image: $base (already here)"
elif pull "$PY_IMAGE"; then
    base=$PY_IMAGE
    log "base image: $base (pulled)"
elif docker image inspect "$CI_BASE_IMAGE" > /dev/null 2>&1; then
    base=$CI_BASE_IMAGE
    log "base image: $base (no registry: $(tail -n 1 "$LOGS/pull.log" | cut -c1-120); reusing the one made from Debian packages on $(docker image inspect -f '{{.Created}}' "$base" | cut -c1-19))"
else
    log "no registry ($(tail -n 1 "$LOGS/pull.log" | cut -c1-120)): making $CI_BASE_IMAGE from Debian packages"
    [ "$(id -u)" = 0 ] || fail "making the base image needs root (debootstrap); or set BATFEED_BASE_IMAGE"
    command -v debootstrap > /dev/null || apt_install debootstrap || fail "apt-get install debootstrap failed"
    rootfs=$(mktemp -d /var/tmp/batfeed-rootfs.XXXXXX)
    debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" \
        "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" > "$LOGS/debootstrap.log" 2>&1 \
        || { show_tail "$LOGS/debootstrap.log"; rm -rf "$rootfs"; fail "debootstrap failed"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' \
        --message "debootstrap --variant=minbase --include=python3,python3-venv bookworm (docker/ci.sh)" \
        - "$CI_BASE_IMAGE" > /dev/null || { rm -rf "$rootfs"; fail "docker import of the base image failed"; }
    rm -rf "$rootfs"
    base=$CI_BASE_IMAGE
    log "base image: $base (made from Debian packages)"
fi
base_py=$(docker run --rm "$base" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
    || fail "base image $base: no python3"
host_py=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$base_py" = "$host_py" ] || fail "base image has Python $base_py, the host's python3 (wheelhouse) $host_py"

# ------------------------------------------------------------------------- 3. the batfeed image
# the compiled kernel (batfeed/_kernel, docs/kernel.md) is built on the host, whose Python has the
# image's minor version (checked above): the image build has neither network nor compiler
log "compiled kernel (scripts/bootstrap.sh)"
scripts/bootstrap.sh > "$LOGS/bootstrap.log" 2>&1 || { show_tail "$LOGS/bootstrap.log"; fail "scripts/bootstrap.sh failed"; }
log "$(.venv/bin/batfeed --version)"
log "wheelhouse (docker/wheelhouse.sh)"
"$HERE/wheelhouse.sh" > "$LOGS/wheelhouse.log" 2>&1 || { show_tail "$LOGS/wheelhouse.log"; fail "docker/wheelhouse.sh failed"; }
log "$(tail -n 1 "$LOGS/wheelhouse.log")"
log "building $BATFEED_IMAGE from docker/Dockerfile on $base (log: $LOGS/build.log)"
DOCKER_BUILDKIT=0 docker build -f docker/Dockerfile --build-arg "PYTHON_IMAGE=$base" -t "$BATFEED_IMAGE" . \
    > "$LOGS/build.log" 2>&1 || { show_tail "$LOGS/build.log"; fail "docker build failed"; }
log "built $BATFEED_IMAGE ($(docker image inspect -f '{{.Size}}' "$BATFEED_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'), $(grep -c 'Using cache' "$LOGS/build.log" || true) cached steps), user $(docker image inspect -f '{{.Config.User}}' "$BATFEED_IMAGE")"

# ------------------------------------------------------------------------------- 4. the scenarios
run_args=(--docker --no-build)
if [ -n "${BATSIM_IMAGE:-}" ]; then
    docker image inspect "$BATSIM_IMAGE" > /dev/null 2>&1 || pull "$BATSIM_IMAGE" \
        || fail "BATSIM_IMAGE=$BATSIM_IMAGE: not here and the pull failed"
    log "batsim service: $BATSIM_IMAGE"
else
    run_args+=(--batsim-embedded)
    log "batsim service: batfeed's embedded engine in a $BATFEED_IMAGE container (no BATSIM_IMAGE)"
fi
export BATFEED_BASE_IMAGE=$base
failed=()
count=0
for dir in "$HERE"/scenarios/*/; do
    [ -f "$dir/scenario.json" ] || continue
    name=$(basename "$dir")
    count=$((count + 1))
    s0=$(date +%s)
    if "$HERE/run-integration.sh" "${run_args[@]}" "$name" > "$LOGS/scenario-$name.log" 2>&1; then
        log "$(grep '^ok ' "$LOGS/scenario-$name.log") [$(( $(date +%s) - s0 ))s; $(grep -E 'container exit status' "$LOGS/scenario-$name.log" | sed 's/^ *//' | paste -sd ';' -)]"
    else
        show_tail "$LOGS/scenario-$name.log" 40
        log "FAILED $name (log: $LOGS/scenario-$name.log)"
        failed+=("$name")
    fi
done
[ "$count" -gt 0 ] || fail "no scenario in docker/scenarios"
[ "${#failed[@]}" -eq 0 ] || fail "${#failed[@]}/$count scenarios failed under Docker: ${failed[*]}"
log "Docker stage passed: image built, $count/$count scenarios ran in containers and checked, in $(( $(date +%s) - t0 ))s"
