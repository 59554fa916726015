"""Maui validation against history (models.md §F [MAUI]; issue 6): ``batfeed reproduce maui``.

Runs the campaign ``campaigns/maui_validation.toml`` (validate runs, docs/campaign.md: for each trace
— HPC2N-2002, which Maui scheduled; the Torque-derived wagap trace of MetaCentrum with its Alea
``.machines`` file; KTH-SP2 — and each scheduling step Δ (event-driven, 5 s, 60 s), ``batfeed
validate``: weekly windows, previous week as warm-up) through the campaign runner, then prints:

0. the paper's week table (Zitzlsberger et al.: Salomon weeks 6, 7, 29 at 60 s and 5 s, mean /
   median / std of e = simulated − recorded wait, s) cell by cell as *paper | batfeed | verdict*,
   batfeed's value being the same week of each trace (Salomon's log is not available: these are
   other machines' weeks, so the reason of a difference quotes docs/maui.md);
1. the per-job wait error e over all scored jobs (mean, median, std, mean |e|) and over the
   contention-bound jobs only (:mod:`batfeed.contention`: jobs whose recorded wait had room for them
   all along are waits no simulation of the trace's jobs can reproduce), with the summed and the
   largest weekly wall time;
2. the step effect d = simulated wait at step Δ − simulated wait event-driven, job by job (the
   error the step itself adds: the paper's Δ effect without the trace model's error);
3. the weeks where the step effect is largest, with their offered load.

::

    batfeed reproduce maui --workers 2                      # HPC2N-2002, wagap, KTH-SP2 at event / 5 s / 60 s
    batfeed reproduce maui --quick --workers 2              # KTH-SP2 only, weeks 6, 7, 29 (~1 min)
    batfeed reproduce maui --traces hpc2n --steps 0 --out runs/v \\
        --config schedulers/examples/hpc2n-seth-maui.cfg    # HPC2N's visible per-user limit
    batfeed reproduce maui --traces kth --load 1.4 --out runs/sat
    batfeed reproduce maui --overrun 600 --out runs/overrun  # Maui's JOBMAXOVERRUN
    batfeed reproduce maui --summary-only

``--quick``: ``--traces kth --weeks 6,7,29`` (KTH-SP2 ships with batfeed: no ``--data``; the weeks
of the paper's table, each with its warm-up week), in ``runs/reproduce/maui-quick``.  HPC2N-2002
comes from ``--data`` (the Parallel Workloads Archive's HPC2N-2002-2.1-cln.swf.gz) and wagap from
the ``alea_metacentrum`` folder beside it (skipped when missing).

``--out`` is the campaign directory (``runs/KEY/`` per run, ``results.csv``; default
``runs/reproduce/maui``); runs already complete there are reused, so an interrupted invocation
resumes.  The flags edit the campaign before it runs: ``--traces`` selects the file's traces (by
name), ``--steps`` the ``interval`` grid (0 = event-driven), ``--config``/``--poll``/``--mechanics``
Maui's options, ``--overrun`` the traces' conversion (recorded requests kept, jobs run up to request
+ SECONDS), ``--weeks``/``--no-plots`` the ``validate`` table.  Each trace is converted once (the
campaign's ``inputs/``) and shared by every step.  ``--poll`` adds Maui's poll loop (an iteration at
every step while jobs wait), the cost model of the paper.  ``--load F`` divides every submit time
by F (the trace option ``load``; a saturated machine, as Salomon was: only the step-effect tables
mean something then, the recorded waits belong to the unscaled trace).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from batfeed.reproduce import REPO, common_arguments, data_dir, default_out
from batfeed.reproduce.cells import Cell, markdown

NAME = "maui"
CAMPAIGN = REPO / "campaigns" / "maui_validation.toml"
HPC2N = "HPC2N-2002-2.1-cln.swf.gz"
QUICK = {"traces": ["kth"], "weeks": "6,7,29"}
# models.md §F: Salomon, per-job error e = simulated - recorded wait (s): (week, step) -> mean, median, std
PAPER_WEEKS = {(6, 60.0): (103386, 116932, 53415), (7, 60.0): (39617, 18984, 53245), (29, 60.0): (27951, 951, 70094),
               (6, 5.0): (-52, 171, 7557), (7, 5.0): (-2223, -10, 21137), (29, 5.0): (167, 2, 2952)}
REASON = "not Salomon: its 1e4 s step effects need a saturated machine (docs/maui.md)"
Dirs = dict[tuple[str, float], Path]            # (trace tag, step) -> run directory


def tag(trace: str, load: float) -> str:
    return trace if load == 1 else f"{trace}-x{load:g}"


def campaign(path: Path, traces: list[str] | None, steps: list[float], *, load: float = 1.0,
             config: str | None = None, poll: bool = False, weeks: str | None = None, mechanics: str = "nodes",
             overrun: float | None = None, plots: bool = True, data: Path | None = None) -> dict[str, Any]:
    """The campaign file's mapping edited by the command line (traces whose file is missing left out;
    ``data``: the folder of the SWF logs, its sibling ``alea_metacentrum`` for wagap)."""
    from batfeed.campaign.checks import NAMED_TRACES
    from batfeed.campaign.spec import CampaignError, read_text

    doc, _ = read_text(path)
    if not all(isinstance(e, dict) and "name" in e for e in doc.get("traces", [])):
        raise CampaignError(f"{path}: every trace entry needs a name (the --traces names)")
    entries = {e["name"]: e for e in doc["traces"]}
    unknown = [t for t in traces or () if t not in entries]
    if unknown:
        raise CampaignError(f"{path}: no trace named {', '.join(unknown)} (the file's: {', '.join(entries)})")
    selected = []
    for name in traces or list(entries):
        entry = dict(entries[name])
        if data is not None and "/data/swf/" in entry["path"]:
            entry["path"] = str(data / Path(entry["path"]).name)
        elif data is not None and "/data/alea_metacentrum/" in entry["path"]:
            entry["path"] = str(data.parent / "alea_metacentrum" / Path(entry["path"]).name)
        if entry["path"] not in NAMED_TRACES:
            file = Path(os.path.expandvars(os.path.expanduser(entry["path"])))
            file = file if file.is_absolute() else path.parent / file
            if not file.is_file():
                print(f"skipping {name}: {file} not found", file=sys.stderr)
                continue
        if load != 1:
            entry.update(load=load, name=tag(name, load))
        if overrun is not None:     # recorded requests kept, jobs run up to request + overrun (Maui)
            entry.update(over_request="keep", overrun=overrun)
        selected.append(entry)
    if not selected:
        raise CampaignError(f"{path}: no trace to run")
    if len(doc["schedulers"]) != 1:
        raise CampaignError(f"{path}: one scheduler entry expected (maui with its options), got "
                            f"{len(doc['schedulers'])}")
    (sched,) = doc["schedulers"]
    options = dict(sched.get("options") or {})
    options["interval"] = [int(s) if float(s).is_integer() else s for s in steps]
    if config is not None:
        options["config"] = str(Path(config).resolve())
    if poll:
        options["poll"] = True
    if mechanics != "nodes":
        options["mechanics"] = mechanics
    settings = dict(doc.get("validate") or {}, plots=plots)
    if weeks is not None:
        settings["weeks"] = weeks
    return {**doc, "traces": selected, "schedulers": [{**sched, "options": options}], "validate": settings}


def run_dirs(table: Any, root: Path) -> Dirs:
    """The finished runs of the campaign table, by (trace, step)."""
    dirs: Dirs = {}
    for _, row in table.iterrows():
        if row["status"] == "ok":
            dirs[(row["trace"], float(row["options.interval"]))] = root / "runs" / row["key"]
        elif row["status"] == "failed":
            print(f"{row['trace']} at {row['options.interval']:g} s: failed: {row['error']}", file=sys.stderr)
    return dirs


def summary(d: Path | None, trace: str, step: float, poll: bool) -> dict | None:
    if d is None or not (d / "errors.csv").exists():
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


def per_job(d: Path | None) -> dict[str, tuple[int, float, float, int]]:
    """job id -> (week, recorded wait, simulated wait, room flag) over every scored week of a run."""
    got: dict[str, tuple[int, float, float, int]] = {}
    for path in sorted(d.glob("weeks/wk*_errors.csv")) if d is not None else ():
        week = int(path.name[2:5])
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                got[r["job_id"]] = (week, float(r["recorded_wait_s"]), float(r["simulated_wait_s"]),
                                    int(r.get("room") or 0))
    return got


def week_load(d: Path, week: int) -> float:
    """Offered load of a target week: Σ res·run of its jobs / (nb_res · 7 d)."""
    data = json.loads((d / "weeks" / f"wk{week:03d}.json").read_text())
    split = 7 * 86400.0
    work = sum(j["res"] * data["profiles"][j["profile"]].get("delay", 0.0) for j in data["jobs"]
               if j["subtime"] >= split)
    return work / (data["nb_res"] * split)


def print_tables(dirs: Dirs, traces: list[str], steps: list[float], poll: bool) -> None:
    """The three report tables (docs/maui.md, issue 6): errors vs recorded, the step effect, its worst weeks."""
    print("\nError e = simulated - recorded wait, all scored jobs and contention-bound jobs only (room = the "
          "recorded schedule had room for the job during its whole wait):\n")
    print("| trace | Δ | weeks | jobs | mean e (s) | median e (s) | std e (s) | mean abs e (s) | room jobs "
          "| room share of recorded wait | contention-bound: mean e (s) | median e (s) | wall, sum (s) "
          "| wall, max week (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for trace in traces:
        for step in steps:
            d = dirs.get((trace, step))
            s = summary(d, trace, step, poll)
            if not s:
                continue
            jobs = per_job(d)
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
        base = per_job(dirs.get((trace, 0.0)))
        if not base:
            continue
        for step in sorted(x for x in steps if x):
            other = per_job(dirs.get((trace, step)))
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
            load = week_load(dirs[(trace, 0.0)], w)
            print(f"| {trace} | {step:g} s | {w} | {n} | {load:.2f} | {mean_d:.0f} | {med_d:.0f} | "
                  f"{pos}/{len(rows)} |")


def week_cells(dirs: Dirs, traces: list[str]) -> list[tuple[str, list[Cell]]]:
    """The paper's week table beside the same week of each trace (mean, median, std of e, s)."""
    rows = []
    for trace in traces:
        for (week, step), paper in PAPER_WEEKS.items():
            d = dirs.get((trace, step))
            got: dict[str, float] = {}
            if d is not None and (d / "errors.csv").is_file():
                with open(d / "errors.csv", newline="") as f:
                    got = next((r for r in csv.DictReader(f) if int(r["week"]) == week), {})
            vals = [float(got[k]) if got else None for k in ("mean_error_s", "median_error_s", "std_error_s")]
            rows.append((f"{trace} | {week} | {step:g} s",
                         [Cell(p, v, reason=REASON, signed=k < 2, rel=0.25, tol=60)
                          for k, (p, v) in enumerate(zip(paper, vals, strict=True))]))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"batfeed reproduce {NAME}", description=__doc__.splitlines()[0])
    common_arguments(p, NAME)
    p.add_argument("--campaign", type=Path, default=CAMPAIGN, help="campaign file (default: %(default)s)")
    p.add_argument("--traces", nargs="+", help="trace names of the campaign file (default: all: hpc2n wagap kth; "
                                               "--quick: kth)")
    p.add_argument("--steps", nargs="+", type=float, default=[0, 5, 60], help="0 = event-driven")
    p.add_argument("--weeks", help="target weeks (default: all; --quick: 6,7,29)")
    p.add_argument("--config", help="maui.cfg (default: Maui's defaults)")
    p.add_argument("--poll", action="store_true")
    p.add_argument("--overrun", type=float, metavar="SECONDS",
                   help="keep the recorded requests, jobs run up to request + SECONDS (Maui's JOBMAXOVERRUN)")
    p.add_argument("--mechanics", choices=["nodes", "counts"], default="nodes",
                   help="Maui's node-level mechanics (default) or the earlier count-based model")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--load", type=float, default=1.0,
                   help="arrival-rate factor F: submit times divided by F (load x F; recorded waits then mean "
                        "nothing: read the step-effect table only)")
    args = p.parse_args(argv)
    if args.load <= 0:
        p.error("--load must be > 0")
    if args.quick:
        args.traces = args.traces or QUICK["traces"]
        args.weeks = args.weeks or QUICK["weeks"]
    out = default_out(args, NAME)
    os.environ.setdefault("BATFEED_SHARED", str(REPO.parent / "shared"))
    from batfeed.campaign import CampaignInterrupted, load_spec, run_campaign
    from batfeed.errors import BatfeedError

    steps = [float(s) for s in args.steps]
    interrupted = False
    try:
        data = data_dir(args, [HPC2N]) if args.traces is None or "hpc2n" in args.traces else None
        spec = campaign(args.campaign, args.traces, steps, load=args.load, config=args.config, poll=args.poll,
                        mechanics=args.mechanics, overrun=args.overrun, weeks=args.weeks,
                        plots=not args.no_plots, data=data)
        camp = load_spec(spec, base=args.campaign.resolve().parent)
        table = run_campaign(camp, out, workers=args.workers, executor=args.executor,
                             scheduler_address=args.scheduler_address, dry_run=args.summary_only,
                             log=lambda line: print(line, flush=True))
    except CampaignInterrupted as stop:
        print(f"interrupted: {stop.done} of {stop.total} runs done; run again to resume", file=sys.stderr)
        table, interrupted = stop.table, True
    except BatfeedError as err:
        print(f"batfeed reproduce maui: error: {err}", file=sys.stderr)
        return 1
    root = out.resolve()
    dirs = run_dirs(table, root)
    traces = [t.name for t in camp.traces]
    if args.load == 1:
        print("\nThe paper's week table (Salomon, models.md §F) beside the same week of each trace: e = simulated - "
              "recorded wait (s), paper · batfeed · verdict\n")
        print(markdown(["trace", "week", "Δ", "mean e (s)", "median e (s)", "std e (s)"], week_cells(dirs, traces)))
    print_tables(dirs, traces, steps, args.poll)
    if interrupted:
        return 130
    return 0 if (table["status"] == "ok").all() or args.summary_only else 1
