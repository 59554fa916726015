"""Validation of the Maui scheduler against a recorded trace (models.md §F [MAUI], the paper's protocol).

``batfeed validate TRACE [--config maui.cfg] [--interval Δ] --out DIR``:

1. TRACE is an SWF file (converted with :func:`batfeed.adapters.swf.convert_swf` into
   ``DIR/workload/``: Alea extended columns accepted; an Alea ``<trace>.machines`` file next to it
   sizes the platform, as for the wagap trace; jobs running longer than requested get a walltime
   of run + 1 s so that they run their recorded time) or a Batsim workload JSON from any adapter
   (with ``--platform``, or a homogeneous platform of its ``nb_res``).  The recorded wait of a job
   is its ``swf_wait`` (SWF) or ``trace_wait`` (PBS, Maui, sacct) field.
2. Weeks are aligned to the first job (week k = [k·7 d, (k+1)·7 d) of the workload's time); every
   target week k ≥ 1 (``--weeks`` selects some) is simulated with the jobs submitted during weeks
   k − 1 (warm-up) and k, time-shifted so that the warm-up starts at 0, until all of them are
   done (UNDEF → choice: jobs of week k + 1 are not simulated, so they never compete).
   ``--events``/``--maintenance`` (Batsim events files on the workload's time axis) are clipped
   and shifted the same way: machines down at the window start are down at 0, and every machine
   still down at the window end comes back then.
3. Only jobs submitted in the target week are scored: e_j = simulated wait − recorded wait (jobs
   without recorded wait or never started in the simulation are left out and counted).
   ``DIR/errors.csv``: ``week,jobs,mean_error_s,median_error_s,std_error_s,wall_s`` (population
   standard deviation; wall = wall-clock seconds of the week's simulation, loading included).
   ``DIR/weeks/wkNNN_errors.csv``: the per-job values, with ``room`` = 1 when the recorded schedule
   had the job's request free during its whole recorded wait (:mod:`batfeed.contention`: a wait no
   simulation of the trace's jobs can reproduce); ``DIR/errors_contention.csv``: per week, those
   "room" jobs and the error over the other, contention-bound, jobs.
   Plots (PNG, matplotlib, :mod:`batfeed.validate_plots`): ``DIR/plots/wkNNN_wait_cdf.png``
   (recorded vs simulated waits of the target week), ``DIR/plots/wkNNN_utilisation.png`` (hourly
   utilisation of the simulated jobs over warm-up and target week, recorded vs simulated),
   ``DIR/wait_cdf_all.png`` and ``DIR/errors_by_week.png``.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from batfeed.contention import room_by_job, summarise
from batfeed.errors import BatfeedError, InputError
from batfeed.validate_week import WeekResult

WEEK = 7 * 86400.0
WAIT_FIELDS = ("swf_wait", "trace_wait")


# ---------------------------------------------------------------------------------------- inputs
def prepare(trace: str | Path, out: Path, machines: str | Path | None = None,
            platform: str | Path | None = None, overrun: float | None = None) -> tuple[Path, Path, dict[str, Any]]:
    """(workload path, platform path, workload dict) of TRACE (SWF converted, or a workload JSON).

    An SWF's jobs that ran longer than requested get run + 1 s (``over_request="raise"``), unless
    ``overrun`` is given: then the requests are kept and Batsim lets a job run up to its request +
    ``overrun`` s (``convert --overrun``, Maui's JOBMAXOVERRUN), Maui planning with the request."""
    from batfeed.adapters.workload import load_workload_json
    from batfeed.platforms.generate import write_homogeneous_platform

    trace = Path(trace)
    if not trace.exists():
        raise InputError("no such file", str(trace))
    if trace.name.endswith(".json"):
        data = load_workload_json(trace)
        if platform is None:
            nb = data.get("nb_res")
            if not isinstance(nb, int) or nb <= 0:
                raise InputError("the workload has no nb_res: pass --platform", str(trace))
            out.mkdir(parents=True, exist_ok=True)
            platform = write_homogeneous_platform(out / "platform.xml", nb)
        return trace, Path(platform), data
    from batfeed.adapters.swf import convert_swf

    if machines is None:
        stem = trace.name.removesuffix(".gz").removesuffix(".xz")
        guess = trace.with_name(stem + ".machines")
        machines = guess if guess.exists() else None
    extra: dict[str, Any] = {"over_request": "raise"} if overrun is None else {"over_request": "keep",
                                                                                "overrun": overrun}
    res = convert_swf(trace, out / "workload", machines=machines, extended=True, **extra)
    return res.workload_path, Path(platform) if platform else res.platform_path, load_workload_json(
        res.workload_path)


def parse_weeks(spec: str | None, last: int) -> list[int]:
    """``"1-5,29"`` -> [1..5, 29]; None -> every week 1..last."""
    if spec is None:
        return list(range(1, last + 1))
    weeks: set[int] = set()
    for part in spec.split(","):
        a, _, b = part.strip().partition("-")
        try:
            lo, hi = int(a), int(b or a)
        except ValueError:
            raise BatfeedError(f"--weeks: bad week range '{part}' (e.g. 1-5,29)") from None
        if lo < 1 or hi < lo:
            raise BatfeedError(f"--weeks: bad week range '{part}' (weeks start at 1: week 0 is only a warm-up)")
        weeks.update(range(lo, hi + 1))
    return sorted(w for w in weeks if w <= last)


def recorded_wait(job: dict[str, Any]) -> float | None:
    for key in WAIT_FIELDS:
        v = job.get(key)
        if isinstance(v, int | float) and v >= 0 and math.isfinite(v):
            return float(v)
    return None


def _ids(ivs: set[int]) -> str:
    out, run = [], None
    for m in sorted(ivs):
        if run and m == run[1] + 1:
            run[1] = m
        else:
            run = [m, m]
            out.append(run)
    return " ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def _machines(text: str) -> set[int]:
    got: set[int] = set()
    for part in str(text).split():
        a, _, b = part.partition("-")
        got.update(range(int(a), int(b or a) + 1))
    return got


def read_events(path: str | Path) -> list[dict[str, Any]]:
    events = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                ev = json.loads(line)
                float(ev["timestamp"])
                ev["type"]
            except (ValueError, KeyError, TypeError) as err:
                raise InputError(f"bad event ({err})", str(path), n) from None
            events.append(ev)
    return events


def window_events(events: list[dict[str, Any]], a: float, b: float) -> list[dict[str, Any]]:
    """Machine events of [a, b) shifted by −a; machines down at a are down at 0, all back at b − a."""
    kinds = ("machine_available", "machine_unavailable")
    evs = sorted((e for e in events if e["type"] in kinds),
                 key=lambda e: (float(e["timestamp"]), e["type"] != "machine_available"))
    down: set[int] = set()
    out: list[dict[str, Any]] = []
    started = False
    for ev in evs:
        t = float(ev["timestamp"])
        ms = _machines(ev["resources"])
        if t >= b:
            break
        if t > a and not started:
            started = True
            if down:
                out.append({"timestamp": 0.0, "type": "machine_unavailable", "resources": _ids(down)})
        if ev["type"] == "machine_unavailable":
            new = ms - down
            down |= new
            if started and new:
                out.append({"timestamp": t - a, "type": "machine_unavailable", "resources": _ids(new)})
        else:
            back = ms & down
            down -= back
            if started and back:
                out.append({"timestamp": t - a, "type": "machine_available", "resources": _ids(back)})
    if not started and down:
        out.append({"timestamp": 0.0, "type": "machine_unavailable", "resources": _ids(down)})
    if down:
        out.append({"timestamp": b - a, "type": "machine_available", "resources": _ids(down)})
    return out


def _write_events(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------- run
def validate(trace: str | Path, out: str | Path, *, config: str | None = None, interval: float | None = None,
             poll: bool = False, weeks: str | None = None, machines: str | None = None,
             mechanics: str = "nodes", overrun: float | None = None,
             platform: str | None = None, events: str | None = None, maintenance: str | None = None,
             on_machine_down: str = "ignore", plots: bool = True,
             log: Callable[[str], None] = print) -> list[WeekResult]:
    """Run the weekly validation (module docstring); returns one :class:`WeekResult` per week."""
    from batfeed.runner import run_simulation

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    wl_path, plat, data = prepare(trace, out, machines, platform, overrun)
    jobs = sorted(data["jobs"], key=lambda j: float(j["subtime"]))
    if not jobs:
        raise InputError("the workload has no job", str(wl_path))
    origin = float(jobs[0]["subtime"])
    last = int((float(jobs[-1]["subtime"]) - origin) // WEEK)
    targets = parse_weeks(weeks, last)
    if not targets:
        raise BatfeedError(f"no week to validate: the trace spans weeks 0-{last} (week 0 is only a warm-up)")
    ev_all = read_events(events) if events else []
    maint_all = read_events(maintenance) if maintenance else []
    options: dict[str, Any] = {"on_machine_down": on_machine_down}
    if config is not None:
        options["config"] = str(Path(config).resolve())
    if interval is not None:
        options["interval"] = interval
    if poll:
        options["poll"] = True
    if mechanics != "nodes":
        options["mechanics"] = mechanics
    nb_res = int(data.get("nb_res") or 0)
    wdir = out / "weeks"
    wdir.mkdir(exist_ok=True)
    if plots:
        (out / "plots").mkdir(exist_ok=True)
    top = {k: v for k, v in data.items() if k not in ("jobs", "profiles")}
    results = []
    subtimes = np.array([float(j["subtime"]) for j in jobs])
    room = room_by_job(jobs, data["profiles"], nb_res, recorded_wait)
    for k in targets:
        a, mid, b = origin + (k - 1) * WEEK, origin + k * WEEK, origin + (k + 1) * WEEK
        lo, hi = np.searchsorted(subtimes, a, "left"), np.searchsorted(subtimes, b, "left")
        window = [{**j, "subtime": float(j["subtime"]) - a} for j in jobs[lo:hi]]
        name = f"wk{k:03d}"
        if not any(float(j["subtime"]) + a >= mid for j in window):
            results.append(WeekResult(k, 0, math.nan, math.nan, math.nan, 0.0))
            log(f"week {k}: no job submitted")
            continue
        profiles = {p: data["profiles"][p] for p in {j["profile"] for j in window}}
        wpath = wdir / f"{name}.json"
        wpath.write_text(json.dumps({**top, "jobs": window, "profiles": profiles}), encoding="utf-8")
        evs, opts = [], dict(options)
        if ev_all:
            evs.append(_write_events(wdir / f"{name}_events.txt", window_events(ev_all, a, b)))
        if maint_all:
            mfile = _write_events(wdir / f"{name}_maintenance.txt", window_events(maint_all, a, b))
            evs.append(mfile)
            opts["maintenance"] = str(mfile)
        t0 = time.perf_counter()
        run_simulation(plat, [wpath], scheduler="maui", options=opts, events=evs, export=wdir / name,
                       dynamic=on_machine_down == "kill-resubmit")
        wall = time.perf_counter() - t0
        res = _score(k, window, room, wdir / f"{name}_jobs.csv", mid - a, wall, wdir / f"{name}_errors.csv")
        results.append(res)
        cj, cmean, cmed, _ = res.contention
        log(f"week {k}: {res.jobs} jobs scored ({res.unscored} not), error mean {seconds(res.mean)}, median "
            f"{seconds(res.median)}, std {seconds(res.std)}; {cj} contention-bound jobs: mean {seconds(cmean)}, "
            f"median {seconds(cmed)}; simulated in {wall:.2f} s")
        if plots:
            _plot_week(out / "plots", name, k, window, data["profiles"], wdir / f"{name}_jobs.csv", res,
                       nb_res, mid - a, interval)
    write_errors_csv(out / "errors.csv", results)
    write_contention_csv(out / "errors_contention.csv", results)
    if plots:
        _plot_summary(out, results, interval)
    return results


def seconds(x: float) -> str:
    """``"12 s"``, or ``"n/a"`` for a statistic over no job (NaN)."""
    return "n/a" if math.isnan(x) else f"{x:.0f} s"


def _sim_rows(jobs_csv: Path) -> dict[str, dict[str, str]]:
    with open(jobs_csv, newline="", encoding="utf-8") as f:
        return {r["job_id"]: r for r in csv.DictReader(f)}


def _score(k: int, window: list[dict[str, Any]], room: dict[Any, bool], jobs_csv: Path, split: float,
           wall: float, out_csv: Path) -> WeekResult:
    rows = _sim_rows(jobs_csv)
    rec, sim, flags, unscored, lines = [], [], [], 0, []
    for j in window:
        if j["subtime"] < split:
            continue
        r = recorded_wait(j)
        row = rows.get(str(j["id"]))
        if r is None or row is None or not row["starting_time"]:
            unscored += 1
            continue
        s = float(row["starting_time"]) - float(row["submission_time"])
        rec.append(r)
        sim.append(s)
        flags.append(room.get(j["id"], False))
        lines.append(f"{j['id']},{j['subtime'] - split:.0f},{r:.0f},{s:.0f},{s - r:.0f},{int(flags[-1])}")
    out_csv.write_text("job_id,submit_in_week_s,recorded_wait_s,simulated_wait_s,error_s,room\n"
                       + "".join(f"{x}\n" for x in lines), encoding="utf-8")
    rec_a, sim_a, room_a = np.array(rec), np.array(sim), np.array(flags, dtype=bool)
    if not rec:
        return WeekResult(k, 0, math.nan, math.nan, math.nan, wall, unscored, rec_a, sim_a, room_a)
    return WeekResult(k, len(rec_a), *summarise(sim_a - rec_a), wall, unscored, rec_a, sim_a, room_a)


def write_errors_csv(path: Path, results: Sequence[WeekResult]) -> Path:
    def f(x: float) -> str:
        return "" if math.isnan(x) else f"{x:.1f}"

    lines = ["week,jobs,mean_error_s,median_error_s,std_error_s,wall_s"]
    lines += [f"{r.week},{r.jobs},{f(r.mean)},{f(r.median)},{f(r.std)},{r.wall:.3f}" for r in results]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_contention_csv(path: Path, results: Sequence[WeekResult]) -> Path:
    """Per week: jobs whose recorded wait had room throughout (:mod:`batfeed.contention`), and the
    error over the other, contention-bound, jobs."""
    def f(x: float) -> str:
        return "" if math.isnan(x) else f"{x:.1f}"

    lines = ["week,jobs,room_jobs,room_wait_share,contention_jobs,mean_error_s,median_error_s,std_error_s"]
    for r in results:
        n, mean, med, std = r.contention
        total = float(r.recorded.sum()) if len(r.recorded) else 0.0
        share = float(r.recorded[r.room].sum()) / total if total > 0 else math.nan
        lines.append(f"{r.week},{r.jobs},{int(r.room.sum())},{f(share) if math.isnan(share) else f'{share:.3f}'},"
                     f"{n},{f(mean)},{f(med)},{f(std)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------- plots
def hourly_busy(window: list[dict[str, Any]], profiles: dict[str, Any], jobs_csv: Path,
                horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """Processor-seconds busy per hour of [0, horizon): (recorded schedule, simulated schedule) of the
    window's jobs (recorded: start = submit + recorded wait, for delay profiles)."""
    rows = _sim_rows(jobs_csv)
    hour = 3600.0
    nbins = int(math.ceil(horizon / hour))
    rec_busy, sim_busy = np.zeros(nbins), np.zeros(nbins)

    def add(busy: np.ndarray, s: float, e: float, q: float) -> None:
        e = min(e, horizon)
        if e <= s:
            return
        i0, i1 = int(s // hour), min(int(math.ceil(e / hour)), nbins)
        for i in range(i0, i1):
            lo, hi = max(s, i * hour), min(e, (i + 1) * hour)
            if hi > lo:
                busy[i] += q * (hi - lo)

    for j in window:
        w, prof = recorded_wait(j), profiles.get(j["profile"], {})
        if w is not None and prof.get("type") == "delay":
            s = j["subtime"] + w
            add(rec_busy, s, s + float(prof["delay"]), j["res"])
        row = rows.get(str(j["id"]))
        if row and row["starting_time"]:
            add(sim_busy, float(row["starting_time"]), float(row["finish_time"]),
                float(row["requested_number_of_resources"]))
    return rec_busy, sim_busy


def _plot_week(pdir: Path, name: str, k: int, window: list[dict[str, Any]], profiles: dict[str, Any],
               jobs_csv: Path, res: WeekResult, nb_res: int, split: float, interval: float | None) -> None:
    from batfeed import validate_plots as vp

    vp.wait_cdf(pdir / f"{name}_wait_cdf.png", res.recorded, res.simulated,
                f"Week {k}: wait-time CDF of the {res.jobs} scored jobs", interval)
    rec_busy, sim_busy = hourly_busy(window, profiles, jobs_csv, 2 * split)
    days = (np.arange(len(rec_busy)) + 0.5) / 24
    cap = max(nb_res, 1) * 3600.0
    vp.utilisation(pdir / f"{name}_utilisation.png", k, days, rec_busy / cap, sim_busy / cap, split / 86400,
                   nb_res, interval)


def _plot_summary(out: Path, results: Sequence[WeekResult], interval: float | None) -> None:
    from batfeed import validate_plots as vp

    scored = [r for r in results if r.jobs]
    if not scored:
        return
    rec = np.concatenate([r.recorded for r in scored])
    sim = np.concatenate([r.simulated for r in scored])
    weeks = f"week {scored[0].week}" if len(scored) == 1 else f"{len(scored)} weeks"
    vp.wait_cdf(out / "wait_cdf_all.png", rec, sim, f"Wait-time CDF, {weeks} ({len(rec)} scored jobs)", interval)
    vp.errors_by_week(out / "errors_by_week.png", scored)
