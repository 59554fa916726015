"""A stand-in `docker` for tests/test_docker.py (started by bin/docker): just enough of `docker info`,
`docker compose version|up|ps|down` and `docker inspect` to drive docker/run-integration.sh --docker
on a machine without a Docker engine.

`compose up` reads the compose files with docker/compose_config.py (PyYAML), interpolates them with
the environment (as Compose does), maps /data to $BATFEED_DATA and runs the two services as
processes: the scheduler service's command after the image's entry point ($BATFEED, the batfeed CLI)
and, for the Batsim service, batfeed's embedded engine over ZeroMQ (docker/scenario_tool.py
translate_to_simulate).  It records every invocation (argv and BATFEED_* variables) as JSON lines in
$FAKE_DOCKER_LOG.  FAKE_DOCKER_FAIL=SERVICE makes that container "exit" with status 3 without
running anything (the other one is then "stopped", status 137, as --abort-on-container-failure does).
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

DOCKER_DIR = Path(__file__).resolve().parents[3] / "docker"
sys.path.insert(0, str(DOCKER_DIR))
from compose_config import config  # noqa: E402
from scenario_tool import local_path, translate_to_simulate  # noqa: E402


def log(argv):
    path = os.environ.get("FAKE_DOCKER_LOG")
    if path:
        env = {k: v for k, v in os.environ.items() if k.startswith("BATFEED_")}
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": argv, "env": env}) + "\n")


def state_file(project):
    return Path(os.environ.get("FAKE_DOCKER_STATE", "/tmp")) / f"fake-docker-{project}.json"


def compose(args):
    files, project, rest = [], "default", []
    i = 0
    while i < len(args):
        if args[i] == "-f":
            files.append(args[i + 1])
            i += 2
        elif args[i] == "-p":
            project = args[i + 1]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    if rest[:1] == ["version"]:
        print("Docker Compose version v2.30.0 (fake)")
        return 0
    if rest[:1] == ["ps"]:
        print(f"{project}-{rest[-1]}")
        return 0
    if rest[:1] == ["down"]:
        return 0
    if rest[:1] != ["up"]:
        print(f"fake docker: unsupported compose command {rest}", file=sys.stderr)
        return 2
    model = config(files, dict(os.environ))
    data = os.environ["BATFEED_DATA"]
    batsim = model["services"]["batsim"]["command"]
    sched = [local_path(a, data) for a in model["services"]["scheduler"]["command"]]
    fail = os.environ.get("FAKE_DOCKER_FAIL")
    if fail:
        codes = {"batsim": 137, "scheduler": 137, fail: 3}
    else:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        assert "tcp://*:28000" in sched and "tcp://scheduler:28000" in batsim, (sched, batsim)
        sched = [a.replace("tcp://*:28000", f"tcp://*:{port}") for a in sched]
        batfeed = os.environ["BATFEED"]
        scheduler = subprocess.Popen([batfeed, *sched])
        simulate = [batfeed, *translate_to_simulate(batsim, data), "--transport", "zmq",
                    "--socket", f"tcp://localhost:{port}", "--no-progress"]
        sim_code = subprocess.call(simulate, timeout=120)
        if sim_code:
            scheduler.kill()
        codes = {"batsim": sim_code, "scheduler": scheduler.wait(timeout=120)}
    state_file(project).write_text(json.dumps({f"{project}-{k}": v for k, v in codes.items()}))
    return max(codes.values())


def main(argv):
    log(argv)
    if argv[:1] == ["info"]:
        return 0
    if argv[:1] == ["compose"]:
        return compose(argv[1:])
    if argv[:1] == ["inspect"]:
        cid = argv[-1]
        project = cid.rsplit("-", 1)[0]
        print(json.loads(state_file(project).read_text())[cid])
        return 0
    print(f"fake docker: unsupported command {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
