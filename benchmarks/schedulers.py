"""EASY-FCFS and EASY-SQF on full real traces, on the embedded engine (direct driver).

    .venv/bin/python benchmarks/schedulers.py                        # KTH-SP2, SDSC-BLUE, CEA-Curie + scaling
    .venv/bin/python benchmarks/schedulers.py --traces kth --no-scaling

Prints, per trace and policy: simulation wall time, the share spent in the scheduler callbacks,
the largest queue length seen, the mean cost of one scheduling decision (one Batsim message) by
queue-length bucket, and the ratio to the issue's targets (KTH-SP2 < 0.5 s, CEA-Curie < 30 s).

The scaling part builds synthetic queues of 1,000 … 60,000 waiting jobs, none of which fits in the
4 machines a long job leaves free, then times the decisions triggered by 500 later small jobs (their
submission, which backfills them, and their completion, after which the whole queue must be searched
again): a backfilling pass that scans the queue would cost 60x more at 60,000 jobs than at 1,000.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BATFEED_SHARED", REPO.parent / "shared")) / "data/swf"
TRACES = {
    "kth": (REPO / "data/swf/KTH-SP2-1996-2.1-cln.swf.gz", 0.5),
    "sdsc-blue": (SHARED / "SDSC-BLUE-2000-4.2-cln.swf.gz", None),
    "curie": (SHARED / "CEA-Curie-2011-2.1-cln.swf.gz", 30.0),
}
BUCKETS = [(0, 10), (10, 100), (100, 1000), (1000, 10000), (10000, 10**9)]


def timed_easy(options: dict):
    """An Easy whose decisions (one per Batsim message) are timed and binned by queue length."""
    from batfeed.schedulers.easy import Easy

    class TimedEasy(Easy):
        def __init__(self, opts):
            super().__init__(opts)
            self.samples: list[tuple[int, float, float]] = []

        def onNoMoreEvents(self):
            n = len(self.wq)
            t0 = time.perf_counter()
            super().onNoMoreEvents()
            self.samples.append((n, time.perf_counter() - t0, self.bs.time()))

    return TimedEasy(options)


def run(platform: Path, workload: Path, policy: str) -> dict:
    from batfeed.engine import load_simulation
    from batfeed.engine.direct import DirectDriver

    sched = timed_easy({"policy": policy})
    sim = load_simulation(platform, [workload])
    res = sim.run(DirectDriver(sched))
    by_bucket = {}
    for lo, hi in BUCKETS:
        xs = [dt for n, dt, _ in sched.samples if lo <= n < hi]
        if xs:
            by_bucket[f"{lo}-{hi if hi < 10**9 else ''}"] = (len(xs), 1e6 * sum(xs) / len(xs))
    return {"wall": res.wall_time, "sched": float(res.schedule["scheduling_time"]),
            "max_queue": max((n for n, _, _ in sched.samples), default=0), "jobs": res.counts["submitted"],
            "buckets": by_bucket}


def scaling(sizes: list[int], policy: str) -> list[tuple[int, float]]:
    """Median decision cost (µs) with ``n`` jobs waiting, none of which fits the free machines."""
    from batfeed.platforms.generate import write_homogeneous_platform

    from batfeed.engine import load_simulation
    from batfeed.engine.direct import DirectDriver

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        platform = write_homogeneous_platform(Path(tmp) / "p.xml", 64)
        for n in sizes:
            # a long job leaves 4 of 64 machines free ...
            jobs = [{"id": "big", "subtime": 0, "res": 60, "walltime": 1e9, "profile": "long"}]
            # ... n waiting jobs of 5 to 64 machines, none of which fits in the 4 free machines ...
            jobs += [{"id": f"q{i}", "subtime": 1 + i * 1e-3, "res": 5 + (i * 7919) % 60, "walltime": 1e6,
                      "profile": "long"} for i in range(n)]
            # ... then 500 probes, each arriving alone: every decision must look for a job to backfill
            # (2 machines, 1 s): each is backfilled at once, and its completion frees machines again
            jobs += [{"id": f"p{i}", "subtime": 1000 + 10 * i, "res": 2, "walltime": 5, "profile": "short"}
                     for i in range(500)]
            wl = {"nb_res": 64, "jobs": jobs, "profiles": {"long": {"type": "delay", "delay": 2e5},
                                                           "short": {"type": "delay", "delay": 1}}}
            path = Path(tmp) / f"w{n}.json"
            path.write_text(json.dumps(wl))
            sched = timed_easy({"policy": policy})
            load_simulation(platform, [path]).run(DirectDriver(sched))
            # the probes' decisions (t in [1000, 6000) s, long before Θ = 40 h promotes anybody)
            probe = [dt for (q, dt, t) in sched.samples if 1000 <= t < 6000 and q >= n]
            probe.sort()
            out.append((n, 1e6 * probe[len(probe) // 2] if probe else float("nan")))   # median: no GC spikes
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    ap.add_argument("--policies", nargs="+", default=["FCFS", "SQF"])
    ap.add_argument("--no-scaling", action="store_true")
    args = ap.parse_args()
    from batfeed.adapters.swf import convert_swf

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.traces:
            trace, target = TRACES[key]
            if not trace.exists():
                print(f"skip {key}: {trace} not found")
                continue
            conv = convert_swf(trace, Path(tmp) / key)
            for policy in args.policies:
                r = run(conv.platform_path, conv.workload_path, policy)
                rows.append((key, policy, r, target))
                cost = ", ".join(f"q {b}: {us:.0f} µs x{n}" for b, (n, us) in r["buckets"].items())
                print(f"{key:9s} EASY-{policy:4s} {r['wall']:7.2f} s  max queue {r['max_queue']:6d}  {cost}",
                      flush=True)
    print()
    print(f"{'trace':9s} {'sched':9s} {'jobs':>7s} {'wall s':>8s} {'sched%':>7s} {'max queue':>9s} "
          f"{'target s':>8s} {'wall/target':>11s}")
    for key, policy, r, target in rows:
        ratio = f"{r['wall'] / target:11.2f}" if target else f"{'-':>11s}"
        tgt = f"{target:8.1f}" if target else f"{'-':>8s}"
        print(f"{key:9s} EASY-{policy:4s} {r['jobs']:7d} {r['wall']:8.2f} {100 * r['sched'] / r['wall']:6.1f}% "
              f"{r['max_queue']:9d} {tgt} {ratio}")
    if not args.no_scaling:
        print("\nper-decision cost vs queue length (synthetic, EASY-SQF and EASY-FCFS):")
        for policy in args.policies:
            res = scaling([1000, 10000, 60000], policy)
            base = res[0][1]
            print(f"  EASY-{policy:4s} " + "  ".join(f"{n:6d} jobs: {us:7.1f} µs ({us / base:4.1f}x)"
                                                    for n, us in res)
                  + "   (linear growth would be 60x at 60,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
