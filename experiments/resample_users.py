"""User-based workload resampling: the reproduction of Zakay & Feitelson, *Workload resampling for
performance evaluation of parallel job schedulers* (models.md §E [RES]; issue 16 item 6).

    .venv/bin/python experiments/resample_users.py --workers 2     # everything: ~1 h on 2 cores
    .venv/bin/python experiments/resample_users.py --summary-only  # print and plot from what is done

1. **Table V** (user classes) on KTH-SP2, SDSC-BLUE, HPC2N and CEA-Curie, beside the paper: on every SWF
   record, on the valid records (run time > 0 and processors > 0), on the converted workload that the
   simulations use, and with the looser "touch" edge rule (classify.py) on the valid records.
2. **Locality and Hurst** (stack depths of run time, max run time and CPUs; Hurst R/S): the original
   vs ``--validation-resamples`` (8) resamples as long as the log, mean ± sd, beside the paper; and the
   per-user marginals and the weekly arrival profile (users/resample_validation.py) when present.
   Cached in OUT/validation.json.
3. **Bootstrap**: 100 KTH-SP2 resamples (f = 1, 48 weeks) under EASY: throughput, utilisation, mean wait
   and bounded slowdown around the original's value (campaigns/resample_users.toml).
4. **Load sweep** f = 0.8 .. 1.5 on KTH-SP2 and SDSC-BLUE, 10 resamples each, rigid and with feedback
   (a60): mean wait and utilisation vs f, saturated runs (Zakay & Feitelson's check) counted and drawn
   hollow.

Figures go to ``--figures`` (default OUT/figures): bootstrap.png, load_sweep.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "campaigns" / "resample_users.toml"
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
BOOT = [("throughput_per_hour", "throughput (jobs/h)"), ("utilisation", "utilisation"),
        ("wait.mean", "mean wait (s)"), ("bounded_slowdown.mean", "mean bounded slowdown")]
LOADS = [0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5]


def shared() -> Path:
    return Path(os.environ.setdefault("BATFEED_SHARED", str(REPO.parent / "shared")))


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


def table_v(converted: dict[str, Path]) -> pd.DataFrame:
    """Table V rows: the paper's, then ours on four inputs (module docstring, item 1)."""
    from batfeed.adapters.workload import load_workload_json

    rows = []
    for name, file in SWF.items():
        path = shared() / "data" / "swf" / file
        if not path.is_file():
            continue
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


def convert(out: Path) -> dict[str, Path]:
    """Each log of :data:`SWF` converted as the campaign converts it (cached in OUT/converted)."""
    from batfeed.adapters.swf import convert_swf

    done = {}
    for name, file in SWF.items():
        src = shared() / "data" / "swf" / file
        dest = out / "converted" / (file.removesuffix(".swf.gz") + ".json")
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


def print_validation(done: dict[str, Any]) -> None:
    from batfeed.users.resample_metrics import COLUMNS

    print("\nLocality (mean stack depth) and Hurst exponent: original / resampled mean ± sd "
          "(ours, then the paper's)")
    print(f"{'log':10} {'metric':17} {'ours':>26}   {'paper':>24}")
    for name, entry in done.items():
        res = pd.DataFrame(entry["resampled"])
        for k, col in enumerate(COLUMNS):
            o, m, s = entry["original"][col], res[col].mean(), res[col].std(ddof=1)
            po, pm, ps = PAPER_LOC[name][k]
            print(f"{name:10} {col:17} {o:8.3f} / {m:7.3f} ± {s:5.3f}   {po:7.3f} / {pm:7.3f} ± {ps:5.3f}")
        print(f"{'':10} ({entry['resamples']} resamples of {entry['weeks']} weeks)")
    for name, entry in done.items():
        if "marginals" in entry:
            from batfeed.users.resample_validation import format_marginals

            print(f"\nPer-user marginals and weekly profile, {name}: original vs {entry['resamples']} resamples")
            print(format_marginals(pd.DataFrame(entry["marginals"]).set_index("marginal")))


def run_campaign(out: Path, workers: int | None) -> pd.DataFrame:
    from batfeed.campaign import run_campaign as run

    shared()
    return run(CAMPAIGN, out, workers=workers, progress=sys.stderr.isatty())


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


def plots(df: pd.DataFrame, boot: pd.DataFrame, figures: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures.mkdir(parents=True, exist_ok=True)
    ok = df[df["status"] == "ok"]
    res = ok[(ok["trace"] == "KTH-SP2 f1") & (ok["users"] == "rigid")]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
    for ax, (col, label) in zip(axes, BOOT, strict=True):
        ax.hist(res[col].astype(float), bins=20, color="#7a9cc6", edgecolor="white")
        ax.axvline(boot.at[label, "original"], color="#c0392b", lw=2, label="original log")
        ax.set_xlabel(label)
        ax.set_ylabel("resamples")
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"KTH-SP2 under EASY: {len(res)} user-based resamples (f = 1, 48 weeks) vs the original log")
    fig.tight_layout()
    paths = [figures / "bootstrap.png"]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)

    sw = ok[ok["trace"].str.contains(" f") & (ok["seed"] <= 10)].copy()
    sw["log"] = sw["trace"].str.split(" f").str[0]
    sw["f"] = sw["trace"].str.split(" f").str[1].astype(float)
    logs = [name for name in ("KTH-SP2", "SDSC-BLUE") if (sw["log"] == name).any()]
    fig, axes = plt.subplots(len(logs), 2, figsize=(11, 3.8 * len(logs)), squeeze=False)
    styles = {"rigid": ("#2c7fb8", "o", "rigid (resampled times)"), "a60": ("#d95f0e", "s", "feedback (a60 sessions)")}
    for r, name in enumerate(logs):
        panels = (("wait.mean", "mean wait (h)", 3600), ("utilisation", "utilisation", 1))
        for c, (col, label, scale) in enumerate(panels):
            ax = axes[r][c]
            for users, (color, marker, text) in styles.items():
                d = sw[(sw["log"] == name) & (sw["users"] == users)]
                if d.empty:
                    continue
                sat = d["saturation.saturated"].astype(bool)
                jitter = 0.012 if users == "a60" else -0.012
                ax.scatter(d.loc[~sat, "f"] + jitter, d.loc[~sat, col] / scale, color=color, marker=marker, s=14,
                           alpha=0.6)
                ax.scatter(d.loc[sat, "f"] + jitter, d.loc[sat, col] / scale, facecolors="none", edgecolors=color,
                           marker=marker, s=30)
                mean = d.groupby("f")[col].mean() / scale
                ax.plot(mean.index, mean.to_numpy(), color=color, label=text)
            ax.set_xlabel("load factor f")
            ax.set_ylabel(label)
            ax.set_title(name)
            ax.grid(alpha=0.3)
        axes[r][0].legend(fontsize=8, title="hollow: saturated run", title_fontsize=8)
    fig.suptitle("EASY on user-based resamples: 10 per load, rigid replay vs replay with feedback")
    fig.tight_layout()
    paths.append(figures / "load_sweep.png")
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=REPO / "runs" / "resample_users", help="campaign directory")
    p.add_argument("--figures", type=Path, help="where to write the PNGs (default OUT/figures)")
    p.add_argument("--workers", type=int, help="parallel runs (default: the number of CPUs)")
    p.add_argument("--validation-resamples", type=int, default=8, help="resamples per log for item 2 (paper: 8)")
    p.add_argument("--summary-only", action="store_true", help="run nothing: print from the finished runs")
    p.add_argument("--skip", nargs="*", default=[], choices=["table-v", "validation", "campaign"])
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 160)
    converted = convert(args.out)
    if "table-v" not in args.skip:
        tv = table_v(converted)
        print("Table V: long-term (LT) and temporary (TMP) users / jobs")
        print(tv.to_string(index=False, formatters={"LT share": "{:.1%}".format}))
        tv.to_csv(args.out / "table_v.csv", index=False)
    if "validation" not in args.skip:
        cache = args.out / "validation.json"
        done = json.loads(cache.read_text()) if args.summary_only and cache.is_file() else (
            {} if args.summary_only else validation(converted, args.out, args.validation_resamples))
        if done:
            print_validation(done)
    if "campaign" in args.skip:
        return 0
    if args.summary_only:
        results = args.out / "results.csv"
        if not results.is_file():
            print(f"no {results}: run without --summary-only first", file=sys.stderr)
            return 1
        df = pd.read_csv(results)
    else:
        df = run_campaign(args.out, args.workers)
    boot = bootstrap(df)
    print("\nBootstrap: KTH-SP2 under EASY, original log vs user-based resamples (f = 1, 48 weeks)")
    print(boot.to_string(float_format=lambda x: f"{x:.4g}"))
    sw = sweep(df)
    print("\nLoad sweep (EASY; 10 resamples per load; saturated = Zakay & Feitelson's check)")
    print(sw.to_string(float_format=lambda x: f"{x:.3g}"))
    for path in plots(df, boot, args.figures or args.out / "figures"):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
