#!/usr/bin/env bash
# Runs one integration scenario and checks Batsim's outputs.
#
#   docker/run-integration.sh [--docker | --local | --embedded] [options] SCENARIO
#
# SCENARIO is a folder of docker/scenarios/ (fcfs_small, easy_sqf, fcfs_events, dynamic_resubmit) or
# the path of a scenario folder (see docker/scenario_tool.py for its scenario.json).  The inputs are
# copied into a work directory under the names used by the Batsim command line of
# docker/docker-compose.yml (+ the variant's override file), which is the one command line of all modes:
#
#   --docker    (default) `docker compose up` of the Batsim container and the batfeed scheduler
#               container (image built from docker/Dockerfile); needs a Docker engine and Docker
#               Compose: v2 >= 2.27 (`up --abort-on-container-failure`), else Compose v1
#               (`docker-compose`, e.g. Debian bookworm's 1.29), where this script watches the
#               containers and stops the other one when one fails
#   --local     a `batsim` binary on PATH, same arguments (/data -> the work directory), beside
#               `batfeed schedule` from .venv
#   --embedded  batfeed's embedded engine playing Batsim over ZeroMQ (`batfeed simulate --transport zmq`)
#               beside `batfeed schedule`: the same two processes, no Batsim needed
#
# then the same checks (docker/scenario_tool.py check): _jobs.csv has Batsim's header, every job of the
# workload appears exactly once (completed or rejected), counts match the scenario and _schedule.csv,
# and, when the scenario has one, the schedule matches its hand-computed reference.
#
# Options:
#   --workdir DIR   work directory (default runs/integration/SCENARIO-MODE); emptied first
#   --port N        scheduler port for --local/--embedded (default: a free port)
#   --timeout S     wall-clock limit per process for --local/--embedded (default 600)
#   --keep          --docker: keep the containers and network (default: `docker compose down`)
#   --no-build      --docker: use the images as they are (no `up --build`; docker/ci.sh builds first);
#                   without it, `up --build` needs the wheelhouse (made by docker/wheelhouse.sh if missing)
#   --batsim-embedded  --docker: the `batsim` service runs batfeed's embedded engine in a batfeed container
#                   (docker/compose.embedded.yml, added last) instead of $BATSIM_IMAGE
# Environment: PYTHON (Python for the helper scripts, default .venv/bin/python, else python3; --local and
# --embedded read the compose files with PyYAML, which it must have), BATFEED (batfeed CLI, default
# .venv/bin/batfeed), BATSIM_IMAGE, BATFEED_IMAGE, BATFEED_BASE_IMAGE (see docker/docker-compose.yml),
# COMPOSE (--docker: "docker compose" or "docker-compose" instead of the automatic choice).
#
# Exit status: 0 simulation ran and outputs are right; 1 simulation or check failed; 2 usage error or
# missing prerequisite (no Docker engine, no batsim on PATH …).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$REPO/.venv/bin/python" ]; then PYTHON=$REPO/.venv/bin/python; else PYTHON=python3; fi
fi

mode=docker
workdir=""
port=""
timeout_s=600
keep=0
build=1
embedded_batsim=0
scenario_arg=""

usage() { # [STATUS]: the header comment; exit STATUS (default 2, usage error)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit "${1:-2}"
}
die() { # status message...
    local status=$1
    shift
    echo "run-integration.sh: $*" >&2
    exit "$status"
}

while [ $# -gt 0 ]; do
    case "$1" in
        --docker) mode=docker ;;
        --local) mode=local ;;
        --embedded) mode=embedded ;;
        --workdir) [ $# -ge 2 ] || usage; workdir=$2; shift ;;
        --port) [ $# -ge 2 ] || usage; port=$2; shift ;;
        --timeout) [ $# -ge 2 ] || usage; timeout_s=$2; shift ;;
        --keep) keep=1 ;;
        --no-build) build=0 ;;
        --batsim-embedded) embedded_batsim=1 ;;
        -h|--help) usage 0 ;;
        -*) echo "run-integration.sh: unknown option $1" >&2; usage ;;
        *) [ -z "$scenario_arg" ] || usage; scenario_arg=$1 ;;
    esac
    shift
done
[ -n "$scenario_arg" ] || usage

if [ -d "$scenario_arg" ]; then
    scenario=$(cd "$scenario_arg" && pwd)
elif [ -d "$HERE/scenarios/$scenario_arg" ]; then
    scenario="$HERE/scenarios/$scenario_arg"
else
    known=""
    for d in "$HERE"/scenarios/*/; do known="$known $(basename "$d")"; done
    die 2 "no scenario '$scenario_arg' (known:$known)"
fi
command -v "$PYTHON" > /dev/null || die 2 "no $PYTHON for the helper scripts (set PYTHON)"

tool() { "$PYTHON" "$HERE/scenario_tool.py" "$@"; }

name=$(tool get "$scenario" name)
variant=$(tool get "$scenario" variant)
options=$(tool get "$scenario" options)
workdir=${workdir:-$REPO/runs/integration/$name-$mode}

# Prerequisites before touching the work directory.
case "$mode" in
    docker)
        command -v docker > /dev/null || die 2 "--docker: no docker command on PATH"
        docker info > /dev/null 2>&1 || die 2 "--docker: the Docker engine is not reachable (docker info failed)"
        if [ -n "${COMPOSE:-}" ]; then
            read -r -a compose <<< "$COMPOSE"
        elif docker compose version > /dev/null 2>&1; then
            compose=(docker compose)
        elif command -v docker-compose > /dev/null; then
            compose=(docker-compose)
        else
            die 2 "--docker: no Docker Compose ('docker compose' v2 or 'docker-compose' v1)"
        fi
        # --abort-on-container-failure: Compose v2 >= 2.27; otherwise this script watches the containers
        abort_flag=0
        if [ "${compose[*]}" = "docker compose" ]; then
            v2=$(docker compose version 2> /dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1 || true)
            IFS=. read -r major minor _ <<< "$v2"
            if [ "${major:-0}" -gt 2 ] 2> /dev/null || { [ "${major:-0}" -eq 2 ] && [ "${minor:-0}" -ge 27 ]; } 2> /dev/null
            then
                abort_flag=1
            fi
        fi
        if [ "$build" = 1 ] && [ ! -f "$HERE/.build/wheelhouse/requirements.txt" ]; then
            "$HERE/wheelhouse.sh" || die 2 "--docker: docker/wheelhouse.sh failed (the image build needs its wheels)"
        fi
        ;;
    local|embedded)
        BATFEED=${BATFEED:-$REPO/.venv/bin/batfeed}
        if [ ! -x "$BATFEED" ]; then
            BATFEED=$(command -v batfeed) || die 2 "no batfeed CLI (run scripts/bootstrap.sh or set BATFEED)"
        fi
        if [ "$mode" = local ]; then
            command -v batsim > /dev/null || die 2 "--local: no batsim binary on PATH"
        fi
        "$PYTHON" -c 'import yaml' 2> /dev/null \
            || die 2 "--$mode: $PYTHON has no PyYAML (it reads the compose files): set PYTHON to a Python" \
                "with PyYAML, e.g. the repository's .venv/bin/python (scripts/bootstrap.sh)"
        ;;
esac

rm -rf "$workdir"
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
tool prepare "$scenario" "$workdir"
echo "== $name ($variant, $mode): $(tool get "$scenario" description)"
echo "   work directory: $workdir"

run_pair() { # SCHEDULER_ARG SOCKET_BIND BATSIM_COMMAND...: the scheduler and "Batsim", as in compose
    local sched=$1 bind=$2 sched_pid sim_pid sim_status=0 sched_status=0
    local limit=()
    if command -v timeout > /dev/null; then limit=(timeout "$timeout_s"); fi
    shift 2
    "${limit[@]}" "$BATFEED" schedule "$sched" --socket "$bind" --options "$options" \
        > "$workdir/scheduler.log" 2>&1 &
    sched_pid=$!
    "${limit[@]}" "$@" > "$workdir/batsim.log" 2>&1 &
    sim_pid=$!
    # Like --abort-on-container-failure: when one side fails, stop the other (it would wait forever).
    while kill -0 "$sched_pid" 2> /dev/null && kill -0 "$sim_pid" 2> /dev/null; do sleep 0.1; done
    if ! kill -0 "$sim_pid" 2> /dev/null; then
        wait "$sim_pid" || sim_status=$?
        if [ "$sim_status" -ne 0 ]; then kill "$sched_pid" 2> /dev/null || true; fi
        wait "$sched_pid" || sched_status=$?
    else
        wait "$sched_pid" || sched_status=$?  # exits first after its SIMULATION_ENDS reply
        if [ "$sched_status" -ne 0 ]; then kill "$sim_pid" 2> /dev/null || true; fi
        wait "$sim_pid" || sim_status=$?
    fi
    echo "   batsim side exit status: $sim_status (log: $workdir/batsim.log)"
    echo "   scheduler exit status:   $sched_status (log: $workdir/scheduler.log)"
    if [ "$sim_status" -ne 0 ] || [ "$sched_status" -ne 0 ]; then
        tail -n 20 "$workdir/batsim.log" "$workdir/scheduler.log" >&2 || true
        die 1 "$name: the simulation failed"
    fi
}

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case "$mode" in
    local|embedded)
        port=${port:-$(free_port)}
        sched=$(tool scheduler "$scenario" "$workdir")
        if [ "$mode" = local ]; then
            out=$(tool batsim-args "$scenario" "$workdir" "tcp://localhost:$port")
            mapfile -t batsim_args <<< "$out"
            echo "   batsim ${batsim_args[*]}"
            run_pair "$sched" "tcp://*:$port" batsim "${batsim_args[@]}"
        else
            out=$(tool simulate-args "$scenario" "$workdir")
            mapfile -t sim_args <<< "$out"
            echo "   batfeed ${sim_args[*]} --transport zmq --socket tcp://localhost:$port"
            run_pair "$sched" "tcp://*:$port" "$BATFEED" "${sim_args[@]}" --transport zmq \
                --socket "tcp://localhost:$port" --no-progress
        fi
        ;;
    docker)
        out=$(tool compose-files "$scenario")
        mapfile -t files <<< "$out"
        if [ "$embedded_batsim" = 1 ]; then files+=("$HERE/compose.embedded.yml"); fi
        for f in "${files[@]}"; do compose+=(-f "$f"); done
        project="batfeed-it-$(echo "$name" | tr -c 'a-z0-9\n' '-')"
        compose+=(-p "$project")
        BATFEED_DATA=$workdir
        BATFEED_SCHEDULER=$(tool scheduler "$scenario" /data)
        BATFEED_OPTIONS=$options
        BATFEED_UID=$(id -u)
        BATFEED_GID=$(id -g)
        export BATFEED_DATA BATFEED_SCHEDULER BATFEED_OPTIONS BATFEED_UID BATFEED_GID
        cleanup() { [ "$keep" = 1 ] || "${compose[@]}" down --remove-orphans > /dev/null 2>&1 || true; }
        trap cleanup EXIT
        up=(up)
        if [ "$build" = 1 ]; then up+=(--build); fi
        if [ "$abort_flag" = 1 ]; then up+=(--abort-on-container-failure); fi
        up+=(--no-color)
        echo "   ${compose[*]} ${up[*]}"
        up_status=0
        if [ "$abort_flag" = 1 ]; then
            "${compose[@]}" "${up[@]}" || up_status=$?
        else
            # No --abort-on-container-failure (Compose v1's --abort-on-container-exit would also stop
            # Batsim when the scheduler exits first, after its SIMULATION_ENDS reply, possibly before
            # Batsim's outputs are written): `up` returns once both containers have exited; when one
            # fails, the other is stopped here (after removing what an interrupted earlier run left).
            "${compose[@]}" down --remove-orphans > /dev/null 2>&1 || true
            "${compose[@]}" "${up[@]}" &
            up_pid=$!
            while kill -0 "$up_pid" 2> /dev/null; do
                for cid in $(docker ps -a -q --filter "label=com.docker.compose.project=$project" \
                                 --filter status=exited 2> /dev/null); do
                    if [ "$(docker inspect -f '{{.State.ExitCode}}' "$cid" 2> /dev/null)" != 0 ]; then
                        echo "   a container failed: stopping the others"
                        "${compose[@]}" kill > /dev/null 2>&1 || true
                        break 2
                    fi
                done
                sleep 1
            done
            wait "$up_pid" || up_status=$?
        fi
        failed=0
        for service in batsim scheduler; do
            cid=$("${compose[@]}" ps -a -q "$service" | head -n 1)
            code=$(docker inspect -f '{{.State.ExitCode}}' "$cid" 2> /dev/null || echo "?")
            echo "   $service container exit status: $code"
            [ "$code" = 0 ] || failed=1
        done
        if [ "$up_status" -ne 0 ] || [ "$failed" -ne 0 ]; then
            die 1 "$name: a container failed or compose up failed (${compose[*]} up exited with $up_status)"
        fi
        ;;
esac

tool check "$scenario" "$workdir"
