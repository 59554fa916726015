"""Campaign throughput: 20 KTH-SP2-prefix runs on 1 and 2 workers (``batfeed.campaign``).

    .venv/bin/python benchmarks/campaign.py                       # local process pool, 1 and 2 workers
    .venv/bin/python benchmarks/campaign.py --executor dask       # the same on a Dask LocalCluster
    .venv/bin/python benchmarks/campaign.py --workers 1 2 4 --step 1000

The campaign: the first 2,000, 4,000, ..., 20,000 jobs of KTH-SP2 (10 traces, ``max_jobs``) × FCFS and
EASY = 20 runs.  The traces are converted once beforehand and copied into each fresh campaign
directory, so the time measured is the runs' (simulation, metrics, files, manifests) and the
campaign's own overhead (expansion, dispatch, the table), not the conversions.  Each configuration
runs in its own process: wall time of ``run_campaign``, runs/min, peak RSS of the campaign process
and of its largest worker (``getrusage``; with Dask the workers are not children: not measured),
and the speed-up over the first configuration.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def spec(step: int, count: int) -> dict:
    return {"name": "bench", "traces": [{"name": f"kth{step * k}", "path": "KTH-SP2", "max_jobs": step * k}
                                        for k in range(1, count + 1)],
            "schedulers": ["fcfs", "easy"], "metrics": ["nb_jobs", "wait.mean", "utilisation"]}


def child(root: str, workers: int, executor: str, step: int, count: int) -> None:
    """One configuration (in its own process): print its numbers as JSON."""
    from batfeed.campaign import run_campaign

    t0 = time.perf_counter()
    table = run_campaign(spec(step, count), root, workers=workers, executor=executor, progress=False)
    wall = time.perf_counter() - t0
    assert (table["status"] == "ok").all(), table["error"].tolist()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "runs": len(table), "jobs": int(table["nb_jobs"].sum()),
                      "sim_wall": float(table["wall_s"].sum()), "rss_mb": rss, "worker_rss_mb": workers_rss}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2], help="worker counts to compare")
    ap.add_argument("--executor", choices=["local", "dask"], default="local", help="local pool or Dask LocalCluster")
    ap.add_argument("--step", type=int, default=2000, help="prefix sizes: step, 2 step, ..., 10 step jobs")
    ap.add_argument("--traces", type=int, default=10, help="number of prefixes (runs = 2 x this)")
    ap.add_argument("--child", nargs=2, metavar=("DIR", "WORKERS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.executor, args.step, args.traces)
        return 0

    from batfeed.campaign import load_spec
    from batfeed.campaign.core import prepare
    from batfeed.campaign.expand import expand

    with tempfile.TemporaryDirectory(prefix="bench-campaign-") as tmp:
        warm = Path(tmp) / "warm"
        camp = load_spec(spec(args.step, args.traces))
        t0 = time.perf_counter()
        prepare(camp, expand(camp), warm)               # the 10 conversions, once
        print(f"{len(camp.traces)} KTH-SP2 prefixes of {args.step}..{args.step * args.traces} jobs converted in "
              f"{time.perf_counter() - t0:.1f} s (not timed below); {2 * len(camp.traces)} runs (FCFS, EASY), "
              f"executor {args.executor}, {len(__import__('os').sched_getaffinity(0))} CPUs")
        print(f"{'workers':>7}  {'wall s':>7}  {'runs/min':>8}  {'sum of run walls s':>18}  {'peak RSS MB':>11}  "
              f"{'largest worker MB':>17}  {'speed-up':>8}")
        base = None
        for n in args.workers:
            root = Path(tmp) / f"w{n}"
            shutil.copytree(warm / "inputs", root / "inputs")
            proc = subprocess.run([sys.executable, "-P", __file__, "--child", str(root), str(n), "--executor",
                                   args.executor, "--step", str(args.step), "--traces", str(args.traces)],
                                  capture_output=True, text=True, check=False)
            if proc.returncode:
                print(proc.stderr, file=sys.stderr)
                return 1
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            base = base or r["wall"]
            worker_rss = f"{r['worker_rss_mb']:.0f}" if args.executor == "local" else "-"
            print(f"{n:>7}  {r['wall']:>7.2f}  {60 * r['runs'] / r['wall']:>8.1f}  {r['sim_wall']:>18.2f}  "
                  f"{r['rss_mb']:>11.0f}  {worker_rss:>17}  {base / r['wall']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
