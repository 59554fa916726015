"""Maui validation against history on three traces (models.md §F [MAUI]; issue 6).

For each trace (HPC2N-2002, which Maui scheduled; the Torque-derived wagap trace of MetaCentrum
with its Alea ``.machines`` file; KTH-SP2) and each scheduling step Δ (event-driven, 5 s, 60 s),
runs ``batfeed validate`` (weekly windows, previous week as warm-up) and prints three tables:

1. the per-job wait error e = simulated − recorded over all scored jobs (mean, median, std, mean
   |e|) and over the contention-bound jobs only (:mod:`batfeed.contention`: jobs whose recorded
   wait had room for them all along are waits no simulation of the trace's jobs can reproduce),
   with the summed and the largest weekly wall time;
2. the step effect d = simulated wait at step Δ − simulated wait event-driven, job by job (the
   error the step itself adds: the paper's Δ effect without the trace model's error);
3. the weeks where the step effect is largest, with their offered load.

::

    .venv/bin/python experiments/maui_validation.py --out runs/maui_validation
    .venv/bin/python experiments/maui_validation.py --traces hpc2n --steps 0 --out runs/v \
        --config schedulers/examples/hpc2n-seth-maui.cfg           # HPC2N's visible per-user limit
    .venv/bin/python experiments/maui_validation.py --traces kth --load 1.4 --out runs/sat
    .venv/bin/python experiments/maui_validation.py --summary-only --out runs/maui_validation

Each trace is converted once (first step); the other steps reuse the workload JSON.  ``--poll``
adds Maui's poll loop (an iteration at every step while jobs wait), the cost model of the paper.
``--load F`` divides every submit time by F (a saturated machine, as Salomon was: only the
step-effect tables mean something then, the recorded waits belong to the unscaled trace).
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


def tag(trace: str, load: float) -> str:
    return trace if load == 1 else f"{trace}-x{load:g}"


def scaled_workload(prepare, trace: Path, out: Path, load: float) -> tuple[Path, Path]:
    """The trace converted, with every submit time divided by ``load`` (arrival rate x load)."""
    import json

    wl, plat, data = prepare(trace, out)
    for j in data["jobs"]:
        j["subtime"] = float(j["subtime"]) / load
    path = out / f"{wl.name.removesuffix('.json')}_x{load:g}.json"
    path.write_text(json.dumps(data))
    return path, plat


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


def per_job(out: Path, trace: str, step: float, poll: bool) -> dict[str, tuple[int, float, float, int]]:
    """job id -> (week, recorded wait, simulated wait, room flag) over every scored week of a run."""
    d = out / run_name(trace, step, poll) / "weeks"
    got: dict[str, tuple[int, float, float, int]] = {}
    for path in sorted(d.glob("wk*_errors.csv")):
        week = int(path.name[2:5])
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                got[r["job_id"]] = (week, float(r["recorded_wait_s"]), float(r["simulated_wait_s"]),
                                    int(r.get("room") or 0))
    return got


def week_load(out: Path, trace: str, step: float, poll: bool, week: int) -> float:
    """Offered load of a target week: Σ res·run of its jobs / (nb_res · 7 d)."""
    import json

    path = out / run_name(trace, step, poll) / "weeks" / f"wk{week:03d}.json"
    data = json.loads(path.read_text())
    split = 7 * 86400.0
    work = sum(j["res"] * data["profiles"][j["profile"]].get("delay", 0.0) for j in data["jobs"]
               if j["subtime"] >= split)
    return work / (data["nb_res"] * split)


def print_tables(out: Path, traces: list[str], steps: list[float], poll: bool) -> None:
    """The three report tables (docs/maui.md, issue 6): errors vs recorded, the step effect, its worst weeks."""
    print("\nError e = simulated - recorded wait, all scored jobs and contention-bound jobs only (room = the "
          "recorded schedule had room for the job during its whole wait):\n")
    print("| trace | Δ | weeks | jobs | mean e (s) | median e (s) | std e (s) | mean abs e (s) | room jobs "
          "| room share of recorded wait | contention-bound: mean e (s) | median e (s) | wall, sum (s) "
          "| wall, max week (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for trace in traces:
        for step in steps:
            s = summary(out, trace, step, poll)
            if not s:
                continue
            jobs = per_job(out, trace, step, poll)
            rec = np.array([v[1] for v in jobs.values()])
            sim = np.array([v[2] for v in jobs.values()])
            room = np.array([v[3] for v in jobs.values()], dtype=bool)
            ce = (sim - rec)[~room]
            print(f"| {s['trace']} | {s['step']}{' poll' if s['poll'] else ''} | {s['weeks']} | {s['jobs']} | "
                  f"{s['mean']:.0f} | {s['median']:.0f} | {s['std']:.0f} | {s['mae']:.0f} | "
                  f"{room.sum()} ({room.mean():.0%}) | {rec[room].sum() / max(rec.sum(), 1):.0%} | "
                  f"{ce.mean():.0f} | {np.median(ce):.0f} | {s['wall']:.1f} | {s['wall_max']:.2f} |")
    if 0 not in steps:
        return
    print("\nStep effect: d = simulated wait at step Δ - simulated wait event-driven, same job (the error the "
          "step adds):\n")
    print("| trace | Δ | jobs | mean d (s) | median d (s) | p90 d (s) | max d (s) | mean abs d (s) | jobs delayed "
          "| jobs started earlier | mean e, contention-bound (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst: list[tuple[str, float, list[tuple[float, int, float, int]]]] = []
    for trace in traces:
        base = per_job(out, trace, 0, poll)
        if not base:
            continue
        for step in sorted(x for x in steps if x):
            other = per_job(out, trace, step, poll)
            common = sorted(set(base) & set(other))
            if not common:
                continue
            d = np.array([other[j][2] - base[j][2] for j in common])
            room = np.array([base[j][3] for j in common], dtype=bool)
            ce = np.array([other[j][2] - other[j][1] for j in common])[~room]
            print(f"| {trace} | {step:g} s | {len(d)} | {d.mean():.1f} | {np.median(d):.0f} | "
                  f"{np.percentile(d, 90):.0f} | {d.max():.0f} | {np.abs(d).mean():.0f} | {(d > 0).mean():.1%} | "
                  f"{(d < 0).mean():.1%} | "
                  f"{ce.mean():.0f} |")
            weeks: dict[int, list[float]] = {}
            for j, x in zip(common, d, strict=True):
                weeks.setdefault(base[j][0], []).append(x)
            rows = sorted(((float(np.mean(v)), w, float(np.median(v)), len(v)) for w, v in weeks.items()),
                          reverse=True)
            worst.append((trace, step, rows))
    print("\nWeeks with the largest step effect (mean d), with the offered load of the week:\n")
    print("| trace | Δ | week | jobs | offered load | mean d (s) | median d (s) | weeks with mean d > 0 |")
    print("|---|---|---|---|---|---|---|---|")
    for trace, step, rows in worst:
        pos = sum(1 for r in rows if r[0] > 0)
        for mean_d, w, med_d, n in rows[:3]:
            load = week_load(out, trace, 0, poll, w)
            print(f"| {trace} | {step:g} s | {w} | {n} | {load:.2f} | {mean_d:.0f} | {med_d:.0f} | "
                  f"{pos}/{len(rows)} |")


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
    p.add_argument("--load", type=float, default=1.0,
                   help="arrival-rate factor F: submit times divided by F (load x F; recorded waits then mean "
                        "nothing: read the step-effect table only)")
    args = p.parse_args(argv)
    if args.load <= 0:
        p.error("--load must be > 0")
    tags = [tag(t, args.load) for t in args.traces]
    if not args.summary_only:
        from batfeed.validate import prepare, validate
        for trace in args.traces:
            if not TRACES[trace].exists():
                print(f"skipping {trace}: {TRACES[trace]} not found", file=sys.stderr)
                continue
            wl = plat = None
            if args.load != 1:
                wl, plat = scaled_workload(prepare, TRACES[trace], args.out / f"{tag(trace, args.load)}_src",
                                           args.load)
            for step in args.steps:
                name = run_name(tag(trace, args.load), step, args.poll)
                src = wl if wl is not None else TRACES[trace]
                validate(src, args.out / name, config=args.config, interval=step, poll=args.poll, weeks=args.weeks,
                         platform=plat, plots=not args.no_plots, log=lambda s, n=name: print(f"{n}: {s}"))
                if wl is None:
                    plat = next((args.out / name / "workload").glob("*_platform.xml"))
                    wl = plat.with_name(plat.name.removesuffix("_platform.xml") + ".json")
    print_tables(args.out, tags, args.steps, args.poll)
    return 0


if __name__ == "__main__":
    sys.exit(main())
