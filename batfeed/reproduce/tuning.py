"""``batfeed reproduce tuning``: Tables 3 and 4 of Gaussier, Lelong, Reis, Trystram, *Online Tuning of
EASY-Backfilling using Queue Reordering Policies* (models.md §A), in two named configurations:

- ``paper-text``: what the paper says: backfill in the order P (Alg. 1), Θ = 40 h, equal keys by
  arrival, batfeed's weekly user resampler (104 weeks, weeks drawn with replacement; docs/resample.md);
- ``authors-workflow``: what the authors ran (models.md §A "What the authors actually ran"): a fixed
  backfill order B for every run, the largest jobs first (LQF; ``--backfill`` to change it): obps passes
  ``--backfill=sqf``, and the ocst it pins (freuk/ocst c0a0c57, ``metrics.ml`` and ``easy.ml``) reads
  ``sqf`` as the criterion q taken as a priority, the highest first, in its greedy backfill selection
  too; Θ = 200,000 s as that ocst applies it (EASY option ``ties: "obps"``: a criterion of 9999999 + wait,
  equal keys by arrival, B's ties in the reverse of the primary order; in the tuned runs, whose ocst
  commands leave B without Θ, also ``backfill_theta: false``), the public resampler: a per-user
  permutation of the log's interior calendar weeks (``permute``), and Full's and Noisy's what-ifs of
  obps's ocst (``whatif_jobs: "started"``).

Each configuration is a campaign (resumable: a second invocation reuses every finished run) in
``OUT/CONFIG``: every log cleaned with the paper's extra filter (``filter = "tune"``), R resamples
(seeds 1..R), EASY(P, Θ) for the 12 policies (without the engine: :mod:`batfeed.lean`, unless
``--engine``) and ``tuned_easy`` for random, full, noisy, bandit ×
week, day.  Printed and written to ``OUT/CONFIG/tables.md``: each cell as paper · batfeed pooled
[10 %, 90 %] · verdict (:mod:`batfeed.reproduce.tuning_tables`).

    batfeed reproduce tuning --quick                      # KTH-SP2, R = 3: a few minutes on 2 cores
    batfeed reproduce tuning --resamples 60 --workers 2   # the paper's R on the logs found (days)
    batfeed reproduce tuning --config authors-workflow --traces KTH-SP2 --fixed-only --resamples 60

Full scale: R = 60 on KTH-SP2, CTC-SP2, SDSC-SP2, SDSC-BLUE, UniLu-Gaia and CEA-Curie (the paper's
ANL-Intrepid is not in ../shared/data).  ``--resample none`` simulates each cleaned log once.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from typing import Any

from batfeed.errors import BatfeedError
from batfeed.reproduce import REPO, common_arguments, data_dir, default_out
from batfeed.reproduce.tuning_tables import POLICIES, STRATEGIES, report

NAME = "tuning"
LOGS = {   # trace -> PWA file (None: shipped with batfeed)
    "KTH-SP2": None,
    "CTC-SP2": "CTC-SP2-1996-3.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
    "UniLu-Gaia": "UniLu-Gaia-2014-1.swf.gz",
    "CEA-Curie": "CEA-Curie-2011-2.1-cln.swf.gz",
}
METRICS = ["nb_jobs", "nb_executed", "wait.mean", "bounded_slowdown.mean", "utilisation", "makespan"]


@dataclass(frozen=True)
class Config:
    theta: float
    ties: str
    backfill: str | None          # None: B = P
    resample: str                 # weekly, permute or none
    weeks: int | None             # weekly only
    whatif: str = "submitted"     # full/noisy's what-if set: tuned_easy's whatif_jobs
    tuned_backfill_theta: bool = True   # ties "obps": Θ orders B in the tuned runs too (ocst's bandit: no)
    epsilon: float = 0.1          # the bandit's probability of exploring (tuned_easy's epsilon)
    tuned_policies: tuple[str, ...] | None = None   # the strategies' candidates (None: the 12 of Table 3)

    def easy_options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"theta": self.theta, "ties": self.ties}
        if self.backfill:
            out["backfill_policy"] = self.backfill
        return out

    def describe(self) -> str:
        res = {"weekly": f"weekly resampler, {self.weeks} weeks, with replacement",
               "permute": "per-user permutation of the interior calendar weeks (the log's length)",
               "none": "each cleaned log once, no resampling"}[self.resample]
        bt = " (tuned runs: B without Θ)" if self.ties == "obps" and not self.tuned_backfill_theta else ""
        return (f"Θ = {self.theta:g} s, backfill order {self.backfill or 'P'}, ties {self.ties}{bt}, {res}, "
                f"what-ifs of the jobs {self.whatif} {'in' if self.whatif == 'submitted' else 'since'} the last "
                f"period, bandit ε = {self.epsilon:g}"
                + (f", strategies among {' '.join(self.tuned_policies)}" if self.tuned_policies else ""))


CONFIGS = {
    "paper-text": Config(theta=144000.0, ties="oldest", backfill=None, resample="weekly", weeks=104),
    "authors-workflow": Config(theta=200000.0, ties="obps", backfill="LQF", resample="permute", weeks=None,
                               whatif="started", tuned_backfill_theta=False, epsilon=0.5),
}


#: The strategies' candidates: the paper's 12, or the 9 obps passes (``--policies`` of its zymakefile's bandit runs:
#: policyfam_full = wait mwait lpf lqf expfact mexpfact lrf srf laf; ocst c0a0c57 ``metrics.ml`` orders by the largest
#: criterion, so lpf (-p) is batfeed's SPF, lqf SQF, expfact (-(wait+p)/p) SEXP, mexpfact LEXP, lrf (-q/p) LRF,
#: srf SRF, laf (-q p) SAF), in obps's order (the tie-break order).
TUNED_SETS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "obps": ("FCFS", "LCFS", "SPF", "SQF", "SEXP", "LEXP", "LRF", "SRF", "SAF"),
}


def campaign(config: Config, traces: list[tuple[str, str]], seeds: list[int], strategies: list[tuple[str, str]],
             name: str, lean: bool = True) -> dict[str, Any]:
    """The campaign of one configuration (a mapping :func:`batfeed.campaign.load_spec` checks); ``lean``: the
    fixed policies run without the engine (:mod:`batfeed.lean`, the same metrics)."""
    entries = []
    for tname, path in traces:
        entry: dict[str, Any] = {"name": tname, "path": path, "filter": "tune"}
        if config.resample == "weekly":
            entry["resample_weeks"] = config.weeks
        elif config.resample == "permute":
            entry["resample"] = "permute"
        entries.append(entry)
    from batfeed.schedulers.tuned_easy import TunedEasy  # its option defaults (numpy: imported only here)

    default_epsilon = TunedEasy.OPTIONS["epsilon"].default
    schedulers: list[dict[str, Any]] = [{"name": "easy", "options": {**config.easy_options(), "policy": POLICIES}}]
    periods = list(dict.fromkeys(p for _, p in strategies))
    exclude = []
    for group in (("random",), ("bandit",), ("full", "noisy")):   # the grid strategies x periods
        chosen = [s for s in dict.fromkeys(s for s, _ in strategies) if s in group]
        # the grid's pairs that were not asked for (--strategies full-week: no full day)
        exclude += [{"scheduler": "tuned_easy", "options.strategy": s, "options.period": p}
                    for s in chosen for p in periods if (s, p) not in strategies]
        if chosen:
            extra: dict[str, Any] = {"whatif_jobs": config.whatif} \
                if group[0] == "full" and config.whatif != "submitted" else {}
            if config.ties == "obps" and not config.tuned_backfill_theta:
                extra["backfill_theta"] = False
            if group == ("bandit",) and config.epsilon != default_epsilon:   # written only when it differs
                extra["epsilon"] = config.epsilon
            if config.tuned_policies:
                extra["policies"] = [list(config.tuned_policies)]   # one grid value: the list
            schedulers.append({"name": "tuned_easy", "options": {
                **config.easy_options(), "strategy": chosen, "period": periods, **extra}})
    return {"name": name, "seeds": seeds if config.resample != "none" else [1], "metrics": METRICS,
            "traces": entries, "schedulers": schedulers, "lean": lean, **({"exclude": exclude} if exclude else {})}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="batfeed reproduce tuning", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common_arguments(p, NAME)
    p.add_argument("--config", choices=[*CONFIGS, "both"], default="both", help="which configuration (default both)")
    p.add_argument("--traces", nargs="+", choices=list(LOGS), metavar="TRACE",
                   help=f"traces (default: those found; --quick: KTH-SP2): {', '.join(LOGS)}")
    p.add_argument("--resamples", type=int, metavar="R", help="R resamples, seeds 1..R (default 60; --quick 3)")
    p.add_argument("--weeks", type=int, metavar="W", help="paper-text: resample length (default 104; --quick 26)")
    p.add_argument("--backfill", metavar="POLICY", help="authors-workflow: the fixed backfill order (default LQF: "
                                                        "obps's 'sqf' as its pinned ocst reads it; the 2018 "
                                                        "workflow passed 'spf')")
    p.add_argument("--whatif", choices=["submitted", "started"],
                   help="full/noisy's what-if set (tuned_easy's whatif_jobs): submitted (the paper's text; "
                        "paper-text's default) or started (the authors' code; authors-workflow's default)")
    p.add_argument("--ties", choices=["oldest", "newest", "obps"],
                   help="override the configuration's order of equal keys (EASY's ties: oldest, paper-text's; newest, "
                        "the later ocst; obps, the ocst obps pins: Θ as a criterion, B's ties reversed)")
    p.add_argument("--resample", choices=["weekly", "permute", "none"], help="override the configuration's resampler")
    p.add_argument("--epsilon", type=float, metavar="E",
                   help="override the bandit's probability of exploring (paper-text 0.1, the paper's; "
                        "authors-workflow 0.5: obps runs ocs bandit-onpolicy with --hyperparameter=0.5, the "
                        "probability of exploiting in ocst's MakeBanditSelector)")
    p.add_argument("--tuned-policies", choices=list(TUNED_SETS),
                   help="the strategies' candidate policies: all (the 12 of Table 3, the paper's text) or obps (the 9 "
                        "of obps's policyfam_full, 'wait mwait lpf lqf expfact mexpfact lrf srf laf' as the pinned "
                        "ocst orders them: no LPF, LQF, LAF)")
    p.add_argument("--fixed-only", action="store_true", help="only the 12 fixed policies (Table 3)")
    p.add_argument("--strategies", nargs="+", metavar="S-P", choices=[f"{s}-{p}" for s, p in STRATEGIES],
                   help="only these of Table 4's strategies, as strategy-period (default all 8: "
                        + ", ".join(f"{s}-{p}" for s, p in STRATEGIES) + "); runs done before are reused")
    p.add_argument("--engine", action="store_true", help="run the fixed policies on the engine too (default: "
                                                         "lean, without it: batfeed/lean.py, the same metrics)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    quick = args.quick
    r = args.resamples if args.resamples is not None else (3 if quick else 60)
    if r < 1:
        raise BatfeedError(f"--resamples must be >= 1, got {r}")
    if args.epsilon is not None and not 0 <= args.epsilon <= 1:
        raise BatfeedError(f"--epsilon must be in [0, 1], got {args.epsilon:g}")
    if args.weeks is not None and args.weeks < 1:
        raise BatfeedError(f"--weeks must be >= 1, got {args.weeks}")
    wanted = args.traces or (["KTH-SP2"] if quick else list(LOGS))
    traces = []
    for t in wanted:
        f = LOGS[t]
        if f is None:
            traces.append((t, "KTH-SP2"))
            continue
        d = data_dir(args, [f], optional=args.traces is None)
        if d is None:
            print(f"batfeed reproduce tuning: note: {t} skipped: {f} not found (--data DIR)", file=sys.stderr)
            continue
        traces.append((t, str(d / f)))
    if args.fixed_only and args.strategies:
        raise BatfeedError("--fixed-only and --strategies exclude each other")
    strategies = [] if args.fixed_only else \
        [sp for sp in STRATEGIES if f"{sp[0]}-{sp[1]}" in args.strategies] if args.strategies else STRATEGIES
    out = default_out(args, NAME)
    from batfeed.campaign import load_spec, run_campaign

    for key in (CONFIGS if args.config == "both" else [args.config]):
        c = CONFIGS[key]
        if key == "authors-workflow" and args.backfill:
            c = replace(c, backfill=args.backfill.upper())
        if args.resample:
            c = replace(c, resample=args.resample, weeks=c.weeks or 104)
        if args.whatif:
            c = replace(c, whatif=args.whatif)
        if args.ties:
            c = replace(c, ties=args.ties)
        if args.epsilon is not None:
            c = replace(c, epsilon=args.epsilon)
        if args.tuned_policies:
            c = replace(c, tuned_policies=TUNED_SETS[args.tuned_policies])
        if c.resample == "weekly" and (args.weeks is not None or quick):
            c = replace(c, weeks=args.weeks if args.weeks is not None else 26)
        spec = campaign(c, traces, list(range(1, r + 1)), strategies, f"tuning-{key}", lean=not args.engine)
        table = run_campaign(load_spec(spec, base=REPO), out / key, workers=args.workers, executor=args.executor,
                             scheduler_address=args.scheduler_address, dry_run=args.summary_only, log=print)
        text = report(table, [t for t, _ in traces], f"{key}: {c.describe()}, R = {r}")
        (out / key).mkdir(parents=True, exist_ok=True)
        (out / key / "tables.md").write_text(text + "\n", encoding="utf-8")
        print("\n" + text + f"\n\n(written to {out / key / 'tables.md'})")
        if args.summary_only:
            print(f"{int((table['status'] == 'ok').sum())} of {len(table)} runs finished so far")
    return 0


if __name__ == "__main__":
    sys.exit(main())
