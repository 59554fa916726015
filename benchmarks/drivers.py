"""Direct driver vs pybatsim path: wall time, peak RSS, jobs/s and where the time goes.

    .venv/bin/python benchmarks/drivers.py                                   # everything (~30 min)
    .venv/bin/python benchmarks/drivers.py --traces kth                      # KTH-SP2 only (~1 min)
    .venv/bin/python benchmarks/drivers.py --traces curie --schedulers easy --drivers direct
    .venv/bin/python benchmarks/drivers.py --traces kth --batsim /path/to/batsim   # + real Batsim

For KTH-SP2 (data/swf), SDSC-BLUE and CEA-Curie (../shared/data/swf, or ``--data DIR``; skipped when
absent) and the schedulers FCFS, EASY-FCFS, EASY-SQF, conservative, Maui, CREASY and LOS, each runs in
a fresh process (so its peak RSS is its own) through the direct driver and through pybatsim's
``Batsim`` class, and prints:

- ``load``: reading the workload and platform; ``sim``: the simulation alone (what the targets are
  about); ``RSS``: the process's peak resident memory;
- ``jobs/s`` of the simulation, and ``pyb/dir``: the pybatsim path's simulation time over the
  direct driver's;
- per message, the engine's and the scheduler side's cost in µs (scheduler side = time inside the
  driver: callbacks and, on the pybatsim path, pybatsim's parsing; engine = the rest).

Conversion (SWF -> workload JSON + platform) is done once per trace, in its own process, and
reported with its own peak RSS.  ``--batsim PATH`` also runs real Batsim with the same scheduler
over ZeroMQ (``batfeed schedule``) on the same inputs and prints its wall time and the ratio to the
direct driver (real Batsim cannot run the in-process drivers).  The targets of the fast-path issue
are printed with the ratio measured/target (< 1: met).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import batfeed_command, measure  # noqa: E402  (benchmarks/ is not a package)

TRACES = {
    "kth": ("data/swf/KTH-SP2-1996-2.1-cln.swf.gz", True),
    "blue": ("swf/SDSC-BLUE-2000-4.2-cln.swf.gz", False),
    "curie": ("swf/CEA-Curie-2011-2.1-cln.swf.gz", False),
}
SCHEDULERS = {
    "fcfs": ("fcfs", {}),
    "easy": ("easy", {}),
    "easy-sqf": ("easy", {"policy": "SQF"}),
    "conservative": ("conservative", {}),
    "maui": ("maui", {}),
    "maui-counts": ("maui", {"mechanics": "counts"}),
    "creasy": ("creasy", {"alpha": 6000}),
    "los": ("los", {}),
}
TARGETS = {("kth", "easy", "direct"): ("sim", 0.5), ("curie", "easy", "direct"): ("sim", 15.0),
           ("curie", "easy", "direct", "rss"): ("rss", 1.5e9)}


def worker(platform: str, workload: str, scheduler: str, options: str, driver: str) -> None:
    """One simulation in this process; prints a JSON line (times in s, RSS in bytes)."""
    from batfeed.engine import load_simulation
    from batfeed.registry import make_scheduler
    from batfeed.runner import in_process_driver

    t0 = time.perf_counter()
    sim = load_simulation(platform, [workload])
    load = time.perf_counter() - t0
    link = in_process_driver(make_scheduler(scheduler, json.loads(options)), driver)
    t1 = time.perf_counter()
    result = sim.run(link, None)
    wall = time.perf_counter() - t1
    print(json.dumps({"load": load, "sim": wall, "sched": sim.scheduling_time, "messages": result.messages,
                      "jobs": result.counts["submitted"], "driver": result.driver,
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def run_child(cmd: list[str], timeout: float = 7200) -> str:
    """Run ``cmd`` and return its stdout (one simulation per process: its own peak RSS)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}… failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def real_batsim(batsim: str, platform: Path, workload: Path, scheduler: str, options: dict, out: Path) -> float:
    """Real Batsim + ``batfeed schedule`` over ZeroMQ on loopback; its wall time."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sched = subprocess.Popen([str(REPO / ".venv/bin/batfeed"), "schedule", scheduler, "--socket",
                              f"tcp://127.0.0.1:{port}", "--options", json.dumps(options)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0 = time.perf_counter()
        subprocess.run([batsim, "-p", str(platform), "-w", str(workload), "-e", str(out), "-s",
                        f"tcp://127.0.0.1:{port}", "--verbosity", "quiet", "--disable-schedule-tracing"],
                       check=True, capture_output=True, timeout=7200)
        return time.perf_counter() - t0
    finally:
        sched.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    ap.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS), choices=list(SCHEDULERS))
    ap.add_argument("--drivers", nargs="+", default=["direct", "pybatsim"], choices=["direct", "pybatsim"])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="../shared/data")
    ap.add_argument("--workdir", type=Path, help="keep converted inputs here (default: a temporary directory)")
    ap.add_argument("--batsim", help="also time real Batsim (this binary) with the same scheduler over ZeroMQ")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0
    py = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    print(f"{'trace':6} {'scheduler':13} {'driver':9} {'jobs':>7} {'msgs':>7} {'load s':>7} {'sim s':>8} "
          f"{'RSS MB':>7} {'jobs/s':>8} {'µs/msg engine':>14} {'µs/msg sched':>13} {'pyb/dir':>8}", flush=True)
    targets = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        for name in args.traces:
            rel, shipped = TRACES[name]
            trace = REPO / rel if shipped else args.data / rel
            if not trace.exists():
                print(f"skip {name}: {trace} not found (give --data)")
                continue
            out = work / name
            cwall, crss = measure([*batfeed_command(), "convert", "swf", str(trace), "-o", str(out), "--name", name])
            platform, workload = out / f"{name}_platform.xml", out / f"{name}.json"
            nb_jobs = json.loads((out / f"{name}_report.json").read_text())["kept"]
            print(f"{name:6} convert       {'':9} {nb_jobs:>7} {'':>7} {'':>7} {cwall:>8.2f} {crss / 1e6:>7.0f}  "
                  f"({crss / max(nb_jobs, 1):.0f} B/job)", flush=True)
            for sched in args.schedulers:
                sname, opts = SCHEDULERS[sched]
                measured = {}
                for drv in args.drivers:
                    text = run_child([py, __file__, "--worker", str(platform), str(workload), sname,
                                      json.dumps(opts), drv])
                    r = json.loads(text.strip().splitlines()[-1])
                    measured[drv] = r
                    engine_us = (r["sim"] - r["sched"]) / r["messages"] * 1e6
                    sched_us = r["sched"] / r["messages"] * 1e6
                    ratio = ""
                    if drv == "pybatsim" and "direct" in measured:
                        ratio = f"{r['sim'] / measured['direct']['sim']:8.1f}x"
                    print(f"{name:6} {sched:13} {r['driver']:9} {r['jobs']:>7} {r['messages']:>7} {r['load']:>7.2f} "
                          f"{r['sim']:>8.2f} {r['rss'] / 1e6:>7.0f} {r['jobs'] / r['sim']:>8.0f} {engine_us:>14.1f} "
                          f"{sched_us:>13.1f} {ratio:>8}", flush=True)
                    key = (name, sched, drv)
                    if key in TARGETS:
                        targets.append((f"{name} {sched} {drv} simulation", r["sim"], TARGETS[key][1], "s"))
                    if key + ("rss",) in TARGETS:
                        targets.append((f"{name} {sched} {drv} peak RSS", r["rss"] / 1e9,
                                        TARGETS[key + ("rss",)][1] / 1e9, "GB"))
                if args.batsim and "direct" in measured:
                    bw = real_batsim(args.batsim, platform, workload, sname, opts, work / f"{name}_{sched}_batsim")
                    print(f"{name:6} {sched:13} {'batsim':9} {'':>7} {'':>7} {'':>7} {bw:>8.2f} {'':>7} "
                          f"{measured['direct']['jobs'] / bw:>8.0f} {'':>14} {'':>13} "
                          f"{bw / measured['direct']['sim']:>7.0f}x  (real Batsim 4.2.1 + batfeed schedule, ZeroMQ)",
                          flush=True)
    if targets:
        print("\ntargets (measured / target; < 1 met):")
        for what, value, target, unit in targets:
            print(f"  {what}: {value:.2f} {unit} vs {target:g} {unit} -> {value / target:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
