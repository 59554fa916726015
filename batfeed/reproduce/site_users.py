"""Site-level users, CREASY and LOS: the reproduction of Shmueli's thesis experiments (models.md §C) on
batfeed's closed-loop users (users/site.py) with the thesis's workload (users/site_thesis.py) and schedulers
(schedulers/creasy.py, los.py): ``batfeed reproduce site-users``.

    batfeed reproduce site-users --workers 2          # every run at the thesis's scale (docs/reproductions.md)
    batfeed reproduce site-users --quick --workers 2  # E7 at 50 and 250 users with α 0 and 6000, E1/E2
    batfeed reproduce site-users --summary-only       # print and plot what is done

1. **E7**: Phase-2 users 50 .. 250 (step 50) on 128 processors for six months, EASY (= CREASY α = 0, as in
   the thesis) and CREASY α ∈ {1500, 3000, 4500, 6000}, ``--seeds`` (5) seeds each, the ``thesis-phase2``
   workload.  Throughput (jobs submitted per hour) and utilisation are over the simulated six months only
   (the campaign's metric window); jobs/session, mean response and slowdown over all jobs.  Cells: the 50-
   and 250-user rows, paper · mean [95 % interval over seeds] · verdict ("close" within 10 %).
2. **E1/E2**: 10 Phase-1 sessions on 128 processors, the ``thesis-phase1`` workload: site-level EASY and
   FCFS; then the jobs each site-level run submitted (its ``run_jobs.csv`` as SWF) replayed open-loop on
   both schedulers.  Error = |open-loop − site-level| / site-level, per seed, beside the thesis's.
3. **LOS** vs EASY vs conservative under 100 Phase-2 users (full runs only).

Every group is a campaign (resumable, ``--workers``, ``--executor dask``) in OUT/<group>; E1/E2's open-loop
campaign is built from the site-level one's outputs, so it runs after it.  ``--quick``: E7 with α ∈ {0, 6000}
at 50 and 250 users and E1/E2, 5 seeds, 8 weeks of activity (``--days 56``), no LOS, in
``runs/reproduce/site-users-quick/days56``.  No log is read (the workloads ship with batfeed; ``batfeed
fit-users --thesis`` regenerates them): ``--data`` is not used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from batfeed.errors import BatfeedError
from batfeed.reproduce import REPO, common_arguments, default_out

NAME = "site-users"
DAY = 86_400
QUICK = {"alphas": [0, 6000], "users": [50, 250], "seeds": 5, "days": 56}
ALPHAS = [0, 1500, 3000, 4500, 6000]
USERS = [50, 100, 150, 200, 250]
METRICS = ["nb_jobs", "window_submitted_per_hour", "utilisation", "response.mean", "wait.mean", "slowdown.mean",
           "bounded_slowdown.mean", "users.jobs", "users.jobs_per_session", "users.sessions"]
PLATFORM = [{"name": "p128", "nb_machines": 128}]
SITE = [{"name": "site", "generate": True}]
EASY = {"name": "easy", "options": {"theta": None}}        # the thesis's EASY: no starvation threshold


def e7_spec(seeds: list[int], days: int, alphas: list[int], users: list[int], model: str) -> dict[str, Any]:
    return {"name": "site-e7", "seeds": seeds, "metrics": METRICS, "window": [0, days * DAY], "traces": SITE,
            "platforms": PLATFORM, "schedulers": [{"name": "creasy", "options": {"alpha": alphas}}],
            "users": [{"model": "site-phase2", "options": {"nb_users": users, "model": model,
                                                           "duration_s": days * DAY}}]}


def e12_site_spec(seeds: list[int], days: int, model: str) -> dict[str, Any]:
    return {"name": "site-e12", "seeds": seeds, "metrics": METRICS, "window": [0, days * DAY], "traces": SITE,
            "platforms": PLATFORM, "schedulers": [EASY, {"name": "fcfs"}],
            "users": [{"model": "site-phase1", "options": {"nb_users": 10, "model": model,
                                                           "duration_s": days * DAY}}]}


def los_spec(seeds: list[int], days: int, model: str) -> dict[str, Any]:
    return {"name": "site-los", "seeds": seeds, "metrics": METRICS, "window": [0, days * DAY], "traces": SITE,
            "platforms": PLATFORM, "schedulers": [EASY, {"name": "conservative"}, {"name": "los"}],
            "users": [{"model": "site-phase2", "options": {"nb_users": 100, "model": model,
                                                           "duration_s": days * DAY}}]}


def submitted_swfs(site: pd.DataFrame, root: Path) -> list[dict[str, Any]]:
    """The jobs each finished site-level E1/E2 run submitted, as SWF traces (one per scheduler and seed)."""
    from batfeed.adapters.jobs_csv import jobs_csv_to_swf

    traces = []
    for _, r in site[site["status"] == "ok"].iterrows():
        name = f"{r['scheduler']}-trace-s{int(r['seed'])}"
        out = root / "submitted" / name
        swf = out / "run.swf"
        if not swf.is_file():
            jobs_csv_to_swf(root.parent / "e12-site" / r["jobs_csv"], out, name="run")
        traces.append({"name": name, "path": str(swf)})
    return traces


def e12_open_spec(traces: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "site-e12-open", "metrics": METRICS, "traces": traces, "platforms": PLATFORM,
            "schedulers": [EASY, {"name": "fcfs"}]}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"batfeed reproduce {NAME}", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common_arguments(p, NAME)
    p.add_argument("--seeds", type=int, help="seeds per point (default 5, also with --quick)")
    p.add_argument("--days", type=int, help="days of user activity (default 182, the thesis's 6 months; --quick: 56)")
    p.add_argument("--e7-model", default="thesis-phase2",
                   help="E7's behaviour model (default thesis-phase2; 'default' or a fit-users JSON for a what-if)")
    p.add_argument("--e12-model", default="thesis-phase1", help="E1/E2's behaviour model (default thesis-phase1)")
    p.add_argument("--los-campaign", type=Path, default=REPO / "runs" / "los",
                   help="where campaigns/los.toml ran (its table is printed when there)")
    return p


def main(argv: list[str] | None = None) -> int:
    from batfeed.campaign import load_spec, run_campaign
    from batfeed.reproduce.site_users_report import plot_e7, print_e7, print_e12, print_los

    args = parser().parse_args(argv)
    quick = args.quick
    n = args.seeds if args.seeds is not None else (QUICK["seeds"] if quick else 5)
    days = args.days if args.days is not None else (QUICK["days"] if quick else 182)
    if n < 1 or days < 1:
        raise BatfeedError(f"--seeds and --days must be >= 1, got {n} and {days}")
    seeds = list(range(1, n + 1))
    alphas, users = (QUICK["alphas"], QUICK["users"]) if quick else (ALPHAS, USERS)
    out = default_out(args, NAME)
    if days != 182:             # other runs than the thesis's 6 months: their own folder
        out = out / f"days{days}"

    def campaign(spec: dict[str, Any], group: str) -> pd.DataFrame:
        return run_campaign(load_spec(spec, base=REPO), out / group, workers=args.workers, executor=args.executor,
                            scheduler_address=args.scheduler_address, dry_run=args.summary_only, log=print)

    e7 = campaign(e7_spec(seeds, days, alphas, users, args.e7_model), "e7")
    site = campaign(e12_site_spec(seeds, days, args.e12_model), "e12-site")
    traces = submitted_swfs(site, out / "e12-open")
    opened = campaign(e12_open_spec(traces), "e12-open") if traces else pd.DataFrame()
    los = pd.DataFrame() if quick else campaign(los_spec(seeds, days, args.e7_model), "los")
    text = [f"site-users: {len(seeds)} seed(s), {days} days of activity, E7 workload {args.e7_model}, "
            f"E1/E2 workload {args.e12_model}"]
    text.append(print_e7(e7, out / "e7", days))
    text.append(print_e12(site, opened))
    if not los.empty:
        text.append(print_los(los))
    traces_table = args.los_campaign / "results.csv"
    if traces_table.is_file():
        t = pd.read_csv(traces_table)
        cols = ["trace", "scheduler", "utilisation", "wait.mean", "response.mean", "slowdown.mean",
                "bounded_slowdown.mean", "wait.max"]
        text.append(f"LOS vs EASY vs conservative on the traces ({traces_table})\n\n"
                    + t[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    report = "\n\n".join(x for x in text if x)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables.md").write_text(report + "\n", encoding="utf-8")
    print("\n" + report + f"\n\n(written to {out / 'tables.md'})")
    fig = plot_e7(e7, out / "figures" / "e7.png", args.e7_model, days)
    if fig is not None:
        print(f"wrote {fig}")
    if args.summary_only:
        done = sum(int((t["status"] == "ok").sum()) for t in (e7, site, opened, los) if not t.empty)
        print(f"{done} runs finished so far")
    return 0


if __name__ == "__main__":
    sys.exit(main())
