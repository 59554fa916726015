"""``batfeed resample weekly WORKLOAD --weeks W --seed S [--count R] -o OUT.json``: the weekly user
resampling of Gaussier, Lelong, Reis, Trystram, *Online Tuning of EASY-Backfilling*
(models.md §A "Protocol"; :mod:`batfeed.adapters.resample`, docs/resample.md).
``batfeed resample permute WORKLOAD --seed S [--count R] -o OUT.json``: the authors' public sampler (freuk/ocst
``src/sampler.ml``): per user, a permutation of the log's interior calendar weeks (models.md §A "What the authors
actually ran"; :mod:`batfeed.adapters.resample_permute`).
``batfeed resample users ... [--load F]``: Zakay & Feitelson's user-based resampling (models.md §E;
:mod:`batfeed.users.zf_resample`).
``batfeed resample validate ORIGINAL RESAMPLE ...``: per-user marginals, weekly profile, locality and Hurst
of resamples vs their original (models.md §E "Validation"; users/resample_validation.py, resample_metrics.py)."""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from batfeed.errors import BatfeedError

__all__ = ["add_resample_parser", "cmd_resample", "cmd_resample_permute", "cmd_resample_users", "cmd_resample_validate",
           "output_paths"]


def add_resample_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``resample`` and its methods to ``sub`` (an argparse sub-parsers object)."""
    s = sub.add_parser("resample", help="resample a workload into new traces (the online-tuning paper's weekly "
                                        "user resampling, its authors' week permutation, ...; docs/resample.md)",
                       description="Resample a Batsim workload; 'batfeed resample METHOD --help' for a method's "
                                   "options.")
    methods = s.add_subparsers(dest="method", metavar="METHOD", required=True, title="methods")
    text = ("for each simulated week and each user, copy the user's jobs of a uniformly drawn complete week of the "
            "log, at their offsets in the week (Gaussier et al., Online Tuning of EASY-Backfilling)")
    w = methods.add_parser("weekly", help=text, description=text)
    w.add_argument("workload", metavar="WORKLOAD", help="Batsim workload JSON (plain or .gz), e.g. from "
                                                        "'batfeed convert swf --filter tune', or an SWF trace "
                                                        "(.swf, .swf.gz, .swf.xz: converted on the fly)")
    w.add_argument("--weeks", type=int, default=104, metavar="W",
                   help="length of each resampled trace in weeks (default 104: the paper's 2 years)")
    _seeded_outputs(w)
    w.set_defaults(func=cmd_resample)
    text = ("the authors' public sampler (freuk/ocst src/sampler.ml): for each user, a random permutation of the log's "
            "interior calendar weeks, jobs at their offsets in the week; the first and last weeks are dropped, so a "
            "resample is as long as the log")
    p = methods.add_parser("permute", help=text, description=text)
    p.add_argument("workload", metavar="WORKLOAD", help="Batsim workload JSON (plain or .gz), or an SWF trace "
                                                        "(converted on the fly); weeks are counted on the SWF submit "
                                                        "times (swf_submit) when the jobs carry them, else on subtime")
    _seeded_outputs(p)
    p.set_defaults(func=cmd_resample_permute)
    text = ("Zakay & Feitelson's user-based resampling: long-term users (span > 12 weeks) with restarts and "
            "temporary users arriving weekly, whole-week shifts, load factor f (users/zf_resample.py)")
    u = methods.add_parser("users", help=text, description=text)
    u.add_argument("workload", metavar="WORKLOAD", help="Batsim workload JSON (plain or .gz) with a 'user' per job, "
                                                        "or an SWF trace (converted on the fly)")
    u.add_argument("--weeks", type=int, default=104, metavar="W", help="length of each trace in weeks (default 104)")
    u.add_argument("--load", type=float, default=1.0, metavar="F",
                   help="load factor f > 0: scales the user populations and the arrival rate (default 1)")
    u.add_argument("--rb-npw", type=float, default=0.0, metavar="X",
                   help="rare-behaviour arrivals per week (default 0): flurries found by the calibrated detector "
                        "(users/flurry.py) leave the regular pools and come back as whole units, X per week on "
                        "average, taken out of the temporary arrivals; their jobs carry resampled_rb")
    u.add_argument("--flurries", action="store_true",
                   help="split the detected flurries off even with --rb-npw 0 (removed from the pools)")
    u.add_argument("--anonymous-user", action="store_true",
                   help="resample the jobs without a 'user' together as one anonymous user, as 'resample weekly' "
                        "does (default: such a workload is refused)")
    u.add_argument("--classes", metavar="FILE.json", help="also write the user classification (counts per class)")
    _seeded_outputs(u)
    u.set_defaults(func=cmd_resample_users)
    text = ("validate resamples against their original (Zakay & Feitelson): per-user marginals and weekly arrival "
            "profile (KS / total variation), stack-depth locality and Hurst exponent (mean ± sd)")
    v = methods.add_parser("validate", help=text, description=text)
    v.add_argument("original", metavar="ORIGINAL", help="the original Batsim workload JSON (plain or .gz), or its "
                                                         "SWF log (converted on the fly)")
    v.add_argument("resamples", nargs="+", metavar="RESAMPLE", help="resampled workloads of ORIGINAL")
    v.add_argument("--session-gap-min", type=float, default=20.0, metavar="M",
                   help="a submit gap > M minutes starts a new session (default 20)")
    v.add_argument("--json", metavar="OUT.json", help="also write both tables as JSON")
    v.set_defaults(func=cmd_resample_validate)
    return s


def _seeded_outputs(p: argparse.ArgumentParser) -> None:
    """``--seed``, ``--count`` and ``-o``: what the methods share (checked by :func:`checked_outputs`)."""
    p.add_argument("--seed", type=int, required=True, metavar="S", help="seed of numpy.random.default_rng (>= 0)")
    p.add_argument("--count", type=int, default=1, metavar="R",
                   help="write R resamples, seeds S .. S+R-1, as OUT_seed{S}.json (default 1: OUT itself)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.json",
                   help="workload file to write (directory created if needed; gzip if it ends with .gz)")


def cmd_resample_validate(args: argparse.Namespace) -> int:
    """Run ``batfeed resample validate``: print the marginals and locality tables (and write --json)."""
    import json
    import math

    import pandas as pd
    from batfeed.users.resample_metrics import compare
    from batfeed.users.resample_validation import compare_marginals, format_marginals

    if not args.session_gap_min >= 0:
        raise BatfeedError(f"--session-gap-min must be >= 0 (got {args.session_gap_min:g})")
    if args.json:
        from batfeed.outpaths import writable_file

        writable_file(Path(args.json), "--json")
    from contextlib import ExitStack

    from batfeed.adapters.workload import workload_or_swf

    with ExitStack() as stack:              # an SWF (the original log, usually) is converted on the fly
        original, *resamples = (str(stack.enter_context(workload_or_swf(p, "resample"))[0])
                                for p in (args.original, *args.resamples))
        marg = compare_marginals(original, resamples, session_gap_s=60.0 * args.session_gap_min)
        loc = compare(original, resamples)
    print(f"per-user marginals and weekly profile: {args.original} vs {len(args.resamples)} resample(s)")
    print(format_marginals(marg))
    print(f"\nlocality and Hurst exponent\n{'metric':<18} {'original':>9} {'resampled':>9}")
    for name, r in loc.iterrows():
        print(f"{name:<18} {r['original']:>9.4g} {r['mean']:>9.4g} ± {r['sd']:.3g}")
    if args.json:
        def plain(df: pd.DataFrame) -> dict[str, dict[str, float | None]]:
            return {str(k): {c: None if math.isnan(x) else x for c, x in row.items()}
                    for k, row in df.to_dict(orient="index").items()}
        Path(args.json).write_text(json.dumps({"marginals": plain(marg), "locality": plain(loc)}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def cmd_resample_users(args: argparse.Namespace) -> int:
    """Run ``batfeed resample users``: classify once, write each seed's resample (never an empty one)."""
    if not (math.isfinite(args.load) and args.load > 0):
        raise BatfeedError(f"--load must be a finite number > 0 (got {args.load:g})")
    if not (math.isfinite(args.rb_npw) and args.rb_npw >= 0):
        raise BatfeedError(f"--rb-npw must be a finite number >= 0 (got {args.rb_npw:g})")
    seeds, paths = checked_outputs(args)
    from batfeed.adapters.resample import write_workload_file
    from batfeed.adapters.workload import workload_or_swf
    from batfeed.users.classify import AnonymousJobs
    from batfeed.users.zf_resample import build_pools, resample_users

    try:
        with workload_or_swf(args.workload, "resample") as (workload, _):
            pools = build_pools(workload, rb="detect" if args.rb_npw > 0 or args.flurries else None,
                                anonymous="user" if args.anonymous_user else "error", source=args.workload)
    except AnonymousJobs as err:
        raise AnonymousJobs(err.count, err.first, args.workload, "add --anonymous-user") from None
    for f in pools.flurries:
        print(f"flurry: user {f.user}, {f.jobs} jobs ({f.share:.0%} of the log's) in days "
              f"{(f.begin - pools.t0) / 86400:g}-{(f.end - pools.t0) / 86400:g} from the log start")
    classes = pools.classes
    counts = classes.counts()
    print(f"read {args.workload}: " + "; ".join(f"{cls}: {int(r['users'])} users, {int(r['jobs'])} jobs"
                                                  for cls, r in counts.iterrows())
          + (f"; rare behaviours: {len(pools.rb)} windows, {sum(len(u.idx) for u in pools.rb)} jobs"
             if pools.flurries else ""))
    if classes.anonymous_jobs:
        print(f"note: {classes.anonymous_jobs} jobs have no user: resampled together as one anonymous user")
    if args.classes:
        Path(args.classes).parent.mkdir(parents=True, exist_ok=True)
        classes.to_json(args.classes)
        print(f"wrote {args.classes}")
    written: list[Path] = []
    for seed, path in zip(seeds, paths, strict=True):
        t1 = time.perf_counter()
        out = resample_users(pools, args.weeks, seed, load=args.load, rb_npw=args.rb_npw)
        if not out["jobs"]:
            info = out["batfeed_resample"]
            raise BatfeedError(_empty(path, written, f"seed {seed} drew no job in {args.weeks} weeks at load "
                                      f"{args.load:g} ({info['long_term_copies']} long-term copies, "
                                      f"{info['temporary_init']} temporary users at the start, "
                                      f"{info['temporary_arrivals']} temporary arrivals); raise --load or --weeks"))
        write_workload_file(path, out)
        written.append(path)
        print(f"wrote {path}: {args.weeks} weeks, seed {seed}, load {args.load:g}, {len(out['jobs'])} jobs "
              f"({time.perf_counter() - t1:.2f} s)")
    return 0


def _empty(path: Path, written: list[Path], why: str) -> str:
    """The error of a resample with no job: ``PATH not written: WHY`` (and the files written before)."""
    before = f" (written before: {', '.join(map(str, written))})" if written else ""
    return f"{path} not written: {why}{before}"


def output_paths(output: str | Path, seeds: range) -> list[Path]:
    """``OUT`` for one seed, else ``OUT_seed{S}.json`` (before ``.json``/``.json.gz``, else appended)."""
    out = Path(output)
    if len(seeds) == 1:
        return [out]
    name = out.name
    suffix = next((s for s in (".json.gz", ".json") if name.endswith(s) and len(name) > len(s)), "")
    stem = name[: len(name) - len(suffix)]
    return [out.with_name(f"{stem}_seed{s}{suffix}") for s in seeds]


def checked_outputs(args: argparse.Namespace) -> tuple[range, list[Path]]:
    """The seeds and output files of ``[--weeks]/--seed/--count/-o`` (every method), checked before any
    work: one-line errors for bad values, compressed outputs other than gzip, unwritable paths."""
    from batfeed.outpaths import writable_file

    if getattr(args, "weeks", 1) < 1:
        raise BatfeedError(f"--weeks must be >= 1 (got {args.weeks})")
    if args.seed < 0:
        raise BatfeedError(f"--seed must be >= 0 (got {args.seed})")
    if args.count < 1:
        raise BatfeedError(f"--count must be >= 1 (got {args.count})")
    seeds = range(args.seed, args.seed + args.count)
    paths = output_paths(args.output, seeds)
    if Path(args.output).name.endswith((".xz", ".bz2")):
        raise BatfeedError(f"cannot write to {args.output} (-o/--output): only plain or .gz output is written")
    for path in paths:
        writable_file(path, "-o/--output")
    return seeds, paths


def cmd_resample(args: argparse.Namespace) -> int:
    """Run ``batfeed resample weekly``: check the arguments and outputs, load once, write each seed."""
    from batfeed.adapters.resample import WEEK, WeeklyLog
    from batfeed.adapters.workload import workload_or_swf

    seeds, paths = checked_outputs(args)
    t0 = time.perf_counter()
    with workload_or_swf(args.workload, "resample") as (workload, _):
        log = WeeklyLog.load(workload, source=args.workload)
    print(f"read {args.workload}: {len(log.data['jobs'])} jobs, {len(log.users)} users, {log.log_weeks} complete "
          f"weeks drawn from ({log.span / WEEK:.2f} weeks of submissions; {log.undrawable} jobs of the partial last "
          f"week never drawn) in {time.perf_counter() - t0:.2f} s")
    if log.anonymous:
        print(f"note: {log.anonymous} jobs have no user: resampled together as one anonymous user")
    _write_each(seeds, paths, lambda seed: log.resample(args.weeks, seed),
                lambda seed: f"seed {seed} drew no job in {args.weeks} weeks (every drawn user-week of "
                             f"{args.workload} is empty); try more --weeks or another --seed")
    return 0


def _write_each(seeds: range, paths: list[Path], draw: Callable[[int], Any], empty: Callable[[int], str]) -> None:
    """Draw (``draw(seed)``) and write each seed's resample, one line per file; ``empty(seed)`` says why a
    seed drew no job (then nothing more is written and the files already written are named)."""
    written: list[Path] = []
    for seed, path in zip(seeds, paths, strict=True):
        t1 = time.perf_counter()
        res = draw(seed)
        if not len(res.src):
            raise BatfeedError(_empty(path, written, empty(seed)))
        res.write(path)
        written.append(path)
        print(f"wrote {path}: {res.weeks} weeks, seed {seed}, {len(res.src)} jobs, "
              f"{len(res.profiles())} profiles ({time.perf_counter() - t1:.2f} s)")


def cmd_resample_permute(args: argparse.Namespace) -> int:
    """Run ``batfeed resample permute``: check the arguments and outputs, load once, write each seed."""
    from batfeed.adapters.resample_permute import PermuteLog
    from batfeed.adapters.workload import workload_or_swf

    seeds, paths = checked_outputs(args)
    t0 = time.perf_counter()
    with workload_or_swf(args.workload, "resample") as (workload, _):
        log = PermuteLog.load(workload, source=args.workload)
    print(f"read {args.workload}: {len(log.subtime)} jobs, {len(log.users)} users, calendar weeks {log.first_week}.."
          f"{log.last_week} of the {log.clock} clock: {log.interior} interior weeks permuted ({len(log.kept)} jobs), "
          f"{log.dropped} jobs of the first and last weeks dropped, in {time.perf_counter() - t0:.2f} s")
    if log.anonymous:
        print(f"note: {log.anonymous} jobs have no user: permuted together as one anonymous user")
    _write_each(seeds, paths, log.resample, lambda seed: f"seed {seed} kept no job")   # never: PermuteLog checks
    return 0
