"""Engine + FCFS throughput on full real traces, in-process and over ZeroMQ.

    .venv/bin/python benchmarks/engine.py                       # KTH-SP2 + CEA-Curie, both transports
    .venv/bin/python benchmarks/engine.py --traces kth --transports inprocess

KTH-SP2 ships in data/swf; CEA-Curie is read from ../shared/data/swf (skipped when absent).
Prints, per run: jobs, simulation wall time (with the files written, as ``batfeed simulate``),
jobs/s, messages/s, the share of time spent in the scheduler (driver + FCFS) vs the engine, and
the ratio to the foundation issue's target (< 1 = met).  The in-process transport uses the direct
driver (the default for batfeed's schedulers); ``benchmarks/drivers.py`` compares the drivers.
Conversion (SWF -> JSON + platform XML) is done once and not timed.

``--floor`` also measures pybatsim's own floor: the exact message stream of the run is replayed
into pybatsim's unmodified ``Batsim`` class driving a scheduler whose callbacks do nothing, with
no engine at all: no run through the pybatsim driver can be faster than that floor (the direct
driver does not go through pybatsim's message handling and is not bound by it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

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
    ap.add_argument("--workdir", help="keep converted inputs here (default: a temporary directory)")
    args = ap.parse_args()

    from batfeed.adapters.swf import convert_swf

    from batfeed.runner import run_simulation

    rows, floors = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        for name in args.traces:
            trace, target = TRACES[name]
            if not trace.exists():
                print(f"skip {name}: {trace} not found")
                continue
            t0 = time.perf_counter()
            conv = convert_swf(trace, work / name)
            print(f"{name}: converted {conv.report['kept']} jobs, {conv.nb_res} machines "
                  f"in {time.perf_counter() - t0:.1f} s (not timed below)", flush=True)
            for transport in args.transports:
                r = run_simulation(conv.platform_path, [conv.workload_path], scheduler="fcfs",
                                   transport=transport, export=work / f"{name}_{transport}")
                sched = float(r.schedule["scheduling_time"])
                jobs = r.counts["submitted"]
                ratio = r.wall_time / target if transport == TARGET_TRANSPORT else None
                rows.append((name, transport, jobs, r.wall_time, jobs / r.wall_time, r.messages / r.wall_time,
                             sched / r.wall_time, target, ratio))
                print(f"  {transport:9s} {r.wall_time:8.2f} s", flush=True)
            if args.floor:
                floor, nmsg = pybatsim_floor(conv.platform_path, conv.workload_path)
                floors.append((name, nmsg, floor, target))
                print(f"  pybatsim floor {floor:8.2f} s ({nmsg} messages, no-op scheduler, no engine)", flush=True)

    print()
    print(f"{'trace':6s} {'transport':9s} {'jobs':>7s} {'wall s':>8s} {'jobs/s':>8s} {'msgs/s':>8s} "
          f"{'sched%':>7s} {'target s':>8s} {'wall/target':>11s}")
    for name, transport, jobs, wall, jps, mps, share, target, ratio in rows:
        rt = f"{ratio:11.2f}" if ratio is not None else f"{'-':>11s}"
        print(f"{name:6s} {transport:9s} {jobs:7d} {wall:8.2f} {jps:8.0f} {mps:8.0f} {share * 100:6.1f}% "
              f"{target:8.1f} {rt}")
    print("wall/target < 1 means the target is met (targets apply to the in-process transport; "
          "sched% = time inside the scheduler: driver + FCFS).")
    for name, nmsg, floor, target in floors:
        print(f"pybatsim floor {name}: {floor:.2f} s for {nmsg} messages = {floor / target:.2f} x the "
              f"{target:g} s target for the pybatsim driver, before any engine or scheduler work")
    return 0


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
