"""Plays the `batsim` service of docker/docker-compose.yml with batfeed's embedded engine.

Entry point of the batfeed image in docker/compose.embedded.yml: it receives Batsim's command line
exactly as the compose files give it (``-p /data/platform.xml -w /data/workload.json -e /data/out/batsim
-s tcp://scheduler:28000`` + the variant's flags) and replaces itself with::

    batfeed simulate PLATFORM WORKLOAD [--export ... --events ... flags] --transport zmq --socket S --no-progress

i.e. the embedded engine connecting, over the compose network, to the scheduler container, with the
same inputs and outputs as Batsim (the translation is scenario_tool.translate_to_simulate, the one
run-integration.sh --embedded uses).  Errors: one line on stderr, exit 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenario_tool import ScenarioError, translate_to_simulate  # noqa: E402

DEFAULT_SOCKET = "tcp://localhost:28000"  # Batsim's default endpoint


def simulate_argv(batsim_args: list[str]) -> list[str]:
    args = list(batsim_args)
    socket = DEFAULT_SOCKET
    for flag in ("-s", "--socket-endpoint"):
        while flag in args:
            i = args.index(flag)
            if i + 1 == len(args):
                raise ScenarioError(f"batsim option {flag} has no value")
            socket = args[i + 1]
            del args[i:i + 2]
    # paths stay as given (the container's /data is the compose data directory)
    return ["batfeed", *translate_to_simulate(args, "/data"), "--transport", "zmq", "--socket", socket,
            "--no-progress"]


def main(argv: list[str]) -> int:
    try:
        command = simulate_argv(argv)
    except ScenarioError as err:
        print(f"batsim_embedded.py: error: {err}", file=sys.stderr)
        return 2
    print("batsim_embedded.py: " + " ".join(command), file=sys.stderr, flush=True)
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
