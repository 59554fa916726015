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
#               container (image built from docker/Dockerfile); needs a Docker engine and Compose >= 2.27
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
# Environment: PYTHON (Python for the helper scripts, default .venv/bin/python, else python3; --local and
# --embedded read the compose files with PyYAML, which it must have), BATFEED (batfeed CLI, default
# .venv/bin/batfeed), BATSIM_IMAGE, BATFEED_IMAGE (see docker/docker-compose.yml).
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
        docker compose version > /dev/null 2>&1 || die 2 "--docker: Docker Compose v2 ('docker compose') is missing"
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
        compose=(docker compose)
        for f in "${files[@]}"; do compose+=(-f "$f"); done
        compose+=(-p "batfeed-it-$(echo "$name" | tr -c 'a-z0-9\n' '-')")
        BATFEED_DATA=$workdir
        BATFEED_SCHEDULER=$(tool scheduler "$scenario" /data)
        BATFEED_OPTIONS=$options
        BATFEED_UID=$(id -u)
        BATFEED_GID=$(id -g)
        export BATFEED_DATA BATFEED_SCHEDULER BATFEED_OPTIONS BATFEED_UID BATFEED_GID
        cleanup() { [ "$keep" = 1 ] || "${compose[@]}" down --remove-orphans > /dev/null 2>&1 || true; }
        trap cleanup EXIT
        echo "   ${compose[*]} up --build --abort-on-container-failure"
        up_status=0
        "${compose[@]}" up --build --abort-on-container-failure --no-color || up_status=$?
        failed=0
        for service in batsim scheduler; do
            cid=$("${compose[@]}" ps -a -q "$service" | head -n 1)
            code=$(docker inspect -f '{{.State.ExitCode}}' "$cid" 2> /dev/null || echo "?")
            echo "   $service container exit status: $code"
            [ "$code" = 0 ] || failed=1
        done
        if [ "$up_status" -ne 0 ] || [ "$failed" -ne 0 ]; then
            die 1 "$name: docker compose up exited with $up_status"
        fi
        ;;
esac

tool check "$scenario" "$workdir"
