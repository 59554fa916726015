"""Site-level users, CREASY and LOS: the reproduction of Shmueli's thesis experiments (models.md §C; issue 17
item 5) on batfeed's closed-loop user models (users/site.py) and schedulers (schedulers/creasy.py, los.py).

    .venv/bin/python experiments/site_users.py --workers 2          # every run (~15 min on 2 cores)
    .venv/bin/python experiments/site_users.py --summary-only       # print and plot what is done

1. **E7**: Phase-2 users 50 .. 250 (step 50), 128 processors, 6 months of activity, EASY (= CREASY α = 0,
   as in the thesis) vs CREASY α ∈ {1500, 3000, 4500, 6000}, ``--seeds`` seeds each: throughput (jobs/h),
   utilisation, jobs/session, mean response, mean slowdown, response by run-time class, beside the thesis.
2. **E1/E2**: 10 Phase-1 sessions, 128 processors, exact estimates: the trace a site-level EASY run
   submitted, replayed open-loop (at its recorded times) on FCFS, vs site-level FCFS; and the reverse.
   Error = |open-loop − site-level| / site-level, beside the thesis's.
3. **LOS** vs EASY vs conservative under 100 Phase-2 users (the trace runs are campaigns/los.toml).

campaigns/site_e7.toml is E7 as a campaign (a generated trace; the same schedules).

Run times: the default behaviour model (``batfeed fit-users`` on KTH-SP2 and SDSC-BLUE) is far heavier than
the thesis's workpool, so every run uses ``runtime_scale`` (``--runtime-scale``, 0.1), chosen so that 50
users under EASY load 128 processors about as the thesis's 50 users do (38 % vs 35 %); the other points are
not fitted.  E1/E2 keep the model's run times (``--e12-runtime-scale`` 1): 10 sessions of the scaled model
would leave the machine idle.  Each run is a ``batfeed simulate`` (a manifest beside its ``_jobs.csv``) in
OUT/<group>/<run>, skipped when already done.  E7 runs twice: with the users' p_cont fitted from the logs
(group e7, ``--seeds``) and with the thesis's (group e7t, ``--thesis-seeds``), the curve CREASY's criticality
assumes.  Figures: OUT/figures/e7.png, e7t.png.
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

REPO = Path(__file__).resolve().parent.parent
DAY = 86_400
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
                   export=out / "run", seed=task.get("seed"), call=f"experiments/site_users.py ({task['name']})")
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
         users: int, seed: int, scale: float, tags: dict[str, Any], extra: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    d = out / group / name
    return {"name": name, "group": group, "dir": str(d), "platform": str(platform), "scheduler": scheduler,
            "options": options, "users": f"site-phase{phase}", "seed": seed, "tags": tags,
            "user_options": {"nb_users": users, "seed": seed, "duration_s": 182 * DAY, "runtime_scale": scale,
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


def e7(out: Path, platform: Path, seeds: int, scale: float, thesis_p_cont: bool = False) -> list[dict[str, Any]]:
    """E7 runs; ``thesis_p_cont``: the users continue with the thesis's p_cont (Eq. 5.1, the curve CREASY's
    criticality is derived from) instead of the behaviour model's fitted one (group e7t instead of e7)."""
    group, extra = ("e7t", {"p_cont_a": 0.8, "p_cont_b": 0.05}) if thesis_p_cont else ("e7", None)
    return [site(f"a{a}-u{n}-s{s}", group, out, platform, "creasy", {"alpha": a}, 2, n, s, scale,
                 {"alpha": a, "users": n, "seed": s}, extra)
            for a in ALPHAS for n in USERS for s in range(1, seeds + 1)]


def e12_site(out: Path, platform: Path, seeds: int, scale: float) -> list[dict[str, Any]]:
    return [site(f"{sched}-s{s}", "e12", out, platform, sched, {"theta": None} if sched == "easy" else {}, 1, 10,
                 s, scale, {"setup": f"site {sched.upper()}", "seed": s})
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


def los_site(out: Path, platform: Path, seeds: int, scale: float) -> list[dict[str, Any]]:
    return [site(f"{sched}-s{s}", "los", out, platform, sched, {"theta": None} if sched == "easy" else {}, 2, 100,
                 s, scale, {"scheduler": sched, "seed": s})
            for sched in ("easy", "conservative", "los") for s in range(1, seeds + 1)]


def print_e7(rows: pd.DataFrame) -> pd.DataFrame:
    g = rows.groupby(["alpha", "users"])
    cols = ["throughput", "utilisation", "jobs_per_session", "response_min", "slowdown",
            "response_min_le1", "response_min_1to10", "response_min_gt10"]
    t = g[cols].mean().join(g["throughput"].std().rename("throughput_sd"))
    print("\nE7: Phase-2 users, 128 processors, 6 months (mean over seeds); thesis CREASY-6000 beside")
    print(f"{'alpha':>5} {'users':>5} {'jobs/h':>14} {'util':>5} {'jobs/sess':>9} {'resp min':>8} {'sd':>7}"
          f"   thesis (util, jobs/h, jobs/sess, resp, sd)")
    for (a, n), r in t.iterrows():
        th = THESIS_C6000.get(n) if a == 6000 else None
        print(f"{a:5d} {n:5d} {r['throughput']:7.1f} ± {r['throughput_sd']:4.1f} {r['utilisation']:5.2f} "
              f"{r['jobs_per_session']:9.2f} {r['response_min']:8.1f} {r['slowdown']:7.1f}"
              + (f"   {th}" if th else ""))
    base = t.xs(0, level="alpha")
    print("\nthroughput gain over EASY at 250 users (thesis: +21 / +36 / +44 / +50 %):")
    for a in ALPHAS[1:]:
        print(f"  alpha {a}: {t.loc[(a, 250), 'throughput'] / base.loc[250, 'throughput'] - 1:+.0%}")
    e, c = t.loc[(0, 250)], t.loc[(6000, 250)]
    print("at 250 users, CREASY-6000 vs EASY (thesis: response +27 %, slowdown −66 %, by class −83 / −44 / +81 %):")
    def gain(col: str) -> str:
        return f"{c[col] / e[col] - 1:+.0%}"

    print(f"  response {gain('response_min')}, slowdown {gain('slowdown')}, by class {gain('response_min_le1')} / "
          f"{gain('response_min_1to10')} / {gain('response_min_gt10')}")
    print(f"jobs/session 50 -> 250 users: EASY {base.loc[50, 'jobs_per_session']:.2f} -> "
          f"{base.loc[250, 'jobs_per_session']:.2f} (thesis 2.69 -> 1.73), CREASY-6000 "
          f"{t.loc[(6000, 50), 'jobs_per_session']:.2f} -> {c['jobs_per_session']:.2f} (thesis 2.76 -> 2.69)")
    return t


def print_e12(rows: pd.DataFrame) -> None:
    t = rows.groupby("setup")[["response_min", "wait_min", "slowdown"]].mean()
    print("\nE1/E2: 10 Phase-1 sessions, 128 processors (mean over seeds): response h, wait h, slowdown")
    for setup in ("site EASY", "site FCFS", "EASY trace on FCFS", "FCFS trace on EASY"):
        if setup in t.index:
            r, th = t.loc[setup], THESIS_E[setup]
            print(f"  {setup:19} {r['response_min'] / 60:7.2f} {r['wait_min'] / 60:7.2f} {r['slowdown']:8.1f}"
                  f"   thesis {th[0]:6.2f} {th[1]:6.2f} {th[2]:7.1f}")
    for conv, ref, thesis in (("EASY trace on FCFS", "site FCFS", (634, 1345, 1332)),
                              ("FCFS trace on EASY", "site EASY", (10, 38, 19))):
        if conv in t.index and ref in t.index:
            err = (t.loc[conv] - t.loc[ref]).abs() / t.loc[ref] * 100
            print(f"  error of '{conv}' vs '{ref}': response {err['response_min']:.0f} %, wait {err['wait_min']:.0f} %,"
                  f" slowdown {err['slowdown']:.0f} %   (thesis {thesis[0]} / {thesis[1]} / {thesis[2]} %)")


def plot_e7(rows: pd.DataFrame, path: Path, what: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for a in ALPHAS:
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
    fig.suptitle(f"E7: Phase-2 users on 128 processors, 6 months; {what} (bands: ± 1 sd over seeds)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=REPO / "runs" / "site_users")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seeds", type=int, default=3, help="seeds per point (default 3)")
    p.add_argument("--thesis-seeds", type=int, default=2,
                   help="seeds per point of E7 with the thesis's p_cont for the users (default 2)")
    p.add_argument("--runtime-scale", type=float, default=0.1, help="run times x this (default 0.1, docstring)")
    p.add_argument("--e12-runtime-scale", type=float, default=1.0,
                   help="run times x this in E1/E2 (default 1: 10 sessions need the full model to load 128 processors)")
    p.add_argument("--los-campaign", type=Path, default=REPO / "runs" / "los",
                   help="where campaigns/los.toml ran (its table is printed when there)")
    p.add_argument("--summary-only", action="store_true", help="run nothing: print and plot what is done")
    args = p.parse_args(argv)
    from batfeed.platforms.generate import write_homogeneous_platform

    args.out.mkdir(parents=True, exist_ok=True)
    platform = args.out / "p128.xml"
    if not platform.is_file():
        write_homogeneous_platform(platform, 128)
    groups = {"e7": e7(args.out, platform, args.seeds, args.runtime_scale),
              "e7t": e7(args.out, platform, args.thesis_seeds, args.runtime_scale, thesis_p_cont=True),
              "e12": e12_site(args.out, platform, args.seeds, args.e12_runtime_scale),
              "los": los_site(args.out, platform, args.seeds, args.runtime_scale)}
    if args.summary_only:
        rows = {g: [json.loads((Path(t["dir"]) / "result.json").read_text()) for t in ts
                    if (Path(t["dir"]) / "result.json").is_file()] for g, ts in groups.items()}
        rows["e12"] += [json.loads((Path(t["dir"]) / "result.json").read_text())
                        for t in e12_open(args.out, platform, args.seeds, existing_only=True)
                        if (Path(t["dir"]) / "result.json").is_file()]
    else:
        rows = {g: run_all(ts, args.workers) for g, ts in groups.items()}
        rows["e12"] += run_all(e12_open(args.out, platform, args.seeds), args.workers)
    for g, what in (("e7", "users' p_cont fitted by fit-users (a = 0.78, b = 0.018)"),
                    ("e7t", "users' p_cont = the thesis's Eq. 5.1 (a = 0.8, b = 0.05)")):
        if rows[g]:
            e7rows = pd.DataFrame(rows[g])
            print(f"\n==== {g}: {what}")
            print_e7(e7rows)
            print(f"wrote {plot_e7(e7rows, args.out / 'figures' / f'{g}.png', what)}")
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
