"""Replay with feedback: Tables 1 and 2 of Madon, Da Costa, Pierson, *Replay with Feedback*
(FGCS 2024; models.md §D), as a campaign: ``batfeed reproduce rwf``.

    batfeed reproduce rwf --workers 2                 # KTH-SP2 and SDSC-SP2, 36 runs (the paper's grid)
    batfeed reproduce rwf --quick --workers 2         # KTH-SP2 only (shipped with batfeed), 18 runs, ~1 min
    batfeed reproduce rwf --quick --csv runs/rwf/kth.csv
    batfeed reproduce rwf --quick --head 5000 --models a60   # a quicker look (first 5000 jobs)
    batfeed reproduce rwf --kill-at-walltime --graph full    # the other choices
    batfeed reproduce rwf --trace LOG.swf                    # another SWF log (no paper column)

``--quick``: KTH-SP2 alone (shipped with batfeed: no ``--data``), all 6 scenarios × 3 replays, in
``runs/reproduce/rwf-quick``.  The full version adds SDSC-SP2 (``SDSC-SP2-1998-4.2-cln.swf.gz`` from
``--data``): the paper used the *uncleaned* SDSC-SP2-1998-4 (67,667 jobs), the Parallel Workloads
Archive's cleaned 4.2 has 59,715, so its cells compare different job sets (their ``differs:``
reason says so).

The runs are ``campaigns/replay_feedback.toml`` (with the scenarios, models, graph, walltime rule
and traces chosen here), run by :func:`batfeed.campaign.run_campaign`: resumable (a second
invocation reuses the finished runs), every run in ``OUT/results.csv`` and ``OUT/runs/KEY/``.
Printed: Table 1 and Table 2 cell by cell as *paper | batfeed | verdict* (one run per cell: no
band; Table 1 "close" within 10 %, Table 2 within 10 % or with the paper's sign), then the raw
table and the direction checks.

Scenarios (the paper's "exp"): ``baseline`` EASY on the trace's platform (KTH: 100 nodes); ``fcfs``
FCFS without backfilling; ``speed_x2`` / ``speed_div2`` node speed ×2 / ÷2 (run times ÷2 / ×2,
walltimes kept, so under ÷2 jobs reaching their walltime are killed, as in Batsim); ``nodes_x2`` /
``nodes_div2`` twice / half the nodes (jobs larger than the platform are rejected).  Replays:
``rigid`` (recorded submit times), ``a0`` (think-time-only), ``a60`` (sessions cut at 60 min), the
last two replaying the transitively reduced session graph (``--graph full`` for the full relation).

Columns: makespan (max finish − min submit, days), mean / max wait (days, executed jobs),
utilisation (busy node-seconds / (N × window), window = 6 months starting 2 weeks after the first
submission, N = the scenario's node count), mean lateness ℓ̄ (days), relative lateness RL and
additional lateness δ (s per submission, all jobs incl. rejected).  ``--csv PATH`` writes one row
per run: trace,scenario,model,mean_wait_s,max_wait_s,utilisation,mean_lateness_s,delta_s.

Walltimes: ŵ = w as in the paper, and jobs are **not** killed when they reach it (user-model
option ``kill_at_walltime: false``: Batsim gets walltime d̂ + 1 s for exactly the jobs whose scaled
run time reaches w; the scheduler sees that value).  That is what the paper's numbers show: killing
(Batsim's default, ``--kill-at-walltime``) unloads perf/2 so much that its rigid makespan is 333 d
instead of the paper's 471.85 d (mean wait 0.19 d vs 31.84 d), while without killing we get
471.69 d and 31.41 d, and FCFS rigid gives the paper's mean and max wait to the hundredth of a day.
Known difference (docs/users.md): the EASY baseline's mean lateness is 0.69 (a0) / 0.80 (a60) of
the paper's.

EASY here: batfeed's ``easy`` with policy FCFS, Θ disabled ("jobs sorted by submission time; when
the head cannot start, backfill jobs ending before the head's reservation", plus the standard
extra-nodes rule: a job that ends later may still start on the machines the head does not need).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
import tomllib
from pathlib import Path

from batfeed.reproduce import REPO, common_arguments, data_dir, default_out
from batfeed.reproduce.cells import Cell, markdown

NAME = "rwf"
CAMPAIGN = REPO / "campaigns" / "replay_feedback.toml"
DAY = 86400.0
SDSC = "SDSC-SP2-1998-4.2-cln.swf.gz"

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

# Table 1: makespan, mean wait, max wait in days, for rigid / a0 / a60
PAPER_T1 = {"KTH-SP2": {
    "baseline": ((332.91, 366.14, 366.67), (0.07, 0.06, 0.07), (4.07, 5.06, 6.11)),
    "fcfs": ((333.10, 457.89, 454.41), (4.51, 0.29, 0.47), (11.79, 4.95, 4.47)),
    "speed_x2": ((332.91, 332.57, 332.61), (0.01, 0.01, 0.01), (1.34, 1.82, 1.44)),
    "speed_div2": ((471.85, 635.97, 630.28), (31.84, 0.46, 0.62), (141.34, 10.70, 10.26)),
    "nodes_x2": ((332.91, 332.63, 332.65), (0.00, 0.00, 0.00), (0.54, 0.81, 0.56)),
    "nodes_div2": ((386.70, 472.93, 472.45), (4.15, 0.27, 0.35), (58.87, 7.43, 7.31)),
}, "SDSC-SP2": {
    "baseline": ((731.36, 808.88, 789.77), (0.19, 0.14, 0.18), (5.73, 5.90, 5.16)),
    "fcfs": ((794.26, 1200.10, 1065.66), (14.82, 0.58, 0.88), (63.96, 6.26, 5.51)),
    "speed_x2": ((731.32, 730.31, 729.82), (0.01, 0.01, 0.02), (1.84, 1.58, 1.13)),
    "speed_div2": ((1239.37, 1506.26, 1492.67), (64.62, 0.92, 1.61), (508.38, 15.54, 14.17)),
    "nodes_x2": ((731.36, 729.81, 730.02), (0.01, 0.01, 0.01), (1.28, 1.04, 1.35)),
    "nodes_div2": ((1167.94, 1452.31, 1446.13), (37.43, 0.80, 1.20), (437.28, 14.82, 15.93)),
}}
PAPER_RECORDED = {"KTH-SP2": (332.93, 0.18, 11.34), "SDSC-SP2": (736.12, 0.26, 62.48)}
# Table 2: mean lateness (days), RL, delta (s) for a0 / a60
PAPER_T2 = {"KTH-SP2": {
    "baseline": ((-3.36, -4.47), (0.99, 0.99), (-20.39, -27.12)),
    "fcfs": ((32.66, 26.31), (1.10, 1.08), (198.18, 159.64)),
    "speed_x2": ((-12.40, -13.31), (0.96, 0.96), (-75.27, -80.79)),
    "speed_div2": ((46.10, 43.54), (1.14, 1.13), (279.75, 264.24)),
    "nodes_x2": ((-8.65, -9.32), (0.97, 0.97), (-52.48, -56.57)),
    "nodes_div2": ((16.48, 14.91), (1.05, 1.04), (99.99, 90.48)),
}, "SDSC-SP2": {
    "baseline": ((2.35, 1.04), (1.00, 1.00), (6.00, 2.65)),
    "fcfs": ((76.90, 36.00), (1.11, 1.05), (196.38, 91.92)),
    "speed_x2": ((-11.04, -11.55), (0.98, 0.98), (-28.18, -29.49)),
    "speed_div2": ((106.58, 95.34), (1.15, 1.13), (272.17, 243.47)),
    "nodes_x2": ((-8.58, -9.23), (0.99, 0.99), (-21.92, -23.56)),
    "nodes_div2": ((89.82, 81.50), (1.12, 1.11), (229.37, 208.12)),
}}
CSV_COLUMNS = ["trace", "scenario", "model", "mean_wait_s", "max_wait_s", "utilisation", "mean_lateness_s", "delta_s"]
# documented differences (module docstring, docs/users.md)
REASON_SDSC = "4.2-cln, not the paper's uncleaned SDSC-SP2-1998-4"
REASON_EASY = "EASY baseline lateness 0.69 (a0) / 0.80 (a60) of the paper's (docs/users.md)"


def spec(args: argparse.Namespace) -> dict:
    """The campaign file with this invocation's traces, head, models, graph, walltime rule and scenarios."""
    data = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))
    kth = data["traces"][0]
    if args.trace is not None:
        data["traces"] = [{"name": args.trace.name.removesuffix(".gz").removesuffix(".swf"),
                           "path": str(args.trace.resolve())}]
    elif not args.quick:        # the paper's second log
        data["traces"] = [kth, {"name": "SDSC-SP2", "path": str(data_dir(args, [SDSC]) / SDSC)}]
    if args.head is not None:
        for t in data["traces"]:
            t["max_jobs"] = args.head
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
    raise SystemExit(f"rwf: no conversion of {trace} in {root / 'inputs'}")


def rows_of(table) -> list[dict]:
    """The table's runs as the rows :func:`print_tables` reads (trace, scenario, model and metrics)."""
    scenario = {(sched, plat, speed): sc for sc, (sched, plat, speed, _) in SCENARIOS.items()}
    rows = []
    for r in table.to_dict("records"):
        if r["status"] != "ok":
            if r["status"] == "failed":
                print(f"run {r['key']} failed: {r['error']}", file=sys.stderr)
            continue
        rows.append({
            "trace": r["trace"],
            "scenario": scenario[r["scheduler"], r["platform"], float(r["user_options.speed_factor"])],
            "model": r["users"], "wall_s": r["wall_s"], "jobs": r["nb_jobs"], "rejected": int(r["nb_rejected"]),
            "walltime_reached": r["nb_walltime"], "makespan_s": r["makespan"], "mean_wait_s": r["wait.mean"],
            "max_wait_s": r["wait.max"], "utilisation": r["utilisation"], "mean_lateness_s": r["lateness.mean_s"],
            "relative_lateness": r["lateness.relative"], "delta_s": r["lateness.delta_s"]})
    return rows


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def reason(trace: str, scenario: str, model: str, args: argparse.Namespace, lateness: bool = False) -> str | None:
    """The documented reason for a difference of this cell (None: none documented)."""
    if args.head is not None:
        return f"--head {args.head}: the first {args.head} jobs only"
    if args.kill_at_walltime:
        return "--kill-at-walltime: the paper's numbers show no kill"
    if trace == "SDSC-SP2":
        return REASON_SDSC
    if lateness and trace == "KTH-SP2" and scenario == "baseline":
        return REASON_EASY
    return None


def print_tables(rows: list[dict], recorded: dict, label: str, args: argparse.Namespace, out=sys.stdout) -> None:
    """Tables 1 and 2 of one trace, cell by cell (paper | batfeed | verdict), then the runs' extras."""
    by = {(r["scenario"], r["model"]): r for r in rows}
    t1, t2 = PAPER_T1.get(label), PAPER_T2.get(label)
    rec = PAPER_RECORDED.get(label, (None, None, None))
    print(f"\n{label}: {recorded['jobs']} jobs. Recorded trace: makespan {recorded['makespan_d']:.2f} d "
          f"(paper {rec[0]}), mean wait {recorded['mean_wait_d']:.2f} d (paper {rec[1]}), "
          f"max wait {recorded['max_wait_d']:.2f} d (paper {rec[2]})", file=out)
    day = dict(signed=False, rel=0.10, tol=0.005, digits=2)
    rows1, rows2 = [], []
    for sc in SCENARIOS:
        for mi, model in enumerate(MODELS):
            r = by.get((sc, model))
            if r is None:
                continue
            why = reason(label, sc, model, args)
            p1 = [t1[sc][k][mi] for k in range(3)] if t1 else [None] * 3
            got = [r["makespan_s"] / DAY, r["mean_wait_s"] / DAY, r["max_wait_s"] / DAY]
            rows1.append((f"{SCENARIOS[sc][3]} | {model}",
                          [Cell(p, v, reason=why, **day) for p, v in zip(p1, got, strict=True)]))
            if model == "rigid":
                continue
            p2 = [t2[sc][k][mi - 1] for k in range(3)] if t2 else [None] * 3
            why = reason(label, sc, model, args, lateness=True)
            rows2.append((f"{SCENARIOS[sc][3]} | {model}", [
                Cell(p2[0], r["mean_lateness_s"] / DAY, reason=why, rel=0.10, tol=0.005, digits=2),
                Cell(p2[1], r["relative_lateness"], reason=why, signed=False, tol=0.01, digits=2),
                Cell(p2[2], r["delta_s"], reason=why, rel=0.10, tol=0.005, digits=2)]))
    print(f"\nTable 1 ({label}): paper · batfeed · verdict (Madon et al.; one run per cell, close = within 10 %)\n",
          file=out)
    print(markdown(["exp", "replay", "makespan (d)", "mean wait (d)", "max wait (d)"], rows1), file=out)
    if rows2:
        print(f"\nTable 2 ({label}): lateness, paper · batfeed · verdict (close = within 10 %, or the paper's "
              "sign)\n", file=out)
        print(markdown(["exp", "replay", "mean lateness ℓ̄ (d)", "RL", "δ (s)"], rows2), file=out)
    print("\nruns: utilisation, rejected jobs, jobs reaching their walltime, wall time (s)", file=out)
    for sc in SCENARIOS:
        parts = [f"{m} {_f(by[(sc, m)]['utilisation'], '.3f')} / {by[(sc, m)]['rejected']} / "
                 f"{by[(sc, m)]['walltime_reached']} / {by[(sc, m)]['wall_s']:.1f}" for m in MODELS if (sc, m) in by]
        if parts:
            print(f"  {sc:<11} " + "   ".join(parts), file=out)
    print("paper utilisation (text): 36-37 % rigid perf×2/infra×2, 40-47 % with feedback, > 90 % perf/2 and "
          "infra/2, > 70 % originally", file=out)
    if t2:
        print_checks(by, t2, out)


def print_checks(by: dict, t2: dict, out=sys.stdout) -> None:
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
                             key=lambda s: t2[s][0][("a0", "a60").index(model)])
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
            ours, paper = r["mean_lateness_s"] / DAY, t2[sc][0][k]
            cells.append(f"{model} {ours - paper:+6.2f} d (x{ours / paper:4.2f})")
        if cells:
            print(f"  {sc:<11} " + "   ".join(cells), file=out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"batfeed reproduce {NAME}", description=__doc__.split("\n\n")[0])
    common_arguments(p, NAME)
    p.add_argument("--trace", type=Path, help="another SWF log instead of the paper's two (no paper column)")
    p.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    p.add_argument("--graph", choices=["reduced", "full"], default="reduced", help="session graph replayed")
    p.add_argument("--kill-at-walltime", action="store_true",
                   help="kill jobs that reach their walltime, as Batsim does by default (default here: no, "
                        "as the paper's numbers show; see the module docstring)")
    p.add_argument("--head", type=int, help="only the first N jobs of each trace (quick runs)")
    p.add_argument("--csv", type=Path, help="write one row per run to this CSV")
    args = p.parse_args(argv)
    from batfeed.campaign import load_spec, run_campaign

    t0 = time.perf_counter()
    out = default_out(args, NAME)
    camp = load_spec(spec(args), base=CAMPAIGN.parent)
    table = run_campaign(camp, out, workers=args.workers, executor=args.executor,
                         scheduler_address=args.scheduler_address, dry_run=args.summary_only, log=print)
    rows = rows_of(table)
    for trace in camp.traces:
        mine = [r for r in rows if r["trace"] == trace.name]
        if mine:
            print_tables(mine, recorded(out, trace.name), trace.name, args)
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with args.csv.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(CSV_COLUMNS)
            for r in rows:
                w.writerow([r["trace"], r["scenario"], r["model"], repr(r["mean_wait_s"]), repr(r["max_wait_s"]),
                            repr(r["utilisation"]), repr(r["mean_lateness_s"]), repr(r["delta_s"])])
        print(f"\nwrote {args.csv}")
    print(f"total wall time {time.perf_counter() - t0:.1f} s ({len(rows)} of {len(table)} runs, graph {args.graph}, "
          f"kill at walltime {'yes' if args.kill_at_walltime else 'no'}, workers {args.workers}); "
          f"every run in {out / 'results.csv'}")
    return 0
