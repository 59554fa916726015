"""Site-level users, CREASY and LOS: the reproduction of Shmueli's thesis experiments (models.md §C; issue 17
item 5) on batfeed's closed-loop user models (users/site.py) and schedulers (schedulers/creasy.py, los.py):
``batfeed reproduce site-users``.

    batfeed reproduce site-users --workers 2          # every run (~45 min on 2 cores)
    batfeed reproduce site-users --quick --workers 2  # E7 at 50 and 250 users, E1/E2: a few minutes
    batfeed reproduce site-users --summary-only       # print and plot what is done

1. **E7**: Phase-2 users 50 .. 250 (step 50), 128 processors, 6 months of activity, EASY (= CREASY α = 0,
   as in the thesis) vs CREASY α ∈ {1500, 3000, 4500, 6000}, ``--seeds`` seeds each: throughput (jobs/h),
   utilisation, jobs/session, mean response, mean slowdown, response by run-time class, beside the thesis
   (cells for the 50- and 250-user rows, band = min..max over the seeds, "close" within 10 %).
2. **E1/E2**: 10 Phase-1 sessions, 128 processors, exact estimates: the trace a site-level EASY run
   submitted, replayed open-loop (at its recorded times) on FCFS, vs site-level FCFS; and the reverse.
   Error = |open-loop − site-level| / site-level, beside the thesis's.
3. **LOS** vs EASY vs conservative under 100 Phase-2 users (the trace runs are campaigns/los.toml).

``--quick``: E7 with α ∈ {0, 6000} at 50 and 250 users and E1/E2, 2 seeds each, 8 weeks of user
activity instead of 26 (``--days 56``), no E7 with the thesis's p_cont and no LOS, in
``runs/reproduce/site-users-quick/days56`` (any ``--days`` but 182 gets its own ``daysN`` folder).
No log is read (the users' behaviour model ships with batfeed): ``--data`` is not used.
campaigns/site_e7.toml is E7 as a campaign (a generated trace; the same schedules); here every run
is a ``batfeed simulate`` in its own folder (resumable), on a local process pool of ``--workers``
(``--executor dask`` is not supported: E1/E2's open-loop runs replay what the site-level runs submitted).

Run times: the default behaviour model (``batfeed fit-users`` on KTH-SP2 and SDSC-BLUE) is far heavier than
the thesis's workpool, so every run uses ``runtime_scale`` (``--runtime-scale``, 0.1), chosen so that 50
users under EASY load 128 processors about as the thesis's 50 users do (38 % vs 35 %); the other points are
not fitted.  E1/E2 keep the model's run times (``--e12-runtime-scale`` 1): 10 sessions of the scaled model
would leave the machine idle.  Each run is a ``batfeed simulate`` (a manifest beside its ``_jobs.csv``) in
OUT/<group>/<run>, skipped when already done.  E7 runs twice: with the users' p_cont fitted from the logs
(group e7, ``--seeds``) and with the thesis's (group e7t, ``--thesis-seeds``), the curve CREASY's criticality
assumes.  Figures: OUT/figures/e7.png, e7t.png.  Known differences (docs/users.md): our users submit three
times fewer jobs per hour (fitted gaps and p_cont, b = 0.018 against 0.05), so CREASY does not raise
throughput; E1/E2 errors are larger because our site-level load is higher.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from itertools import islice
from pathlib import Path
from typing import Any

import pandas as pd

from batfeed.errors import BatfeedError
from batfeed.reproduce import REPO, common_arguments, default_out
from batfeed.reproduce.cells import Cell, markdown

NAME = "site-users"
DAY = 86_400
QUICK = {"alphas": [0, 6000], "users": [50, 250], "seeds": 2, "days": 56}
REASON_RATE = "our users submit 3x fewer jobs/h, p_cont b = 0.018 (docs/users.md)"
REASON_E12 = "our site-level load is higher (docs/users.md)"
# E7 rows with a thesis value, (alpha, users) -> jobs/h, utilisation, jobs/session, response min, slowdown
THESIS_E7 = {(0, 50): (None, None, 2.69, None, None), (0, 250): (47.0, 0.57, 1.73, 78.0, 71.0),
             (6000, 50): (28.0, 0.35, 2.76, 12.16, 7.01), (6000, 250): (70.5, 0.89, 2.69, 99.44, 24.30)}
E7_COLS = ["throughput", "utilisation", "jobs_per_session", "response_min", "slowdown"]
ALPHAS = [0, 1500, 3000, 4500, 6000]
USERS = [50, 100, 150, 200, 250]
# models.md §C E7 sample output of CREASY-6000 (users: util, jobs/h, jobs/session, resp min, slowdown)
THESIS_C6000 = {50: (0.35, 28.0, 2.76, 12.16, 7.01), 100: (0.55, 44.9, 2.70, 29.91, 15.28),
                150: (0.70, 54.8, 2.69, 48.83, 19.26), 200: (0.80, 62.7, 2.69, 72.88, 21.98),
                250: (0.89, 70.5, 2.69, 99.44, 24.30)}
THESIS_250 = {0: 47, 1500: 47 * 1.21, 3000: 47 * 1.36, 4500: 47 * 1.44, 6000: 71}   # jobs/h at 250 users
# E1/E2 (response h, wait h, slowdown): site EASY, site FCFS, EASY trace on FCFS, FCFS trace on EASY
THESIS_E = {"site EASY": (2 + 22 / 60, 38 / 60, 21.4), "site FCFS": (3 + 18 / 60, 1 + 33 / 60, 78.7),
            "EASY trace on FCFS": (24 + 16 / 60, 22 + 31 / 60, 1127), "FCFS trace on EASY": (2 + 8 / 60, 23 / 60, 17.3)}


def run_one(task: dict[str, Any]) -> dict[str, Any]:
    """One ``batfeed simulate`` (skipped when its result.json exists) and its metrics."""
    from batfeed.metrics import compute_metrics
    from batfeed.runner import run_simulation

    out = Path(task["dir"])
    done = out / "result.json"
    if done.is_file():
        return json.loads(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    run_simulation(task["platform"], task.get("workloads", []), scheduler=task["scheduler"],
                   options=task.get("options"), users=task.get("users"), user_options=task.get("user_options"),
                   export=out / "run", seed=task.get("seed"), call=f"batfeed reproduce site-users ({task['name']})")
    jobs = pd.read_csv(out / "run_jobs.csv")
    m = compute_metrics(jobs, nb_resources=128)
    res: dict[str, Any] = {**{k: task[k] for k in ("name", "group")}, **task.get("tags", {}),
                           "jobs": int(m["nb_jobs"]), "throughput": m["throughput_per_hour"],
                           "utilisation": m["utilisation"], "response_min": m["response"]["mean"] / 60,
                           "wait_min": m["wait"]["mean"] / 60, "slowdown": m["slowdown"]["mean"],
                           "bsld": m["bounded_slowdown"]["mean"]}
    run = jobs["execution_time"]
    for label, sel in (("le1", run <= 60), ("1to10", (run > 60) & (run <= 600)), ("gt10", run > 600)):
        res[f"response_min_{label}"] = float(jobs.loc[sel, "turnaround_time"].mean() / 60)
    swf = out / "submitted.swf"
    if swf.is_file():
        with swf.open() as f:
            head = list(islice(f, 8))
        hit = next((re.search(r"jobs_per_session=([\d.]+)", h) for h in head if "jobs_per_session" in h), None)
        res["jobs_per_session"] = float(hit.group(1)) if hit else float("nan")
    done.write_text(json.dumps(res, indent=1, default=float))
    return res


def site(name: str, group: str, out: Path, platform: Path, scheduler: str, options: dict[str, Any], phase: int,
         users: int, seed: int, scale: float, tags: dict[str, Any], extra: dict[str, Any] | None = None,
         days: int = 182) -> dict[str, Any]:
    d = out / group / name
    return {"name": name, "group": group, "dir": str(d), "platform": str(platform), "scheduler": scheduler,
            "options": options, "users": f"site-phase{phase}", "seed": seed, "tags": tags,
            "user_options": {"nb_users": users, "seed": seed, "duration_s": days * DAY, "runtime_scale": scale,
                             "swf": str(d / "submitted.swf"), **(extra or {})}}


def run_all(tasks: list[dict[str, Any]], workers: int) -> list[dict[str, Any]]:
    todo = [t for t in tasks if not (Path(t["dir"]) / "result.json").is_file()]
    if todo:
        print(f"{len(todo)} of {len(tasks)} runs to do on {workers} worker(s)", flush=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_one, t) for t in todo]
        for k, f in enumerate(as_completed(futures), 1):
            r = f.result()
            print(f"  [{k}/{len(todo)}] {r['group']}/{r['name']}: {r['jobs']} jobs, "
                  f"{r['throughput']:.1f} jobs/h, utilisation {r['utilisation']:.2f}", flush=True)
    return [run_one(t) for t in tasks]


def e7(out: Path, platform: Path, seeds: int, scale: float, thesis_p_cont: bool = False, days: int = 182,
       alphas: list[int] = ALPHAS, users: list[int] = USERS) -> list[dict[str, Any]]:
    """E7 runs; ``thesis_p_cont``: the users continue with the thesis's p_cont (Eq. 5.1, the curve CREASY's
    criticality is derived from) instead of the behaviour model's fitted one (group e7t instead of e7)."""
    group, extra = ("e7t", {"p_cont_a": 0.8, "p_cont_b": 0.05}) if thesis_p_cont else ("e7", None)
    return [site(f"a{a}-u{n}-s{s}", group, out, platform, "creasy", {"alpha": a}, 2, n, s, scale,
                 {"alpha": a, "users": n, "seed": s}, extra, days)
            for a in alphas for n in users for s in range(1, seeds + 1)]


def e12_site(out: Path, platform: Path, seeds: int, scale: float, days: int = 182) -> list[dict[str, Any]]:
    return [site(f"{sched}-s{s}", "e12", out, platform, sched, {"theta": None} if sched == "easy" else {}, 1, 10,
                 s, scale, {"setup": f"site {sched.upper()}", "seed": s}, days=days)
            for sched in ("easy", "fcfs") for s in range(1, seeds + 1)]


def e12_open(out: Path, platform: Path, seeds: int, existing_only: bool = False) -> list[dict[str, Any]]:
    """The open-loop replays of the site-level runs' submitted traces (converted from their SWF);
    ``existing_only``: only those whose site-level run is there (``--summary-only``)."""
    from batfeed.adapters.swf import convert_swf

    tasks = []
    for src, sched in (("easy", "fcfs"), ("fcfs", "easy")):
        for s in range(1, seeds + 1):
            swf = out / "e12" / f"{src}-s{s}" / "submitted.swf"
            conv = out / "e12" / f"{src}-s{s}" / "converted"
            if existing_only and not swf.is_file():
                continue
            if not (conv / "submitted.json").is_file():
                convert_swf(swf, conv, nb_res=128)
            tasks.append({"name": f"{src}-trace-on-{sched}-s{s}", "group": "e12", "platform": str(platform),
                          "dir": str(out / "e12" / f"{src}-trace-on-{sched}-s{s}"), "scheduler": sched,
                          "options": {"theta": None} if sched == "easy" else {},
                          "workloads": [str(conv / "submitted.json")],
                          "tags": {"setup": f"{src.upper()} trace on {sched.upper()}", "seed": s}})
    return tasks


def los_site(out: Path, platform: Path, seeds: int, scale: float, days: int = 182) -> list[dict[str, Any]]:
    return [site(f"{sched}-s{s}", "los", out, platform, sched, {"theta": None} if sched == "easy" else {}, 2, 100,
                 s, scale, {"scheduler": sched, "seed": s}, days=days)
            for sched in ("easy", "conservative", "los") for s in range(1, seeds + 1)]


def print_e7(rows: pd.DataFrame) -> pd.DataFrame:
    g = rows.groupby(["alpha", "users"])
    cols = ["throughput", "utilisation", "jobs_per_session", "response_min", "slowdown",
            "response_min_le1", "response_min_1to10", "response_min_gt10"]
    t = g[cols].mean().join(g["throughput"].std().rename("throughput_sd"))
    print("\nE7: Phase-2 users, 128 processors (mean over seeds); thesis CREASY-6000 beside")
    print(f"{'alpha':>5} {'users':>5} {'jobs/h':>14} {'util':>5} {'jobs/sess':>9} {'resp min':>8} {'sd':>7}"
          f"   thesis (util, jobs/h, jobs/sess, resp, sd)")
    for (a, n), r in t.iterrows():
        th = THESIS_C6000.get(n) if a == 6000 else None
        print(f"{a:5d} {n:5d} {r['throughput']:7.1f} ± {r['throughput_sd']:4.1f} {r['utilisation']:5.2f} "
              f"{r['jobs_per_session']:9.2f} {r['response_min']:8.1f} {r['slowdown']:7.1f}"
              + (f"   {th}" if th else ""))
    print("\nE7, the thesis's rows (50 and 250 users): paper · batfeed [min, max over seeds] · verdict\n")
    cells = []
    for (a, n), paper in THESIS_E7.items():
        d = rows[(rows["alpha"] == a) & (rows["users"] == n)]
        if d.empty:
            continue
        cells.append((f"{'EASY' if a == 0 else f'CREASY-{a}'} | {n}", [
            Cell(pv, float(d[c].mean()), float(d[c].min()), float(d[c].max()), reason=REASON_RATE, signed=False,
                 rel=0.10, digits=2 if c in ("utilisation", "jobs_per_session") else 1)
            for c, pv in zip(E7_COLS, paper, strict=True)]))
    print(markdown(["scheduler", "users", "jobs/h", "utilisation", "jobs/session", "response (min)", "slowdown"],
                   cells))
    gains = []
    easy = rows[(rows["alpha"] == 0) & (rows["users"] == 250)].set_index("seed")["throughput"]
    for a, paper in ((1500, 21), (3000, 36), (4500, 44), (6000, 50)):
        other = rows[(rows["alpha"] == a) & (rows["users"] == 250)].set_index("seed")["throughput"]
        both = easy.index.intersection(other.index)
        if len(both):
            per = 100 * (other[both] / easy[both] - 1)
            pooled = 100 * (other[both].mean() / easy[both].mean() - 1)
            gains.append(Cell(paper, float(pooled), float(per.min()), float(per.max()), reason=REASON_RATE, tol=5))
    if gains:
        print("\nthroughput gain over EASY at 250 users, % (α " + ", ".join(
            str(a) for a in (1500, 3000, 4500, 6000) if ((rows["alpha"] == a) & (rows["users"] == 250)).any())
              + "): " + "; ".join(c.text() for c in gains))
    if {(0, 250), (6000, 250)} <= set(t.index):
        e, c = t.loc[(0, 250)], t.loc[(6000, 250)]

        def gain(col: str) -> str:
            return f"{c[col] / e[col] - 1:+.0%}"

        print("at 250 users, CREASY-6000 vs EASY (thesis: response +27 %, slowdown −66 %, by class −83 / −44 / "
              f"+81 %):\n  response {gain('response_min')}, slowdown {gain('slowdown')}, by class "
              f"{gain('response_min_le1')} / {gain('response_min_1to10')} / {gain('response_min_gt10')}")
    return t


def print_e12(rows: pd.DataFrame) -> None:
    t = rows.groupby("setup")[["response_min", "wait_min", "slowdown"]]
    mean, lo, hi = t.mean(), t.min(), t.max()
    print("\nE1/E2: 10 Phase-1 sessions, 128 processors: response h, wait h, slowdown; paper · batfeed [min, max over "
          "seeds] · verdict\n")
    cells = []
    for setup, th in THESIS_E.items():
        if setup in mean.index:
            cells.append((setup, [Cell(p, mean.at[setup, c] / k, lo.at[setup, c] / k, hi.at[setup, c] / k,
                                       reason=REASON_E12, signed=False, rel=0.10, digits=2 if k == 60 else 1)
                                  for p, c, k in zip(th, ("response_min", "wait_min", "slowdown"), (60, 60, 1),
                                                     strict=True)]))
    for conv, ref, thesis in (("EASY trace on FCFS", "site FCFS", (634, 1345, 1332)),
                              ("FCFS trace on EASY", "site EASY", (10, 38, 19))):
        a = rows[rows["setup"] == conv].set_index("seed")
        b = rows[rows["setup"] == ref].set_index("seed")
        both = a.index.intersection(b.index)
        if not len(both):
            continue
        row = []
        for col, p in zip(("response_min", "wait_min", "slowdown"), thesis, strict=True):
            per = (a.loc[both, col] - b.loc[both, col]).abs() / b.loc[both, col] * 100
            row.append(Cell(p, float(per.mean()), float(per.min()), float(per.max()), reason=REASON_E12, signed=False,
                            rel=0.10))
        cells.append((f"error %: '{conv}' vs '{ref}'", row))
    print(markdown(["setup", "response (h)", "wait (h)", "slowdown"], cells))


def plot_e7(rows: pd.DataFrame, path: Path, what: str, days: int = 182) -> Path:
    """E7's four panels, one line per α that ran, the thesis's CREASY-6000 dashed; ``days`` of activity."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for a in ALPHAS:
        if not (rows["alpha"] == a).any():     # --quick runs fewer α: no empty legend entries
            continue
        d = rows[rows["alpha"] == a].groupby("users")
        label = "EASY (α = 0)" if a == 0 else f"CREASY α = {a}"
        for ax, col in zip(axes, ("throughput", "utilisation", "jobs_per_session", "response_min"), strict=True):
            m, s = d[col].mean(), d[col].std().fillna(0)
            ax.plot(m.index, m.to_numpy(), marker="o", label=label)
            ax.fill_between(m.index, (m - s).to_numpy(), (m + s).to_numpy(), alpha=0.15)
    th = pd.DataFrame(THESIS_C6000, index=["utilisation", "throughput", "jobs_per_session", "response_min", "sd"]).T
    for ax, col, label in zip(axes, ("throughput", "utilisation", "jobs_per_session", "response_min"),
                              ("throughput (jobs/h)", "utilisation", "jobs per session", "mean response (min)"),
                              strict=True):
        ax.plot(th.index, th[col], "k--", lw=1, label="thesis CREASY-6000")
        ax.set_xlabel("Phase-2 users")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    span = "6 months" if days == 182 else f"{days} days"
    fig.suptitle(f"E7: Phase-2 users on 128 processors, {span}; {what} (bands: ± 1 sd over seeds)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"batfeed reproduce {NAME}", description=__doc__.split("\n\n")[0])
    common_arguments(p, NAME)
    p.add_argument("--seeds", type=int, help="seeds per point (default 3; --quick: 2)")
    p.add_argument("--thesis-seeds", type=int,
                   help="seeds per point of E7 with the thesis's p_cont for the users (default 2; --quick: 0)")
    p.add_argument("--days", type=int, help="days of user activity (default 182, the thesis's 6 months; --quick: 56)")
    p.add_argument("--runtime-scale", type=float, default=0.1, help="run times x this (default 0.1, docstring)")
    p.add_argument("--e12-runtime-scale", type=float, default=1.0,
                   help="run times x this in E1/E2 (default 1: 10 sessions need the full model to load 128 processors)")
    p.add_argument("--los-campaign", type=Path, default=REPO / "runs" / "los",
                   help="where campaigns/los.toml ran (its table is printed when there)")
    args = p.parse_args(argv)
    if args.executor != "local":
        raise BatfeedError("site-users runs on a local process pool: --executor dask is not supported")
    quick = args.quick
    seeds = args.seeds or (QUICK["seeds"] if quick else 3)
    tseeds = args.thesis_seeds if args.thesis_seeds is not None else (0 if quick else 2)
    days = args.days or (QUICK["days"] if quick else 182)
    alphas, users = (QUICK["alphas"], QUICK["users"]) if quick else (ALPHAS, USERS)
    args.out = default_out(args, NAME)
    if days != 182:             # other runs than the thesis's 6 months: their own folder
        args.out = args.out / f"days{days}"
    from batfeed.platforms.generate import write_homogeneous_platform

    args.out.mkdir(parents=True, exist_ok=True)
    platform = args.out / "p128.xml"
    if not platform.is_file():
        write_homogeneous_platform(platform, 128)
    groups = {"e7": e7(args.out, platform, seeds, args.runtime_scale, days=days, alphas=alphas, users=users),
              "e7t": e7(args.out, platform, tseeds, args.runtime_scale, thesis_p_cont=True, days=days, alphas=alphas,
                        users=users),
              "e12": e12_site(args.out, platform, seeds, args.e12_runtime_scale, days=days),
              "los": [] if quick else los_site(args.out, platform, seeds, args.runtime_scale, days=days)}
    if args.summary_only:
        rows = {g: [json.loads((Path(t["dir"]) / "result.json").read_text()) for t in ts
                    if (Path(t["dir"]) / "result.json").is_file()] for g, ts in groups.items()}
        rows["e12"] += [json.loads((Path(t["dir"]) / "result.json").read_text())
                        for t in e12_open(args.out, platform, seeds, existing_only=True)
                        if (Path(t["dir"]) / "result.json").is_file()]
    else:
        rows = {g: run_all(ts, args.workers) if ts else [] for g, ts in groups.items()}
        rows["e12"] += run_all(e12_open(args.out, platform, seeds), args.workers)
    for g, what in (("e7", "users' p_cont fitted by fit-users (a = 0.78, b = 0.018)"),
                    ("e7t", "users' p_cont = the thesis's Eq. 5.1 (a = 0.8, b = 0.05)")):
        if rows[g]:
            e7rows = pd.DataFrame(rows[g])
            print(f"\n==== {g}: {what}")
            print_e7(e7rows)
            print(f"wrote {plot_e7(e7rows, args.out / 'figures' / f'{g}.png', what, days)}")
    if rows["e12"]:
        print_e12(pd.DataFrame(rows["e12"]))
    if rows["los"]:
        t = pd.DataFrame(rows["los"]).groupby("scheduler")[["throughput", "utilisation", "response_min",
                                                            "slowdown", "bsld"]].mean()
        print("\nLOS vs EASY vs conservative under 100 Phase-2 users (mean over seeds)")
        print(t.to_string(float_format=lambda x: f"{x:.2f}"))
    traces = args.los_campaign / "results.csv"
    if traces.is_file():
        t = pd.read_csv(traces)
        cols = ["trace", "scheduler", "utilisation", "wait.mean", "response.mean", "slowdown.mean",
                "bounded_slowdown.mean", "wait.max"]
        print(f"\nLOS vs EASY vs conservative on the traces ({traces})")
        print(t[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    for g, r in rows.items():
        pd.DataFrame(r).to_csv(args.out / f"{g}.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
