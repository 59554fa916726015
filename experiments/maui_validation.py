"""Maui validation against history on three traces (models.md §F [MAUI]; issue 6).

For each trace (HPC2N-2002, which Maui scheduled; the Torque-derived wagap trace of MetaCentrum
with its Alea ``.machines`` file; KTH-SP2) and each scheduling step Δ (event-driven, 5 s, 60 s),
runs ``batfeed validate`` (weekly windows, previous week as warm-up) and prints, per trace and Δ,
the per-job wait error e = simulated − recorded over all scored jobs (mean, median, std, mean |e|)
and the summed wall time, beside the per-week ``errors.csv`` files::

    .venv/bin/python experiments/maui_validation.py --out runs/maui_validation
    .venv/bin/python experiments/maui_validation.py --traces kth --steps 0 60 --weeks 1-10 --out /tmp/v
    .venv/bin/python experiments/maui_validation.py --summary-only --out runs/maui_validation

Each trace is converted once (first step); the other steps reuse the workload JSON.  ``--poll``
adds Maui's poll loop (an iteration at every step while jobs wait), the cost model of the paper.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACES = {
    "hpc2n": SHARED / "swf" / "HPC2N-2002-2.1-cln.swf.gz",
    "wagap": SHARED / "alea_metacentrum" / "wagap-2013.swf.gz",
    "kth": SHARED / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz",
}


def run_name(trace: str, step: float, poll: bool) -> str:
    return f"{trace}_{'ev' if not step else f'{step:g}s'}{'_poll' if poll and step else ''}"


def summary(out: Path, trace: str, step: float, poll: bool) -> dict | None:
    d = out / run_name(trace, step, poll)
    if not (d / "errors.csv").exists():
        return None
    with open(d / "errors.csv", newline="") as f:
        weeks = list(csv.DictReader(f))
    errors = []
    for w in weeks:
        path = d / "weeks" / f"wk{int(w['week']):03d}_errors.csv"
        if path.exists():
            with open(path, newline="") as f:
                errors += [float(r["error_s"]) for r in csv.DictReader(f)]
    e = np.array(errors)
    return {"trace": trace, "step": "event" if not step else f"{step:g} s", "poll": poll and bool(step),
            "weeks": len(weeks), "jobs": len(e), "mean": e.mean() if len(e) else math.nan,
            "median": float(np.median(e)) if len(e) else math.nan, "std": e.std() if len(e) else math.nan,
            "mae": np.abs(e).mean() if len(e) else math.nan, "wall": sum(float(w["wall_s"]) for w in weeks),
            "wall_max": max((float(w["wall_s"]) for w in weeks), default=0.0)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    p.add_argument("--steps", nargs="+", type=float, default=[0, 5, 60], help="0 = event-driven")
    p.add_argument("--weeks", help="target weeks (default: all)")
    p.add_argument("--config", help="maui.cfg (default: Maui's defaults)")
    p.add_argument("--poll", action="store_true")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--summary-only", action="store_true")
    args = p.parse_args(argv)
    if not args.summary_only:
        from batfeed.validate import validate
        for trace in args.traces:
            if not TRACES[trace].exists():
                print(f"skipping {trace}: {TRACES[trace]} not found", file=sys.stderr)
                continue
            wl = plat = None
            for step in args.steps:
                name = run_name(trace, step, args.poll)
                src = wl if wl is not None else TRACES[trace]
                validate(src, args.out / name, config=args.config, interval=step, poll=args.poll, weeks=args.weeks,
                         platform=plat, plots=not args.no_plots, log=lambda s, n=name: print(f"{n}: {s}"))
                if wl is None:
                    plat = next((args.out / name / "workload").glob("*_platform.xml"))
                    wl = plat.with_name(plat.name.removesuffix("_platform.xml") + ".json")
    print("| trace | Δ | weeks | jobs | mean e (s) | median e (s) | std e (s) | mean abs e (s) | wall, sum (s) "
          "| wall, max week (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for trace in args.traces:
        for step in args.steps:
            s = summary(args.out, trace, step, args.poll)
            if s:
                print(f"| {s['trace']} | {s['step']}{' poll' if s['poll'] else ''} | {s['weeks']} | {s['jobs']} | "
                      f"{s['mean']:.0f} | {s['median']:.0f} | {s['std']:.0f} | {s['mae']:.0f} | {s['wall']:.1f} | "
                      f"{s['wall_max']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
