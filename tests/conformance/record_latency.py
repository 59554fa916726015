"""Record real Batsim 4.2.1 on platforms with link latencies (tests/data/platforms/routing/) for
tests/test_engine_latency.py:

    BATSIM=/path/to/batsim .venv/bin/python tests/conformance/record_latency.py

Writes tests/data/engine/latency/workload.json (made here, deterministic) and, for every platform ×
scheduler of ``SCENARIOS``, Batsim's ``_jobs.csv`` and ``_machine_states.csv`` as
``PLATFORM-SCHEDULER_jobs.csv`` ..., with the scheduler served by ``batfeed schedule`` over ZeroMQ.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLATFORMS = REPO / "tests" / "data" / "platforms" / "routing"
OUT = REPO / "tests" / "data" / "engine" / "latency"
SCENARIOS = [(p, s) for p in ("full_routes", "clusters", "nested") for s in ("fcfs", "easy", "conservative")]


def workload() -> dict:
    """60 jobs on 4 machines: bursts submitted at the same second (several per burst, as Batsim's
    test_same_submit_time), run times in whole and fractional seconds, some killed at their walltime."""
    jobs, profiles = [], {}
    for i in range(60):
        burst, k = divmod(i, 3)
        delay = [10, 7.5, 25, 3][i % 4] + (i % 5)
        wall = -1 if i % 7 == 0 else (delay + 5 if i % 6 else delay - 2)
        name = f"d{delay:g}"
        profiles[name] = {"type": "delay", "delay": delay}
        jobs.append({"id": i, "subtime": 10 * burst + (0.5 if burst % 4 == 3 else 0), "res": 1 + (i * 7 + k) % 3,
                     "walltime": wall, "profile": name})
    return {"nb_res": 4, "jobs": jobs, "profiles": profiles}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    batsim = os.environ.get("BATSIM")
    if not batsim:
        print("set BATSIM to a Batsim 4.2.1 binary", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    wl = OUT / "workload.json"
    wl.write_text(json.dumps(workload(), indent=1) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        for platform, scheduler in SCENARIOS:
            port = _port()
            sched = subprocess.Popen([sys.executable, "-P", "-m", "batfeed.cli", "schedule", scheduler, "--socket",
                                      f"tcp://127.0.0.1:{port}", "--timeout", "60"], stdout=subprocess.DEVNULL)
            prefix = f"{tmp}/{platform}-{scheduler}"
            try:
                subprocess.run([batsim, "-p", str(PLATFORMS / f"{platform}.xml"), "-w", str(wl), "-e", prefix,
                                "-s", f"tcp://127.0.0.1:{port}", "-q", "--disable-schedule-tracing"],
                               check=True, timeout=120, capture_output=True)
            finally:
                sched.wait(timeout=60)
            for out in ("jobs", "machine_states"):
                (OUT / f"{platform}-{scheduler}_{out}.csv").write_bytes(Path(f"{prefix}_{out}.csv").read_bytes())
            print(f"recorded {platform}-{scheduler}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
