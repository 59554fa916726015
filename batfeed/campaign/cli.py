"""``batfeed campaign SPEC``: the sub-command's parser and body (the rest is :func:`run_campaign`)."""

from __future__ import annotations

import argparse
import shlex
import sys


def add_campaign_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    s = sub.add_parser("campaign", help="run a campaign file (traces x platforms x schedulers x user models x "
                                        "seeds) in parallel, resumably, into one table (docs/campaign.md)")
    s.add_argument("spec", help="campaign file, TOML (.toml) or YAML (.yaml, .yml)")
    s.add_argument("-o", "--output", metavar="DIR",
                   help="campaign directory (default: the spec's 'output', else runs/NAME); runs already complete "
                        "there are reused, so running the command again resumes an interrupted campaign")
    s.add_argument("--workers", type=int, metavar="N",
                   help="parallel runs: local worker processes, or the LocalCluster's size with --executor dask "
                        "and no --scheduler-address (default: the number of CPUs)")
    s.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="local: a process pool on this machine (default); dask: a Dask distributed cluster "
                        "(--scheduler-address, else a LocalCluster started here)")
    s.add_argument("--scheduler-address", metavar="ADDR",
                   help="with --executor dask: the Dask scheduler, e.g. tcp://HOST:8786 (the campaign directory "
                        "must be on a filesystem the workers share, at the same path)")
    s.add_argument("--retry-failed", action="store_true",
                   help="run again the runs that failed in an earlier invocation (default: keep their failure)")
    s.add_argument("--dry-run", action="store_true",
                   help="check the spec and list the runs (done or pending) without running anything")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_campaign)
    return s


def cmd_campaign(args: argparse.Namespace) -> int:
    from batfeed.campaign import CampaignInterrupted, load_spec, run_campaign
    from batfeed.campaign.expand import spec_columns

    camp = load_spec(args.spec)
    try:
        table = run_campaign(camp, args.output, workers=args.workers, executor=args.executor,
                             scheduler_address=args.scheduler_address, retry_failed=args.retry_failed,
                             dry_run=args.dry_run, progress=False if args.no_progress else None,
                             log=lambda line: print(line, flush=True))
    except CampaignInterrupted as stop:
        again = ["batfeed", "campaign", args.spec, "-o", str(stop.root)]
        again += ["--executor", args.executor] if args.executor != "local" else []
        again += ["--scheduler-address", args.scheduler_address] if args.scheduler_address else []
        again += ["--workers", str(args.workers)] if args.workers else []
        print(f"batfeed campaign: interrupted: {stop.done} of {stop.total} runs done (table written); resume with: "
              f"{shlex.join(again)}", file=sys.stderr)
        return 130
    if args.dry_run:
        print(table[["run", "key", *spec_columns(camp), "seed_used", "status"]].to_string(index=False))
        return 0
    failed = int((table["status"] == "failed").sum())
    if failed:
        print(f"batfeed campaign: error: {failed} of {len(table)} runs failed (see the error column of the table)",
              file=sys.stderr)
        return 1
    return 0
