"""Online tuning of EASY: Tables 3 and 4 of Gaussier, Lelong, Reis, Trystram, *Online Tuning of
EASY-Backfilling using Queue Reordering Policies* (models.md §A), pooled over weekly user resamples.

    .venv/bin/python experiments/tune_online.py --workers 2            # the plan of the campaign file
    .venv/bin/python experiments/tune_online.py --traces KTH-SP2 --resamples 3 --weeks 26   # a quick look
    .venv/bin/python experiments/tune_online.py --summary-only         # print from the finished runs

The runs are ``campaigns/tune_online.toml``: each log cleaned with the paper's extra filter
(``filter = "tune"``), resampled to ``resample_weeks`` weeks once per seed (``batfeed resample
weekly``'s protocol), then simulated under EASY(P, Θ = 40 h) for the 12 fixed policies and under
``tuned_easy`` for the 8 strategies (random, full, noisy, bandit × week, day).  The campaign runner
makes them (resumable: a second invocation reuses every finished run; ``OUT/results.csv``).

Printed, beside the paper's numbers: Impr(P) = (Σ_k W(T_k, P) − Σ_k W(T_k, FCFS)) / Σ_k W(T_k, FCFS)
pooled over the resamples k, W = total wait = ``wait.mean`` × ``nb_executed``, and the 10–90 %
band of the per-resample values (W(T_k, P) − W(T_k, FCFS)) / W(T_k, FCFS); then the paper's
qualitative order checked per trace.  ``--resamples R`` replaces the file's seeds by 1..R for every
trace (the paper: R = 60); ``--weeks W`` shortens the resamples (the paper: 104).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tomllib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "campaigns" / "tune_online.toml"
POLICIES = ["FCFS", "LCFS", "SPF", "LPF", "SQF", "LQF", "LEXP", "SEXP", "SRF", "LRF", "SAF", "LAF"]
STRATEGIES = [(s, p) for s in ("random", "full", "noisy", "bandit") for p in ("week", "day")]
# models.md §A Table 3 (% vs EASY-FCFS, columns POLICIES[1:]) and Table 4 (best fixed, then STRATEGIES)
PAPER3 = {
    "KTH-SP2": [-13, -16, 5, -16, 3, -8, -15, -8, -13, -12, 15],
    "SDSC-BLUE": [-26, -29, 0, -29, 17, -17, -26, -15, -15, -32, 23],
    "CEA-Curie": [-46, -23, -45, -57, -19, -51, -23, -57, -24, -40, -17],
    "UniLu-Gaia": [-58, -33, -10, -62, 16, -49, -27, -56, -16, -62, 20],
}
PAPER4 = {   # the KTH "Full day" sign is lost in the source; the text gives 11-60 %: -11
    "KTH-SP2": [-16, -6, -8, -12, -11, -12, -12, -7, -10],
    "SDSC-BLUE": [-32, -12, -14, -31, -31, -30, -29, -12, -17],
    "CEA-Curie": [-57, -35, -42, -53, -47, -53, -48, -36, -46],
    "UniLu-Gaia": [-62, -29, -31, -59, -60, -58, -58, -33, -34],
}


def spec(args: argparse.Namespace) -> dict:
    """The campaign file with this invocation's traces, resamples, weeks and strategies."""
    os.environ.setdefault("BATFEED_SHARED", str(REPO.parent / "shared"))
    data = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))
    traces = []
    for t in data["traces"]:
        if args.traces and t["name"] not in args.traces:
            continue
        path = os.path.expandvars(t["path"])
        if t["path"] != "KTH-SP2" and not Path(path).is_file():
            print(f"skip {t['name']}: {path} not found", file=sys.stderr)
            continue
        traces.append({**t, **({"resample_weeks": args.weeks} if args.weeks else {})})
    if not traces:
        raise SystemExit("tune_online: no trace to run")
    data["traces"] = traces
    names = {t["name"] for t in traces}
    if args.resamples:
        data["seeds"] = list(range(1, args.resamples + 1))
        data["exclude"] = [e for e in data.get("exclude", []) if "seed" not in e]
    data["exclude"] = [e for e in data.get("exclude", []) if set(_list(e.get("trace", []))) & names
                       or "trace" not in e]
    for e in data["exclude"]:
        if "trace" in e:
            e["trace"] = [n for n in _list(e["trace"]) if n in names]
    if args.fixed_only:
        data["schedulers"] = [s for s in data["schedulers"] if s["name"] == "easy"]
    return data


def _list(v: object) -> list:
    return v if isinstance(v, list) else [v]


def totals(table) -> dict[tuple[str, str], dict[int, float]]:
    """(trace, column) -> seed -> total wait; column = a policy or "strategy period"."""
    ok = table[table["status"] == "ok"]
    out: dict[tuple[str, str], dict[int, float]] = {}
    for r in ok.to_dict("records"):
        if r["scheduler"] == "easy":
            col = r["options.policy"]
        else:
            col = f"{r['options.strategy']} {r['options.period']}"
        out.setdefault((r["trace"], col), {})[int(r["seed"])] = float(r["wait.mean"]) * float(r["nb_executed"])
    return out


def impr(w: dict, trace: str, col: str) -> tuple[float, float, float, int] | None:
    """(pooled Impr %, 10 %, 90 % of the per-resample Impr %, resamples) over the seeds both ran."""
    base, other = w.get((trace, "FCFS"), {}), w.get((trace, col), {})
    seeds = sorted(set(base) & set(other))
    if not seeds:
        return None
    b = np.array([base[s] for s in seeds])
    o = np.array([other[s] for s in seeds])
    per = 100.0 * (o - b) / b
    return 100.0 * (o.sum() - b.sum()) / b.sum(), float(np.percentile(per, 10)), float(np.percentile(per, 90)), \
        len(seeds)


def cell(x: tuple | None, paper: int | None) -> str:
    if x is None:
        return "-"
    band = f" [{x[1]:+.0f},{x[2]:+.0f}]" if x[3] > 1 else ""
    return f"{x[0]:+.0f}{band}" + (f" / {paper:+d}" if paper is not None else "")


def print_tables(table, traces: list[str]) -> None:
    w = totals(table)
    print("\nTable 3: Impr(P) vs EASY-FCFS (Θ = 40 h), % of total wait, pooled over the resamples "
          "[10 %, 90 % of the per-resample values] / paper\n")
    print("| trace | R | " + " | ".join(POLICIES[1:]) + " |")
    print("|---|---|" + "---|" * (len(POLICIES) - 1))
    for t in traces:
        r = len(w.get((t, "FCFS"), {}))
        paper = PAPER3.get(t, [None] * 11)
        print(f"| {t} | {r} | " + " | ".join(cell(impr(w, t, p), q) for p, q in zip(POLICIES[1:], paper,
                                                                                       strict=True)) + " |")
    print("\nTable 4: selection strategies vs EASY-FCFS, % of total wait (pooled [10 %, 90 %] / paper)\n")
    cols = [f"{s} {p}" for s, p in STRATEGIES]
    print("| trace | best fixed | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    checks = []
    for t in traces:
        fixed = {p: impr(w, t, p) for p in POLICIES[1:]}
        fixed = {p: x for p, x in fixed.items() if x is not None}
        best = min(fixed, key=lambda p: fixed[p][0]) if fixed else None
        paper = PAPER4.get(t, [None] * 9)
        got = {c: impr(w, t, c) for c in cols}
        head = f"{best} {cell(fixed[best], paper[0])}" if best else "-"
        print(f"| {t} | {head} | " + " | ".join(cell(got[c], q) for c, q in zip(cols, paper[1:], strict=True))
              + " |")
        checks.append(order_checks(t, fixed.get(best) if best else None, got))
    print("\nThe paper's qualitative order (Full ≈ Noisy ≈ best fixed > Bandit > Random > FCFS), per trace:")
    for line in checks:
        print(line)
    print_pairs(w, traces)


PAIRS = [("SPF", "LPF"), ("SQF", "LQF"), ("SEXP", "LEXP"), ("SRF", "LRF"), ("SAF", "LAF")]


def print_pairs(w: dict, traces: list[str]) -> None:
    """For each pair of opposite policies, the distance |ours − paper| summed over the pair, with the
    paper's labels as printed and exchanged: which reading of Table 3 our numbers support."""
    print("\nOpposite policies: Σ |ours − paper| over each pair, paper's labels as printed / exchanged "
          "(points of Impr)\n")
    print("| trace | " + " | ".join(f"{a}/{b}" for a, b in PAIRS) + " |")
    print("|---|" + "---|" * len(PAIRS))
    for t in traces:
        paper = dict(zip(POLICIES[1:], PAPER3.get(t, []), strict=False))
        cells = []
        for a, b in PAIRS:
            x, y = impr(w, t, a), impr(w, t, b)
            if x is None or y is None or a not in paper:
                cells.append("-")
                continue
            same = abs(x[0] - paper[a]) + abs(y[0] - paper[b])
            swapped = abs(x[0] - paper[b]) + abs(y[0] - paper[a])
            cells.append(f"{same:.0f} / {swapped:.0f}")
        print(f"| {t} | " + " | ".join(cells) + " |")


def order_checks(trace: str, best: tuple | None, got: dict) -> str:
    """One line: which of the paper's statements hold with our numbers."""
    def v(name: str) -> float:
        x = got.get(name)
        return math.nan if x is None else x[0]

    parts = []
    for p in ("week", "day"):
        full, noisy, bandit, rnd = v(f"full {p}"), v(f"noisy {p}"), v(f"bandit {p}"), v(f"random {p}")
        if any(math.isnan(x) for x in (full, noisy, bandit, rnd)):
            parts.append(f"{p}: incomplete")
            continue
        gap = full - best[0] if best else math.nan
        parts.append(f"{p}: Full {full:+.1f} ({gap:+.1f} pts from best fixed), Noisy {noisy:+.1f} "
                     f"({'≈ Full' if abs(noisy - full) <= 3 else 'differs from Full'}), Bandit {bandit:+.1f} "
                     f"({'between Random and Full' if full <= bandit <= rnd else 'NOT between Random and Full'}), "
                     f"Random {rnd:+.1f} ({'better' if rnd < 0 else 'NOT better'} than FCFS)")
    return f"- {trace}: " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", help="trace names of the campaign file (default: all found)")
    ap.add_argument("--resamples", type=int, help="R: seeds 1..R for every trace (default: the file's plan)")
    ap.add_argument("--weeks", type=int, help="resample length in weeks (default: the file's, 104)")
    ap.add_argument("--fixed-only", action="store_true", help="only the 12 fixed policies (Table 3)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--executor", choices=["local", "dask"], default="local")
    ap.add_argument("--scheduler-address", help="with --executor dask: tcp://HOST:8786")
    ap.add_argument("--summary-only", action="store_true", help="print from the runs already finished")
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "tune_online", help="the campaign directory")
    args = ap.parse_args(argv)
    from batfeed.campaign import load_spec, run_campaign

    camp = load_spec(spec(args), base=CAMPAIGN.parent)
    table = run_campaign(camp, args.out, workers=args.workers, executor=args.executor,
                         scheduler_address=args.scheduler_address, dry_run=args.summary_only, log=print)
    print_tables(table, [t.name for t in camp.traces])
    if args.summary_only:
        done = int((table["status"] == "ok").sum())
        print(f"\n{done} of {len(table)} runs finished so far")
    return 0


if __name__ == "__main__":
    sys.exit(main())
