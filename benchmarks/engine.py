"""Engine + FCFS throughput on full real traces, in-process and over ZeroMQ.

    .venv/bin/python benchmarks/engine.py                       # KTH-SP2 + CEA-Curie, both transports
    .venv/bin/python benchmarks/engine.py --traces kth --transports inprocess

KTH-SP2 ships in data/swf; CEA-Curie is read from ../shared/data/swf (skipped when absent).
Prints, per run: jobs, simulation wall time, jobs/s, messages/s, the share of time spent in the
scheduler (pybatsim + FCFS) vs the engine, and the ratio to the issue's target (< 1 = met).
Conversion (SWF -> JSON + platform XML) is done once and not timed.
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
    ap.add_argument("--workdir", help="keep converted inputs here (default: a temporary directory)")
    args = ap.parse_args()

    from batfeed.adapters.swf import convert_swf

    from batfeed.runner import run_simulation

    rows = []
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

    print()
    print(f"{'trace':6s} {'transport':9s} {'jobs':>7s} {'wall s':>8s} {'jobs/s':>8s} {'msgs/s':>8s} "
          f"{'sched%':>7s} {'target s':>8s} {'wall/target':>11s}")
    for name, transport, jobs, wall, jps, mps, share, target, ratio in rows:
        rt = f"{ratio:11.2f}" if ratio is not None else f"{'-':>11s}"
        print(f"{name:6s} {transport:9s} {jobs:7d} {wall:8.2f} {jps:8.0f} {mps:8.0f} {share * 100:6.1f}% "
              f"{target:8.1f} {rt}")
    print("wall/target < 1 means the target is met (targets apply to the in-process transport; "
          "sched% = time inside the scheduler: pybatsim + FCFS).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
