"""Engine + FCFS throughput on full real traces, in-process and over ZeroMQ, against a C++ floor.

    .venv/bin/python benchmarks/engine.py                       # KTH-SP2 + CEA-Curie, both transports
    .venv/bin/python benchmarks/engine.py --traces kth --transports inprocess --pure-too

KTH-SP2 ships in data/swf; CEA-Curie is read from ../shared/data/swf (skipped when absent).
Prints, per run: jobs, simulation wall time (with the files written, as ``batfeed simulate``),
jobs/s, messages/s, the share of time spent in the scheduler (driver + FCFS) vs the engine, the
engine's and the scheduler's cost per message (µs), the ratio to the foundation issue's target
(< 1 = met) and ``xC++``, the ratio to the C++ FCFS floor on the same jobs measured in the same run
(``benchmarks/floor_easy.cpp`` via ``benchmarks/cpp_floor.py``: no outputs, no checks, best of 3;
built once with the system compiler, ``-`` without one).  The in-process transport uses the direct
driver (the default for batfeed's schedulers); ``benchmarks/drivers.py`` compares the drivers.
Conversion (SWF -> JSON + platform XML) is done once and not timed.

``--pure-too`` also runs the in-process transport in fresh processes, twice with and twice without
``BATFEED_PURE=1`` (the compiled kernel's pure-Python path), and prints ``comp/pure`` (best of 2
each; in parentheses when the compiled kernel was not in use, e.g. stale after an edit).

``--floor`` also measures pybatsim's own floor: the exact message stream of the run is replayed
into pybatsim's unmodified ``Batsim`` class driving a scheduler whose callbacks do nothing, with
no engine at all: no run through the pybatsim driver can be faster than that floor (the direct
driver does not go through pybatsim's message handling and is not bound by it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpp_floor  # noqa: E402  (benchmarks/ is not a package)

TRACES = {
    "kth": (REPO / "data/swf/KTH-SP2-1996-2.1-cln.swf.gz", 0.5),
    "curie": (REPO.parent / "shared/data/swf/CEA-Curie-2011-2.1-cln.swf.gz", 30.0),
}
TARGET_TRANSPORT = "inprocess"   # the targets of the foundation issue are for the in-process transport


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    ap.add_argument("--transports", nargs="+", default=["inprocess", "zmq"], choices=["inprocess", "zmq"])
    ap.add_argument("--floor", action="store_true", help="also time pybatsim alone on the same messages")
    ap.add_argument("--pure-too", action="store_true", help="comp/pure: in-process runs with and without "
                    "BATFEED_PURE=1, each in its own process")
    ap.add_argument("--workdir", help="keep converted inputs here (default: a temporary directory)")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(simulate(*args.worker)))
        return 0

    from batfeed.adapters.swf import convert_swf

    rows, floors = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        exe, how = cpp_floor.build(tmp)
        print(f"C++ floor built with {how}" if exe else f"C++ floor skipped: {how}; column xC++ is -", flush=True)
        for name in args.traces:
            trace, target = TRACES[name]
            if not trace.exists():
                print(f"skip {name}: {trace} not found")
                continue
            t0 = time.perf_counter()
            conv = convert_swf(trace, work / name)
            print(f"{name}: converted {conv.report['kept']} jobs, {conv.nb_res} machines "
                  f"in {time.perf_counter() - t0:.1f} s (not timed below)", flush=True)
            floor = cpp_floor.floors(exe, conv.workload_path, tmp) if exe else None
            if floor:
                print(f"  C++ fcfs floor {floor['fcfs']['seconds']:8.4f} s (best of 3, no outputs)", flush=True)
            for transport in args.transports:
                r = simulate(conv.platform_path, conv.workload_path, work / f"{name}_{transport}", transport)
                pure = None
                if args.pure_too and transport == "inprocess":     # best of 2 each, interleaved
                    runs = [simulate_child(conv.platform_path, conv.workload_path, work / f"{name}_{p}", p)
                            for _ in range(2) for p in (False, True)]
                    pure = (min(x["wall"] for x in runs[::2]) / min(x["wall"] for x in runs[1::2]),
                            runs[0]["kernel"] == "compiled")
                ratio = r["wall"] / target if transport == TARGET_TRANSPORT else None
                cpp = cpp_floor.ratio_cell(r["wall"], "fcfs", {}, floor)
                rows.append((name, transport, r, target, ratio, pure, cpp))
                print(f"  {transport:9s} {r['wall']:8.2f} s", flush=True)
            if args.floor:
                floor_s, nmsg = pybatsim_floor(conv.platform_path, conv.workload_path)
                floors.append((name, nmsg, floor_s, target))
                print(f"  pybatsim floor {floor_s:8.2f} s ({nmsg} messages, no-op scheduler, no engine)", flush=True)

    print()
    print(f"{'trace':6s} {'transport':9s} {'jobs':>7s} {'wall s':>8s} {'jobs/s':>8s} {'msgs/s':>8s} "
          f"{'sched%':>7s} {'µs/msg engine':>14s} {'µs/msg sched':>13s} {'target s':>8s} {'wall/target':>11s} "
          f"{'comp/pure':>9s} {'xC++':>10s}")
    for name, transport, r, target, ratio, pure, cpp in rows:
        wall, msgs, sched = r["wall"], r["messages"], r["sched"]
        rt = f"{ratio:11.2f}" if ratio is not None else f"{'-':>11s}"
        cp = f"{'-':>9s}" if pure is None else f"{pure[0]:9.2f}" if pure[1] else f"{f'({pure[0]:.2f})':>9s}"
        print(f"{name:6s} {transport:9s} {r['jobs']:7d} {wall:8.2f} {r['jobs'] / wall:8.0f} {msgs / wall:8.0f} "
              f"{sched / wall * 100:6.1f}% {(wall - sched) / msgs * 1e6:14.1f} {sched / msgs * 1e6:13.1f} "
              f"{target:8.1f} {rt} {cp} {cpp:>10s}")
    print("wall/target < 1 means the target is met (targets apply to the in-process transport; "
          "sched% = time inside the scheduler: driver + FCFS; xC++ = wall / the C++ FCFS floor, which writes "
          "no files; comp/pure in parentheses: the compiled kernel was not in use, both runs pure Python).")
    for name, nmsg, floor_s, target in floors:
        print(f"pybatsim floor {name}: {floor_s:.2f} s for {nmsg} messages = {floor_s / target:.2f} x the "
              f"{target:g} s target for the pybatsim driver, before any engine or scheduler work")
    return 0


def simulate(platform: str | Path, workload: str | Path, export: str | Path, transport: str = "inprocess") -> dict:
    """One FCFS run with the files written (as ``batfeed simulate``): wall, scheduler time, messages, jobs."""
    from batfeed.runner import run_simulation

    r = run_simulation(platform, [workload], scheduler="fcfs", transport=transport, export=export)
    try:
        from batfeed import kernel

        path = kernel.state()["path"]
    except (ImportError, AttributeError, KeyError):
        path = "pure"
    return {"wall": r.wall_time, "sched": float(r.schedule["scheduling_time"]), "messages": r.messages,
            "jobs": r.counts["submitted"], "kernel": path}


def simulate_child(platform: Path, workload: Path, export: Path, pure: bool) -> dict:
    """:func:`simulate` (in process) in a fresh process, with ``BATFEED_PURE=1`` if ``pure``."""
    env = {k: v for k, v in os.environ.items() if k != "BATFEED_PURE"}
    if pure:
        env["BATFEED_PURE"] = "1"
    out = subprocess.run([sys.executable, __file__, "--worker", str(platform), str(workload), str(export)],
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pybatsim_floor(platform: Path, workload: Path) -> tuple[float, int]:
    """Seconds pybatsim's own Batsim class needs for the run's messages with a do-nothing scheduler."""
    from batsim.batsim import BatsimScheduler

    from batfeed.engine import load_simulation
    from batfeed.engine.transport import InProcessTransport, _Message
    from batfeed.registry import make_scheduler

    class Recorder(InProcessTransport):
        def __init__(self, scheduler):
            super().__init__(scheduler)
            self.messages: list[dict] = []

        def exchange(self, message):
            self.messages.append(message)
            return super().exchange(message)

    class Noop(BatsimScheduler):
        def onSimulationBegins(self): pass
        def onSimulationEnds(self): pass
        def onJobSubmission(self, job): pass
        def onJobCompletion(self, job): pass
        def onJobsKilled(self, jobs): pass
        def onNoMoreJobsInWorkloads(self): pass
        def onNoMoreExternalEvents(self): pass
        def onRequestedCall(self): pass
        def onNoMoreEvents(self): pass

    rec = Recorder(make_scheduler("fcfs", None))
    load_simulation(platform, [workload]).run(rec)
    replay = InProcessTransport(Noop({}))
    msgs = [_Message(m) for m in rec.messages]
    del rec
    t0 = time.perf_counter()
    for m in msgs:
        replay.exchange(m)
    return time.perf_counter() - t0, len(msgs)


if __name__ == "__main__":
    sys.exit(main())
