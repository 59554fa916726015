"""Fixed queue policies vs EASY-FCFS: Table 3 of Gaussier, Lelong, Reis, Trystram, *Online Tuning
of EASY-Backfilling using Queue Reordering Policies* (models.md §A), as a campaign.

    .venv/bin/python experiments/tune_fixed_policies.py                    # KTH-SP2, CEA-Curie, UniLu-Gaia
    .venv/bin/python experiments/tune_fixed_policies.py --traces kth --workers 2

The runs are ``campaigns/tune_fixed_policies.toml`` (EASY(P, Θ = 40 h) for the 12 policies P, count
reservation, backfill order = P, on each SWF log cleaned with the paper's extra filter
``filter = "tune"``, ``adapters/filters.py``) with the traces, policies and Θ chosen here, run by
:func:`batfeed.campaign.run_campaign` (resumable: a second invocation reuses the finished runs; the
table is ``OUT/results.csv``).  This script only prints Impr(P) = (W(P) − W(FCFS)) / W(FCFS),
W = total waiting time = ``wait.mean`` × ``nb_executed``, next to the paper's Table 3.

Differences with the paper, on purpose or forced (see docs/schedulers.md):
the paper pools 60 two-year user-based resamples of each log, we simulate each cleaned log once;
the platform size is the log's MaxProcs header; our simulator is Batsim's semantics (a job
reaching its walltime exactly is killed at the same date).  The reproduction target is the
qualitative order (SQF/SAF/LCFS best, LAF/LQF worst), not the exact numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "campaigns" / "tune_fixed_policies.toml"
SHARED = Path(os.environ.get("BATFEED_SHARED", REPO.parent / "shared")) / "data/swf"
TRACES = {          # key -> (name in the paper, path or the name of the trace shipped with batfeed)
    "kth": ("KTH-SP2", "KTH-SP2"),
    "curie": ("CEA-Curie", str(SHARED / "CEA-Curie-2011-2.1-cln.swf.gz")),
    "gaia": ("UniLu-Gaia", str(SHARED / "UniLu-Gaia-2014-1.swf.gz")),
    "sdsc-blue": ("SDSC-BLUE", str(SHARED / "SDSC-BLUE-2000-4.2-cln.swf.gz")),
}
POLICIES = ["FCFS", "LCFS", "SPF", "LPF", "SQF", "LQF", "LEXP", "SEXP", "SRF", "LRF", "SAF", "LAF"]
# Table 3 of the paper (% change of total wait vs EASY-FCFS), columns in POLICIES[1:] order
PAPER = {
    "KTH-SP2": [-13, -16, 5, -16, 3, -8, -15, -8, -13, -12, 15],
    "SDSC-BLUE": [-26, -29, 0, -29, 17, -17, -26, -15, -15, -32, 23],
    "CEA-Curie": [-46, -23, -45, -57, -19, -51, -23, -57, -24, -40, -17],
    "UniLu-Gaia": [-58, -33, -10, -62, 16, -49, -27, -56, -16, -62, 20],
}


def spec(keys: list[str], policies: list[str], theta: float) -> dict:
    """The campaign file with these traces (missing ones skipped, with a note), policies and Θ."""
    data = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))
    template = data["traces"][0]
    traces = []
    for key in keys:
        name, path = TRACES[key]
        if path != "KTH-SP2" and not Path(path).is_file():
            print(f"skip {name}: {path} not found", file=sys.stderr)
            continue
        traces.append({**template, "name": name, "path": path})
    if not traces:
        raise SystemExit("tune_fixed_policies: no trace to run")
    data["traces"] = traces
    data["schedulers"] = [{"name": "easy", "options": {"theta": theta, "policy": policies}}]
    return data


def conversions(root: Path) -> dict[str, dict]:
    """Trace name -> its conversion report (``OUT/inputs/KEY/conversion.json``)."""
    out = {}
    for path in sorted((root / "inputs").glob("*/conversion.json")):
        info = json.loads(path.read_text(encoding="utf-8"))
        out[info["name"]] = info
    return out


def print_comparison(table, policies: list[str], theta: float, root: Path) -> dict:
    """Impr(P) per trace, ours / paper; returns it (also written to ``OUT/impr.json``)."""
    for name, info in conversions(root).items():
        if name in set(table["trace"]):
            dropped = sum((info.get("dropped") or {}).values())
            print(f"{name}: {info['kept']} jobs kept of {info['read']} ({dropped} dropped: {info.get('dropped')}), "
                  f"{info['nb_res']} processors")
    ok = table[table["status"] == "ok"]
    wait = {(t, p): w * n for t, p, w, n in zip(ok["trace"], ok["options.policy"], ok["wait.mean"],
                                                ok["nb_executed"], strict=True)}
    rows = {}
    print(f"\nchange of total wait vs EASY-FCFS (Θ = {theta:g} s), ours / paper Table 3, in %")
    print(f"{'trace':11s} " + " ".join(f"{p:>9s}" for p in policies[1:]))
    for name in dict.fromkeys(table["trace"]):
        base = wait.get((name, "FCFS"))
        if not base:
            print(f"{name:11s} no EASY-FCFS result (failed run: see {root / 'results.csv'})")
            continue
        ours = {p: 100.0 * (wait[name, p] - base) / base for p in policies[1:] if (name, p) in wait}
        paper = dict(zip(POLICIES[1:], PAPER.get(name, []), strict=False))
        rows[name] = {"total_wait_fcfs": base, "ours": ours, "paper": paper}
        cells = [(f"{ours[p]:+4.0f}" if p in ours else "   -") + (f"/{paper[p]:+3d}" if p in paper else "/  ?")
                 for p in policies[1:]]
        print(f"{name:11s} " + " ".join(f"{c:>9s}" for c in cells))
        if ours:
            best, worst = min(ours, key=ours.__getitem__), max(ours, key=ours.__getitem__)
            print(f"{'':11s} best {best} ({ours[best]:+.1f} %), worst {worst} ({ours[worst]:+.1f} %)")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=["kth", "curie", "gaia"], choices=list(TRACES))
    ap.add_argument("--policies", nargs="+", default=POLICIES, choices=POLICIES)
    ap.add_argument("--theta", type=float, default=144000.0, help="starvation threshold in s (default 40 h)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--executor", choices=["local", "dask"], default="local")
    ap.add_argument("--scheduler-address", help="with --executor dask: tcp://HOST:8786")
    ap.add_argument("--out", default=str(REPO / "runs/tune_fixed"), help="the campaign directory")
    args = ap.parse_args(argv)
    from batfeed.campaign import load_spec, run_campaign

    policies = ["FCFS"] + [p for p in args.policies if p != "FCFS"]
    camp = load_spec(spec(args.traces, policies, args.theta), base=CAMPAIGN.parent)
    table = run_campaign(camp, args.out, workers=args.workers, executor=args.executor,
                         scheduler_address=args.scheduler_address, log=print)
    root = Path(args.out)
    rows = print_comparison(table, policies, args.theta, root)
    (root / "impr.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"\nImpr written to {root / 'impr.json'}; every run in {root / 'results.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
