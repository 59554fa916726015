"""Fixed queue policies vs EASY-FCFS: Table 3 of Gaussier, Lelong, Reis, Trystram, *Online Tuning
of EASY-Backfilling using Queue Reordering Policies* (models.md §A), on the embedded engine.

    .venv/bin/python experiments/tune_fixed_policies.py                    # KTH-SP2, CEA-Curie, UniLu-Gaia
    .venv/bin/python experiments/tune_fixed_policies.py --traces kth --workers 2

For each trace: convert the SWF log with the paper's extra filtering (``adapters/filters.py``),
simulate EASY(P, Θ = 40 h) for the 12 policies P (count reservation, backfill order = P), and print
Impr(P) = (W(P) − W(FCFS)) / W(FCFS), W = total waiting time, next to the paper's Table 3.

Differences with the paper, on purpose or forced (see docs/schedulers.md):
the paper pools 60 two-year user-based resamples of each log, we simulate each cleaned log once;
the platform size is the log's MaxProcs header; our simulator is Batsim's semantics (a job
reaching its walltime exactly is killed at the same date).  The reproduction target is the
qualitative order (SQF/SAF/LCFS best, LAF/LQF worst), not the exact numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BATFEED_SHARED", REPO.parent / "shared")) / "data/swf"
TRACES = {
    "kth": ("KTH-SP2", REPO / "data/swf/KTH-SP2-1996-2.1-cln.swf.gz"),
    "curie": ("CEA-Curie", SHARED / "CEA-Curie-2011-2.1-cln.swf.gz"),
    "gaia": ("UniLu-Gaia", SHARED / "UniLu-Gaia-2014-1.swf.gz"),
    "sdsc-blue": ("SDSC-BLUE", SHARED / "SDSC-BLUE-2000-4.2-cln.swf.gz"),
}
POLICIES = ["FCFS", "LCFS", "SPF", "LPF", "SQF", "LQF", "LEXP", "SEXP", "SRF", "LRF", "SAF", "LAF"]
# Table 3 of the paper (% change of total wait vs EASY-FCFS), columns in POLICIES[1:] order
PAPER = {
    "KTH-SP2": [-13, -16, 5, -16, 3, -8, -15, -8, -13, -12, 15],
    "SDSC-BLUE": [-26, -29, 0, -29, 17, -17, -26, -15, -15, -32, 23],
    "CEA-Curie": [-46, -23, -45, -57, -19, -51, -23, -57, -24, -40, -17],
    "UniLu-Gaia": [-58, -33, -10, -62, 16, -49, -27, -56, -16, -62, 20],
}


def convert(key: str, out: Path) -> tuple[Path, Path, dict]:
    from batfeed.adapters.filters import tune_filter
    from batfeed.adapters.swf import convert_swf

    _, trace = TRACES[key]
    conv = convert_swf(trace, out / key, extra_drop=tune_filter)
    return conv.platform_path, conv.workload_path, conv.report


def total_wait(platform: str, workload: str, policy: str, theta: float | None, export: str) -> tuple[float, float, int]:
    """(Σ wait, wall seconds, jobs) of EASY(policy, theta) on one converted trace."""
    from batfeed.runner import run_simulation

    r = run_simulation(platform, [workload], scheduler="easy", options={"policy": policy, "theta": theta},
                       export=export)
    return math.fsum(r.tracer.waits), r.wall_time, r.counts["submitted"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=["kth", "curie", "gaia"], choices=list(TRACES))
    ap.add_argument("--policies", nargs="+", default=POLICIES, choices=POLICIES)
    ap.add_argument("--theta", type=float, default=144000.0, help="starvation threshold in s (default 40 h)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=str(REPO / "runs/tune_fixed"), help="converted traces, _jobs.csv, results")
    args = ap.parse_args()
    policies = ["FCFS"] + [p for p in args.policies if p != "FCFS"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    inputs = {}
    for key in args.traces:
        name, trace = TRACES[key]
        if not trace.exists():
            print(f"skip {name}: {trace} not found", file=sys.stderr)
            continue
        platform, workload, report = convert(key, out)
        dropped = sum(report["dropped"].values())
        print(f"{name}: {report['kept']} jobs kept of {report['read']} ({dropped} dropped: "
              f"{report['dropped']}), {report['nb_res']} processors", flush=True)
        inputs[key] = (str(platform), str(workload))

    waits: dict[tuple[str, str], float] = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(total_wait, *inputs[k], p, args.theta, str(out / k / f"easy_{p}")): (k, p)
                   for k in inputs for p in policies}
        for i, fut in enumerate(as_completed(futures), 1):
            k, p = futures[fut]
            w, wall, jobs = fut.result()
            waits[k, p] = w
            print(f"[{i}/{len(futures)}] {TRACES[k][0]:10s} EASY-{p:4s} total wait {w:.6g} s "
                  f"({jobs} jobs, {wall:.1f} s)", flush=True)
    print(f"all simulations: {time.perf_counter() - t0:.0f} s with {args.workers} workers\n")

    rows = {}
    print(f"change of total wait vs EASY-FCFS (Θ = {args.theta:g} s), ours / paper Table 3, in %")
    print(f"{'trace':11s} " + " ".join(f"{p:>9s}" for p in policies[1:]))
    for k in inputs:
        name = TRACES[k][0]
        base = waits[k, "FCFS"]
        ours = {p: 100.0 * (waits[k, p] - base) / base for p in policies[1:]}
        paper = dict(zip(POLICIES[1:], PAPER.get(name, []), strict=False))
        rows[name] = {"total_wait_fcfs": base, "ours": ours, "paper": paper}
        cells = [f"{ours[p]:+4.0f}/{paper[p]:+3d}" if p in paper else f"{ours[p]:+4.0f}/  ?" for p in policies[1:]]
        print(f"{name:11s} " + " ".join(f"{c:>9s}" for c in cells))
        best = min(ours, key=ours.get)
        worst = max(ours, key=ours.get)
        print(f"{'':11s} best {best} ({ours[best]:+.1f} %), worst {worst} ({ours[worst]:+.1f} %)")
    (out / "results.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"\nresults written to {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
