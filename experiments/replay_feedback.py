"""Replay with feedback on KTH-SP2: the grid of Madon, Da Costa, Pierson, *Replay with Feedback*
(FGCS 2024; models.md §D, Tables 1 and 2), as a campaign.

    .venv/bin/python experiments/replay_feedback.py --workers 2              # 18 runs, ~1 min on 2 cores
    .venv/bin/python experiments/replay_feedback.py --workers 2 --csv runs/rwf/kth.csv
    .venv/bin/python experiments/replay_feedback.py --head 5000 --models a60   # quick look
    .venv/bin/python experiments/replay_feedback.py --kill-at-walltime --graph full  # the other choices

The runs are ``campaigns/replay_feedback.toml`` (with the scenarios, models, graph, walltime rule
and trace chosen here), run by :func:`batfeed.campaign.run_campaign`: resumable (a second
invocation reuses the finished runs), every run in ``WORK/results.csv`` and ``WORK/runs/KEY/``.
This script prints the comparison with the paper's tables.

Scenarios (the paper's "exp"): ``baseline`` EASY on the 100-node KTH platform; ``fcfs`` FCFS
without backfilling; ``speed_x2`` / ``speed_div2`` node speed ×2 / ÷2 (run times ÷2 / ×2, walltimes
kept, so under ÷2 jobs reaching their walltime are killed, as in Batsim); ``nodes_x2`` /
``nodes_div2`` 200 / 50 nodes (jobs larger than the platform are rejected).  With ``--trace``,
another SWF log: its own platform size, ×2 and ÷2.  Replays: ``rigid``
(recorded submit times), ``a0`` (think-time-only), ``a60`` (sessions cut at 60 min), the last two
replaying the transitively reduced session graph (``--graph full`` for the full relation).

Printed beside the paper's KTH columns: makespan (max finish − min submit, days), mean / max wait
(days, executed jobs), utilisation (busy node-seconds / (N × window), window = 6 months starting
2 weeks after the first submission, N = the scenario's node count), mean lateness ℓ̄ (days),
relative lateness RL and additional lateness δ (s per submission, all jobs incl. rejected).
``--csv PATH`` writes one row per run: trace,scenario,model,mean_wait_s,max_wait_s,utilisation,
mean_lateness_s,delta_s.

Walltimes: ŵ = w as in the paper, and jobs are **not** killed when they reach it (user-model
option ``kill_at_walltime: false``: Batsim gets walltime d̂ + 1 s for exactly the jobs whose scaled
run time reaches w; the scheduler sees that value).  That is what the paper's numbers show: killing
(Batsim's default, ``--kill-at-walltime``) unloads perf/2 so much that its rigid makespan is 333 d
instead of the paper's 471.85 d (mean wait 0.19 d vs 31.84 d), while without killing we get
471.69 d and 31.41 d, and FCFS rigid gives the paper's mean and max wait to the hundredth of a day.

EASY here: batfeed's ``easy`` with policy FCFS, Θ disabled ("jobs sorted by submission time; when
the head cannot start, backfill jobs ending before the head's reservation", plus the standard
extra-nodes rule: a job that ends later may still start on the machines the head does not need).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "campaigns" / "replay_feedback.toml"
DAY = 86400.0

# scenario -> (scheduler, platform of the campaign, speed factor, paper label)
SCENARIOS = {
    "baseline": ("easy", "nodes_100", 1.0, "EASY"),
    "fcfs": ("fcfs", "nodes_100", 1.0, "FCFS"),
    "speed_x2": ("easy", "nodes_100", 2.0, "perf×2"),
    "speed_div2": ("easy", "nodes_100", 0.5, "perf/2"),
    "nodes_x2": ("easy", "nodes_200", 1.0, "infra×2"),
    "nodes_div2": ("easy", "nodes_50", 1.0, "infra/2"),
}
MODELS = ("rigid", "a0", "a60")

# Table 1 (KTH): makespan, mean wait, max wait in days, for rigid / a0 / a60
PAPER_T1 = {
    "baseline": ((332.91, 366.14, 366.67), (0.07, 0.06, 0.07), (4.07, 5.06, 6.11)),
    "fcfs": ((333.10, 457.89, 454.41), (4.51, 0.29, 0.47), (11.79, 4.95, 4.47)),
    "speed_x2": ((332.91, 332.57, 332.61), (0.01, 0.01, 0.01), (1.34, 1.82, 1.44)),
    "speed_div2": ((471.85, 635.97, 630.28), (31.84, 0.46, 0.62), (141.34, 10.70, 10.26)),
    "nodes_x2": ((332.91, 332.63, 332.65), (0.00, 0.00, 0.00), (0.54, 0.81, 0.56)),
    "nodes_div2": ((386.70, 472.93, 472.45), (4.15, 0.27, 0.35), (58.87, 7.43, 7.31)),
}
PAPER_RECORDED = (332.93, 0.18, 11.34)
# Table 2 (KTH): mean lateness (days), RL, delta (s) for a0 / a60
PAPER_T2 = {
    "baseline": ((-3.36, -4.47), (0.99, 0.99), (-20.39, -27.12)),
    "fcfs": ((32.66, 26.31), (1.10, 1.08), (198.18, 159.64)),
    "speed_x2": ((-12.40, -13.31), (0.96, 0.96), (-75.27, -80.79)),
    "speed_div2": ((46.10, 43.54), (1.14, 1.13), (279.75, 264.24)),
    "nodes_x2": ((-8.65, -9.32), (0.97, 0.97), (-52.48, -56.57)),
    "nodes_div2": ((16.48, 14.91), (1.05, 1.04), (99.99, 90.48)),
}
CSV_COLUMNS = ["trace", "scenario", "model", "mean_wait_s", "max_wait_s", "utilisation", "mean_lateness_s", "delta_s"]


def spec(args: argparse.Namespace) -> dict:
    """The campaign file with this invocation's trace, head, models, graph, walltime rule and scenarios."""
    data = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))
    trace = data["traces"][0]
    if args.trace is not None:
        trace.update(name=args.trace.name.removesuffix(".gz").removesuffix(".swf"), path=str(args.trace.resolve()))
    if args.head is not None:
        trace["max_jobs"] = args.head
    data["users"] = [u for u in data["users"] if u["model"] in args.models]
    for u in data["users"]:
        u["options"]["kill_at_walltime"] = args.kill_at_walltime
        if u["model"] != "rigid":
            u["options"]["graph"] = args.graph
    data["exclude"] += [{"scheduler": sched, "platform": plat, "user_options.speed_factor": speed}
                        for sc, (sched, plat, speed, _) in SCENARIOS.items() if sc not in args.scenarios]
    return data


def recorded(root: Path, trace: str) -> dict:
    """The recorded schedule of the converted trace (SWF wait and run times): jobs, makespan, waits."""
    from batfeed.campaign.inputs import read_workload

    for path in sorted((root / "inputs").glob("*/conversion.json")):
        info = json.loads(path.read_text(encoding="utf-8"))
        if info["name"] != trace:
            continue
        wl = read_workload(path.parent / info["workload"])
        jobs = wl["jobs"]
        waits = [max(j.get("swf_wait", 0), 0) for j in jobs]
        finish = [j["subtime"] + w + wl["profiles"][j["profile"]]["delay"] for j, w in zip(jobs, waits, strict=True)]
        return {"jobs": len(jobs), "makespan_d": (max(finish) - min(j["subtime"] for j in jobs)) / DAY,
                "mean_wait_d": math.fsum(waits) / len(jobs) / DAY, "max_wait_d": max(waits) / DAY}
    raise SystemExit(f"replay_feedback: no conversion of {trace} in {root / 'inputs'}")


def rows_of(table) -> list[dict]:
    """The table's runs as the rows :func:`print_tables` reads (scenario, model and metrics)."""
    scenario = {(sched, plat, speed): sc for sc, (sched, plat, speed, _) in SCENARIOS.items()}
    rows = []
    for r in table.to_dict("records"):
        if r["status"] != "ok":
            print(f"run {r['key']} failed: {r['error']}", file=sys.stderr)
            continue
        rows.append({
            "scenario": scenario[r["scheduler"], r["platform"], float(r["user_options.speed_factor"])],
            "model": r["users"], "wall_s": r["wall_s"], "jobs": r["nb_jobs"], "rejected": int(r["nb_rejected"]),
            "walltime_reached": r["nb_walltime"], "makespan_s": r["makespan"], "mean_wait_s": r["wait.mean"],
            "max_wait_s": r["wait.max"], "utilisation": r["utilisation"], "mean_lateness_s": r["lateness.mean_s"],
            "relative_lateness": r["lateness.relative"], "delta_s": r["lateness.delta_s"]})
    return rows


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def print_tables(rows: list[dict], recorded: dict, label: str, out=sys.stdout) -> None:
    by = {(r["scenario"], r["model"]): r for r in rows}
    print(f"\n{label}: {recorded['jobs']} jobs. Recorded trace: makespan {recorded['makespan_d']:.2f} d "
          f"(paper {PAPER_RECORDED[0]}), mean wait {recorded['mean_wait_d']:.2f} d (paper {PAPER_RECORDED[1]}), "
          f"max wait {recorded['max_wait_d']:.2f} d (paper {PAPER_RECORDED[2]})", file=out)
    head = (f"{'scenario':<11} {'model':<5} | {'makespan d':>15} | {'mean wait d':>13} | {'max wait d':>15} | "
            f"{'util':>5} | {'mean late d':>15} | {'RL':>11} | {'delta s':>17} | {'rej':>4} {'wall':>5}")
    print("ours / paper (paper: Madon et al. Tables 1, 2, KTH columns)", file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for sc in SCENARIOS:
        for mi, model in enumerate(MODELS):
            r = by.get((sc, model))
            if r is None:
                continue
            t1 = PAPER_T1[sc]
            mk = f"{r['makespan_s'] / DAY:7.2f}/{t1[0][mi]:7.2f}"
            mw = f"{r['mean_wait_s'] / DAY:6.2f}/{t1[1][mi]:6.2f}"
            xw = f"{r['max_wait_s'] / DAY:7.2f}/{t1[2][mi]:7.2f}"
            if model == "rigid":
                ml, rl, dl = (f"{r['mean_lateness_s'] / DAY:7.2f}/{'-':>7}", f"{r['relative_lateness']:5.3f}/{'-':>5}",
                              f"{r['delta_s']:8.2f}/{'-':>8}")
            else:
                t2 = PAPER_T2[sc]
                k = mi - 1
                ml = f"{r['mean_lateness_s'] / DAY:7.2f}/{t2[0][k]:7.2f}"
                rl = f"{r['relative_lateness']:5.3f}/{t2[1][k]:5.2f}"
                dl = f"{r['delta_s']:8.2f}/{t2[2][k]:8.2f}"
            print(f"{sc:<11} {model:<5} | {mk:>15} | {mw:>13} | {xw:>15} | {_f(r['utilisation'], '5.3f')} | "
                  f"{ml:>15} | {rl:>11} | {dl:>17} | {r['rejected']:>4} {r['wall_s']:5.1f}", file=out)
    print("paper utilisation (text): 36-37 % rigid perf×2/infra×2, 40-47 % with feedback, > 90 % perf/2 and "
          "infra/2, > 70 % originally", file=out)
    print_checks(by, out)


def print_checks(by: dict, out=sys.stdout) -> None:
    """Direction of the lateness shifts and closeness of the magnitudes to Table 2."""
    print("\ndirection (mean lateness vs baseline; slower/fewer -> later, faster/more -> earlier):", file=out)
    expect = {"speed_div2": ">", "nodes_div2": ">", "fcfs": ">", "speed_x2": "<", "nodes_x2": "<"}
    ok_all = True
    for model in ("a0", "a60"):
        base = by.get(("baseline", model))
        if base is None:
            continue
        parts = []
        for sc, sign in expect.items():
            r = by.get((sc, model))
            if r is None:
                continue
            ok = (r["mean_lateness_s"] > base["mean_lateness_s"]) if sign == ">" else \
                 (r["mean_lateness_s"] < base["mean_lateness_s"])
            ok_all &= ok
            parts.append(f"{sc} {sign} baseline: {'ok' if ok else 'WRONG'}")
        order = sorted((s for s in SCENARIOS if (s, model) in by), key=lambda s: by[(s, model)]["mean_lateness_s"])
        paper_order = sorted((s for s in SCENARIOS if (s, model) in by),
                             key=lambda s: PAPER_T2[s][0][("a0", "a60").index(model)])
        print(f"  {model}: " + "; ".join(parts), file=out)
        print(f"  {model} earliest -> latest, ours:  {' < '.join(order)}", file=out)
        print(f"  {model} earliest -> latest, paper: {' < '.join(paper_order)}", file=out)
    print(f"  all directions as in the paper: {'yes' if ok_all else 'NO'}", file=out)
    print("\nmagnitude (mean lateness ours - paper, days; ratio ours/paper):", file=out)
    for sc in SCENARIOS:
        cells = []
        for k, model in enumerate(("a0", "a60")):
            r = by.get((sc, model))
            if r is None:
                continue
            ours, paper = r["mean_lateness_s"] / DAY, PAPER_T2[sc][0][k]
            cells.append(f"{model} {ours - paper:+6.2f} d (x{ours / paper:4.2f})")
        if cells:
            print(f"  {sc:<11} " + "   ".join(cells), file=out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", type=Path, help="SWF trace (default: KTH-SP2, shipped with batfeed)")
    p.add_argument("--work", type=Path, default=REPO / "runs" / "replay_feedback", help="the campaign directory")
    p.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    p.add_argument("--graph", choices=["reduced", "full"], default="reduced", help="session graph replayed")
    p.add_argument("--kill-at-walltime", action="store_true",
                   help="kill jobs that reach their walltime, as Batsim does by default (default here: no, "
                        "as the paper's numbers show; see the module docstring)")
    p.add_argument("--head", type=int, help="only the first N jobs of the trace (quick runs)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel simulations")
    p.add_argument("--executor", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler-address", help="with --executor dask: tcp://HOST:8786")
    p.add_argument("--csv", type=Path, help="write one row per run to this CSV")
    args = p.parse_args(argv)
    from batfeed.campaign import load_spec, run_campaign

    t0 = time.perf_counter()
    camp = load_spec(spec(args), base=CAMPAIGN.parent)
    table = run_campaign(camp, args.work, workers=args.workers, executor=args.executor,
                         scheduler_address=args.scheduler_address, log=print)
    rows = rows_of(table)
    label = camp.traces[0].name
    print_tables(rows, recorded(args.work, label), label)
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with args.csv.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(CSV_COLUMNS)
            for r in rows:
                w.writerow([label, r["scenario"], r["model"], repr(r["mean_wait_s"]), repr(r["max_wait_s"]),
                            repr(r["utilisation"]), repr(r["mean_lateness_s"]), repr(r["delta_s"])])
        print(f"\nwrote {args.csv}")
    print(f"total wall time {time.perf_counter() - t0:.1f} s ({len(rows)} runs, graph {args.graph}, "
          f"kill at walltime {'yes' if args.kill_at_walltime else 'no'}, workers {args.workers}); "
          f"every run in {args.work / 'results.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
