"""User-based workload resampling: the reproduction of Zakay & Feitelson, *Workload resampling for
performance evaluation of parallel job schedulers* (models.md §E [RES]; issue 16 item 6):
``batfeed reproduce resampling``.

    batfeed reproduce resampling --workers 2          # everything: ~1 h on 2 cores (logs from --data)
    batfeed reproduce resampling --quick --workers 2  # KTH-SP2 only, a few minutes, no --data
    batfeed reproduce resampling --summary-only       # print and plot from what is done

1. **Table V** (user classes) on KTH-SP2, SDSC-BLUE, HPC2N and CEA-Curie, beside the paper: on every SWF
   record, on the valid records (run time > 0 and processors > 0), on the converted workload that the
   simulations use, and with the looser "touch" edge rule (classify.py) on the valid records.  Cells:
   batfeed's value is the valid records' (the paper counted valid jobs, docs/resample.md), its band the
   range over the readings; "close" within 5 %.
2. **Locality and Hurst** (stack depths of run time, max run time and CPUs; Hurst R/S): the original
   vs ``--validation-resamples`` (8) resamples as long as the log, mean ± sd, beside the paper (cells:
   the resampled band = mean ± 2 sd); and the per-user marginals and the weekly arrival profile
   (users/resample_validation.py).  Cached in OUT/validation.json.
3. **Bootstrap**: 100 KTH-SP2 resamples (f = 1, 48 weeks) under EASY: throughput, utilisation, mean wait
   and bounded slowdown around the original's value (campaigns/resample_users.toml).
4. **Load sweep** f = 0.8 .. 1.5 on KTH-SP2 and SDSC-BLUE, 10 resamples each, rigid and with feedback
   (a60): mean wait and utilisation vs f, saturated runs (Zakay & Feitelson's check) counted and drawn
   hollow.

``--quick``: KTH-SP2 alone (shipped with batfeed), 3 validation resamples, a bootstrap of 10
resamples and a load sweep f = 0.8, 1, 1.2 of 3 resamples each (rigid and a60), in
``runs/reproduce/resampling-quick``.  The full version reads SDSC-BLUE-2000-4.2-cln, HPC2N-2002-2.1-cln
and CEA-Curie-2011-2.1-cln from ``--data``.  Documented differences (docs/resample.md): the
temporary pool (models.md's edge rule discards fewer users), CEA-Curie's long-term class (the paper
may have filtered it differently), the log versions (KTH-SP2 2.1-cln lacks 14 jobs).

Figures go to ``--figures`` (default OUT/figures): bootstrap.png, load_sweep.png.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from batfeed.reproduce import REPO, common_arguments, data_dir, default_out
from batfeed.reproduce.cells import Cell, markdown
from batfeed.reproduce.resampling_plots import BOOT, plots

NAME = "resampling"
CAMPAIGN = REPO / "campaigns" / "resample_users.toml"
# --quick: logs, validation resamples, bootstrap resamples, sweep loads and resamples per load
QUICK = {"logs": ["KTH-SP2"], "validation": 3, "boot": 10, "loads": [0.8, 1.0, 1.2], "sweep": 3}
SWF = {"KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
       "HPC2N": "HPC2N-2002-2.1-cln.swf.gz", "CEA-Curie": "CEA-Curie-2011-2.1-cln.swf.gz"}
PAPER_INPUT = {"KTH-SP2": "KTH-SP2-1996-2 (uncleaned)", "SDSC-BLUE": "SDSC-BLUE-2000-3.1-cln",
               "HPC2N": "HPC2N-2002-1.1-cln", "CEA-Curie": "CEA-Curie-2011-2.1-cln"}
# models.md §E Table V: (long-term users, jobs), (temporary users, jobs)
PAPER_V = {"KTH-SP2": ((102, 25202), (66, 2349)), "SDSC-BLUE": ((426, 221745), (31, 1435)),
           "HPC2N": ((178, 194429), (66, 7949)), "CEA-Curie": ((269, 244733), (223, 38814))}
# models.md §E locality/Hurst table: metric -> (original, resampled mean, sd)
PAPER_LOC = {
    "KTH-SP2": [(35.25, 35.03, 0.37), (6.46, 6.42, 0.10), (3.83, 3.87, 0.10), (0.666, 0.648, 0.040)],
    "SDSC-BLUE": [(25.11, 25.97, 0.28), (3.12, 3.46, 0.02), (1.58, 1.57, 0.01), (0.778, 0.704, 0.041)],
    "HPC2N": [(18.67, 19.44, 0.19), (2.36, 2.37, 0.02), (0.98, 0.95, 0.01), (0.769, 0.722, 0.033)],
    "CEA-Curie": [(28.0, 28.06, 0.59), (2.42, 2.39, 0.08), (4.93, 5.02, 0.26), (0.710, 0.630, 0.090)],
}
REASON_TMP = "models.md's edge rule discards fewer temporary users (docs/resample.md)"
REASON_CEA = "the paper may have filtered CEA-Curie differently (docs/resample.md)"


def logs(args: argparse.Namespace) -> dict[str, Path]:
    """name -> SWF file of the logs this invocation reads (KTH-SP2 ships with batfeed)."""
    names = QUICK["logs"] if args.quick else list(SWF)
    need = [SWF[n] for n in names if n != "KTH-SP2"]
    data = data_dir(args, need) if need else None
    return {n: (REPO / "data" / "swf" / SWF[n] if n == "KTH-SP2" else data / SWF[n]) for n in names}


def _swf_jobs(path: Path) -> pd.DataFrame:
    from batfeed.adapters.swf import read_swf

    _, records = read_swf(path)
    return pd.DataFrame([(r.job_id, r.submit, r.user, r.run, r.alloc_procs) for r in records],
                        columns=["id", "subtime", "user", "run", "procs"])


def _counts(jobs: pd.DataFrame | list[dict[str, Any]], **kw: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    from batfeed.users.classify import classify_users

    if isinstance(jobs, pd.DataFrame):
        jobs = jobs[["id", "subtime", "user"]].to_dict("records")
    c = classify_users({"jobs": jobs, "profiles": {}}, **kw).counts()
    return tuple((int(c.at[k, "users"]), int(c.at[k, "jobs"])) for k in ("long_term", "temporary"))  # type: ignore


def table_v(converted: dict[str, Path], paths: dict[str, Path]) -> pd.DataFrame:
    """Table V rows: the paper's, then ours on four inputs (module docstring, item 1)."""
    from batfeed.adapters.workload import load_workload_json

    rows = []
    for name, path in paths.items():
        raw = _swf_jobs(path)
        valid = raw[(raw["run"] > 0) & (raw["procs"] > 0)]
        variants = [(f"paper ({PAPER_INPUT[name]})", PAPER_V[name]),
                    (f"every record ({len(raw):,})", _counts(raw)),
                    (f"run > 0, procs > 0 ({len(valid):,})", _counts(valid)),
                    ("  same, 'touch' edge rule", _counts(valid, edge_rule="touch"))]
        if name in converted:
            jobs = load_workload_json(converted[name])["jobs"]
            variants.append((f"converted workload ({len(jobs):,})", _counts(jobs)))
        for label, ((lu, lj), (tu, tj)) in variants:
            rows.append({"log": name, "input": label, "LT users": lu, "LT jobs": lj, "TMP users": tu, "TMP jobs": tj,
                         "LT share": lj / (lj + tj)})
    return pd.DataFrame(rows)


def convert(out: Path, paths: dict[str, Path]) -> dict[str, Path]:
    """Each log converted as the campaign converts it (cached in OUT/converted)."""
    from batfeed.adapters.swf import convert_swf

    done = {}
    for name, src in paths.items():
        dest = out / "converted" / (src.name.removesuffix(".swf.gz") + ".json")
        if not dest.is_file() and src.is_file():
            convert_swf(src, dest.parent)
        if dest.is_file():
            done[name] = dest
    return done


def validation(converted: dict[str, Path], out: Path, resamples: int) -> dict[str, Any]:
    """Locality/Hurst (and marginals when available) of each log vs ``resamples`` resamples as long as
    the log, cached in OUT/validation.json (recomputed when the number of resamples changes)."""
    from batfeed.users.resample_metrics import validation_metrics
    from batfeed.users.zf_resample import build_pools, resample_users

    cache = out / "validation.json"
    done: dict[str, Any] = json.loads(cache.read_text()) if cache.is_file() else {}
    from batfeed.users.resample_validation import compare_marginals

    for name, path in converted.items():
        if done.get(name, {}).get("resamples") == resamples:
            continue
        pools = build_pools(path)
        print(f"  {name}: {resamples} resamples of {pools.log_weeks} weeks ...", flush=True)
        samples = [resample_users(pools, pools.log_weeks, seed) for seed in range(1, resamples + 1)]
        entry: dict[str, Any] = {"resamples": resamples, "weeks": pools.log_weeks,
                                 "original": validation_metrics(pools.data),
                                 "resampled": [validation_metrics(s) for s in samples]}
        entry["marginals"] = compare_marginals(pools.data, samples).reset_index().to_dict("records")
        done[name] = entry
        cache.write_text(json.dumps(done, indent=1, default=float))
    return done


def table_v_cells(tv: pd.DataFrame) -> list[tuple[str, list[Cell]]]:
    """Table V cell by cell: the valid records' counts, band = the range over our readings."""
    rows = []
    for name, g in tv.groupby("log", sort=False):
        paper, ours = g.iloc[0], g.iloc[1:]
        valid = ours[ours["input"].str.startswith("run > 0")].iloc[0]
        cells = []
        for col in ("LT users", "LT jobs", "TMP users", "TMP jobs"):
            why = REASON_TMP if col.startswith("TMP") else REASON_CEA if name == "CEA-Curie" else None
            cells.append(Cell(float(paper[col]), float(valid[col]), float(ours[col].min()), float(ours[col].max()),
                              reason=why, signed=False, rel=0.05))
        rows.append((f"{name} | {PAPER_INPUT[name]}", cells))
    return rows


def print_validation(done: dict[str, Any]) -> None:
    from batfeed.users.resample_metrics import COLUMNS

    print("\nLocality (mean stack depth) and Hurst exponent, original and resampled (band: mean ± 2 sd over the "
          "resamples): paper · batfeed · verdict\n")
    rows = []
    for name, entry in done.items():
        if name not in PAPER_LOC:
            continue
        res = pd.DataFrame(entry["resampled"])
        for which in ("original", f"{entry['resamples']} resamples of {entry['weeks']} wk"):
            cells = []
            for k, col in enumerate(COLUMNS):
                po, pm, _ = PAPER_LOC[name][k]
                tol = dict(tol=0.05, digits=3) if col == "hurst" else dict(rel=0.05, digits=2)
                if which == "original":
                    cells.append(Cell(po, float(entry["original"][col]), signed=False, **tol))
                else:
                    m, sd = float(res[col].mean()), float(res[col].std(ddof=1))
                    cells.append(Cell(pm, m, m - 2 * sd, m + 2 * sd, signed=False, **tol))
            rows.append((f"{name} | {which}", cells))
    print(markdown(["log", "sample", *COLUMNS], rows))
    for name, entry in done.items():
        if "marginals" in entry:
            from batfeed.users.resample_validation import format_marginals

            print(f"\nPer-user marginals and weekly profile, {name}: original vs {entry['resamples']} resamples")
            print(format_marginals(pd.DataFrame(entry["marginals"]).set_index("marginal")))


def spec(args: argparse.Namespace, paths: dict[str, Path]) -> dict[str, Any]:
    """The campaign file with the logs of ``paths`` (--quick: fewer traces, seeds and loads)."""
    import tomllib

    data = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))
    for t in data["traces"]:
        log = t["name"].split(" f")[0]
        if log != "KTH-SP2" and log in paths:
            t["path"] = str(paths[log])
    if not args.quick:
        return data
    keep = [t for t in data["traces"] if t["name"].split(" f")[0] in paths
            and ("resample_load" not in t or float(t["resample_load"]) in QUICK["loads"])]
    boot, n = QUICK["boot"], QUICK["sweep"]
    sweep = [t["name"] for t in keep if "resample_load" in t and t["name"] != "KTH-SP2 f1"]
    originals = [t["name"] for t in keep if "resample_load" not in t]
    rest = list(range(n + 1, boot + 1))
    data.update(traces=keep, seeds=list(range(1, boot + 1)),
                exclude=[{"trace": sweep, "seed": rest}, {"users": "a60", "seed": rest},
                         {"trace": originals, "seed": list(range(2, boot + 1))}])
    return data


def run_campaign(args: argparse.Namespace, out: Path, paths: dict[str, Path]) -> pd.DataFrame:
    from batfeed.campaign import load_spec
    from batfeed.campaign import run_campaign as run

    camp = load_spec(spec(args, paths), base=CAMPAIGN.parent)
    return run(camp, out, workers=args.workers, executor=args.executor, scheduler_address=args.scheduler_address,
               dry_run=args.summary_only, progress=sys.stderr.isatty())


def bootstrap(df: pd.DataFrame) -> pd.DataFrame:
    """Original KTH-SP2 vs its 100 resamples (rigid replay): one row per metric."""
    ok = df[df["status"] == "ok"]
    orig = ok[(ok["trace"] == "KTH-SP2") & (ok["users"] == "rigid")]
    res = ok[(ok["trace"] == "KTH-SP2 f1") & (ok["users"] == "rigid")]
    rows = []
    for col, label in BOOT:
        o, v = float(orig[col].iloc[0]), res[col].astype(float).to_numpy()
        rows.append({"metric": label, "original": o, "median": np.median(v), "p5": np.percentile(v, 5),
                     "p95": np.percentile(v, 95), "below original": float(np.mean(v < o)),
                     "median vs original": np.median(v) / o - 1, "n": len(v)})
    return pd.DataFrame(rows).set_index("metric")


def sweep(df: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd of wait and utilisation per (log, f, replay), with the saturated runs counted."""
    ok = df[(df["status"] == "ok") & df["trace"].str.contains(" f")].copy()
    ok["log"] = ok["trace"].str.split(" f").str[0]
    ok["f"] = ok["trace"].str.split(" f").str[1].astype(float)
    ok = ok[ok["seed"] <= 10]
    ok["saturated"] = ok["saturation.saturated"].astype(bool)
    g = ok.groupby(["log", "users", "f"])
    return pd.DataFrame({"runs": g.size(), "saturated": g["saturated"].sum(),
                         "wait mean (h)": g["wait.mean"].mean() / 3600, "wait sd (h)": g["wait.mean"].std() / 3600,
                         "utilisation": g["utilisation"].mean(), "util sd": g["utilisation"].std(),
                         "jobs": g["nb_jobs"].mean()})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"batfeed reproduce {NAME}", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common_arguments(p, NAME)
    p.add_argument("--figures", type=Path, help="where to write the PNGs (default OUT/figures)")
    p.add_argument("--validation-resamples", type=int, help="resamples per log for item 2 (paper: 8; --quick: 3)")
    p.add_argument("--skip", nargs="*", default=[], choices=["table-v", "validation", "campaign"])
    args = p.parse_args(argv)
    out = default_out(args, NAME)
    paths = logs(args)
    nval = args.validation_resamples or (QUICK["validation"] if args.quick else 8)
    out.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 160)
    converted = convert(out, paths)
    if "table-v" not in args.skip:
        tv = table_v(converted, paths)
        print("Table V: long-term (LT) and temporary (TMP) users / jobs, our readings")
        print(tv.to_string(index=False, formatters={"LT share": "{:.1%}".format}))
        tv.to_csv(out / "table_v.csv", index=False)
        print("\nTable V: paper · batfeed (valid records) [range over our readings] · verdict\n")
        print(markdown(["log", "paper's input", "LT users", "LT jobs", "TMP users", "TMP jobs"], table_v_cells(tv)))
    if "validation" not in args.skip:
        cache = out / "validation.json"
        done = json.loads(cache.read_text()) if args.summary_only and cache.is_file() else (
            {} if args.summary_only else validation(converted, out, nval))
        if done:
            print_validation(done)
    if "campaign" in args.skip:
        return 0
    df = run_campaign(args, out, paths)
    if not (df["status"] == "ok").any():
        print(f"no finished run in {out}: run without --summary-only first", file=sys.stderr)
        return 1
    boot = bootstrap(df)
    print("\nBootstrap: KTH-SP2 under EASY, original log vs user-based resamples (f = 1, 48 weeks)")
    print(boot.to_string(float_format=lambda x: f"{x:.4g}"))
    sw = sweep(df)
    print("\nLoad sweep (EASY; up to 10 resamples per load; saturated = Zakay & Feitelson's check)")
    print(sw.to_string(float_format=lambda x: f"{x:.3g}"))
    for path in plots(df, boot, args.figures or out / "figures"):
        print(f"wrote {path}")
    return 0
