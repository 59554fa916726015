"""The ``batfeed`` command line.  Errors print one line and exit 1 (usage errors exit 2)."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from batfeed.errors import BatfeedError

DEFAULT_SOCKET = "tcp://localhost:28000"


def _json_arg(text: str | None, what: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise BatfeedError(f"{what} is not valid JSON ({err.msg} at column {err.colno}): {text}") from None
    if not isinstance(value, dict):
        raise BatfeedError(f"{what} must be a JSON object, got: {text}")
    return value


def cmd_simulate(args: argparse.Namespace) -> int:
    from batfeed.manifest import Prefetch, command_line
    from batfeed.outpaths import writable_prefix

    if not args.workload and not args.enable_dynamic_jobs and not args.users:
        print("batfeed simulate: error: no workload: give workload files, or --enable-dynamic-jobs for a scheduler "
              "that registers all its jobs (Batsim without -w)", file=sys.stderr)
        return 2

    outputs = ("_jobs.csv", "_schedule.csv", "_machine_states.csv", "_manifest.json")
    if args.energy:
        outputs += ("_consumed_energy.csv", "_pstate_changes.csv")
    writable_prefix(args.export, outputs, "-o/--output")
    prefetch = Prefetch([args.platform, *args.workload, *(args.events or [])])    # while the engine is imported
    from batfeed.runner import run_simulation

    result = run_simulation(
        args.platform, args.workload, scheduler=args.scheduler,
        options=_json_arg(args.options, "--options"), events=args.events or [], export=args.export,
        transport=args.transport, driver=args.driver, socket=args.socket, progress=not args.no_progress,
        dynamic=args.enable_dynamic_jobs, ack=args.acknowledge_dynamic_jobs,
        profile_reuse=args.enable_profile_reuse, forward_profiles=args.forward_profiles_on_submission,
        forward_unknown=args.forward_unknown_events, sched_config=args.sched_cfg or "",
        master_host=args.master_host, mmax=args.mmax, users=args.users,
        user_options=_user_options(args), timeout_s=args.timeout, call=command_line(args), energy=args.energy,
        prefetch=prefetch)
    c = result.counts
    killed = c["completed_killed"] + c["completed_walltime_reached"] + c["completed_failed"]
    print(f"simulated {result.simulated_time:.0f} s in {result.wall_time:.2f} s wall ({result.messages} messages, "
          f"{result.driver} driver)")
    print(f"jobs: submitted={c['submitted']} = completed={c['completed_successfully']} + "
          f"rejected={c['rejected']} + killed/failed={killed}")
    print(f"wrote {result.jobs_csv} and {result.schedule_csv}"
          + (f" (manifest {args.export}_manifest.json)" if Path(f"{args.export}_manifest.json").is_file() else ""))
    if args.users:
        print(f"user model '{args.users}' replayed {args.workload[0]}; lateness: batfeed metrics {result.jobs_csv}"
              if args.workload else f"user model '{args.users}' generated the jobs ({result.jobs_csv})")
    return 0


def _user_options(args: argparse.Namespace) -> dict[str, Any] | None:
    opts = _json_arg(args.user_options, "--user-options")
    if opts and not args.users:
        raise BatfeedError("--user-options needs --users MODEL")
    return opts


def cmd_sessions(args: argparse.Namespace) -> int:
    from batfeed.users.sessions import format_stats, write_sessions
    from batfeed.users.trace import load_trace

    if args.threshold < 0:
        raise BatfeedError(f"-t must be >= 0 minutes (got {args.threshold:g})")
    from batfeed.outpaths import writable_dir

    writable_dir(args.output, "-o/--output")
    stats = write_sessions(load_trace(args.trace), args.threshold, args.output)
    print(format_stats(stats))
    print(f"wrote {args.output}/users/<user>.json ({stats['users']} graphs), sessions.csv, summary.json, summary.txt")
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from batfeed.runner import serve_scheduler

    return serve_scheduler(args.name, _json_arg(args.options, "--options"), args.socket, args.timeout)


def cmd_convert(args: argparse.Namespace) -> int:
    from batfeed.adapters.cli import run_convert

    return run_convert(args, args.convert_defaults)


def cmd_metrics(args: argparse.Namespace) -> int:
    from batfeed.metrics import compute_metrics, format_metrics

    several = len(args.jobs_csv) > 1
    runs = []
    for path in args.jobs_csv:
        metrics = compute_metrics(path, tau=args.tau, nb_resources=args.nb_resources, platform=args.platform)
        if metrics["nb_resources_source"] == "inferred" and metrics["nb_resources"] is not None:
            print(f"batfeed metrics: warning: platform size unknown{f' for {path}' if several else ''} (no --platform "
                  f"or --nb-resources, no _schedule.csv next to the jobs file): N = {metrics['nb_resources']}, the "
                  "highest allocated machine id + 1; the utilisation may be overestimated", file=sys.stderr)
        if args.saturation:
            from batfeed.saturation import saturation

            metrics["saturation"] = saturation(path)
            if metrics["saturation"]["saturated"]:
                print(f"batfeed metrics: warning: {path}: {metrics['saturation']['reason']}", file=sys.stderr)
        runs.append(metrics)
    if not several:
        print(json.dumps(runs[0], indent=2) if args.json else format_metrics(runs[0]))
        if args.saturation and not args.json:
            from batfeed.saturation import format_saturation

            print(format_saturation(runs[0]["saturation"]))
        return 0
    from batfeed.report.table import format_side_by_side, run_names

    names = run_names(args.jobs_csv)
    print(json.dumps(dict(zip(names, runs, strict=True)), indent=2) if args.json else format_side_by_side(runs, names))
    if args.saturation and not args.json:
        from batfeed.saturation import format_saturation

        for name, m in zip(names, runs, strict=True):
            print(f"{name}: " + format_saturation(m["saturation"]))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from batfeed.manifest import command_line
    from batfeed.report.build import parse_window, write_report

    page = write_report(args.runs, args.output, labels=args.label, svg=args.svg, tau=args.tau,
                        nb_resources=args.nb_resources, platform=args.platform,
                        gantt_window=parse_window(args.gantt_window), gantt_max_jobs=args.gantt_max_jobs,
                        title=args.title, call=command_line(args))
    print(f"wrote {page} and its figures")
    return 0


def cmd_platform(args: argparse.Namespace) -> int:
    from batfeed.outpaths import writable_file
    from batfeed.platforms.generate import write_homogeneous_platform

    writable_file(args.output, "-o/--output")
    try:
        path = write_homogeneous_platform(args.output, args.hosts, cores=args.cores, speed=args.speed)
    except ValueError as err:
        raise BatfeedError(str(err)) from None
    print(f"wrote {path} ({args.hosts} hosts)")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    import numpy as np

    from batfeed.validate import validate

    if args.interval is not None and args.interval < 0:
        raise BatfeedError(f"--interval must be >= 0 seconds (got {args.interval:g})")
    if args.overrun is not None and not (args.overrun >= 0 and math.isfinite(args.overrun)):
        raise BatfeedError(f"--overrun must be a number of seconds >= 0 (got {args.overrun:g})")
    from batfeed.outpaths import writable_dir

    writable_dir(args.out, "-o/--output")
    results = validate(args.trace, args.out, config=args.config, interval=args.interval, poll=args.poll,
                       mechanics=args.mechanics, overrun=args.overrun,
                       weeks=args.weeks, machines=args.machines, platform=args.platform, events=args.events,
                       maintenance=args.maintenance, on_machine_down=args.on_machine_down, plots=not args.no_plots)
    scored = [r for r in results if r.jobs]
    print(f"wrote {Path(args.out) / 'errors.csv'} ({len(results)} weeks, {sum(r.jobs for r in scored)} jobs scored, "
          f"{sum(r.wall for r in results):.1f} s of simulation)")
    if scored:
        rec = np.concatenate([r.recorded for r in scored])
        room = np.concatenate([r.room for r in scored])
        print(f"{int(room.sum())} of {len(room)} scored jobs ({room.mean():.0%}) waited while the recorded schedule "
              f"had room for them all along ({rec[room].sum() / max(rec.sum(), 1.0):.0%} of the recorded wait): "
              f"see {Path(args.out) / 'errors_contention.csv'}")
    return 0


def cmd_fit_users(args: argparse.Namespace) -> int:
    from batfeed.outpaths import writable_file
    from batfeed.users.site_fit import fit_site, read_trace
    from batfeed.users.site_fit_report import format_fit

    writable_file(Path(args.output), "-o/--output")
    if args.thesis:
        from batfeed.users.site_thesis import fit_thesis, format_thesis, read_thesis_traces

        traces = read_thesis_traces(args.traces)
        p1, p2, bins = fit_thesis(traces)
        model = p1 if args.thesis == "phase1" else p2
        print(format_fit(model, traces, bins))
        print(format_thesis(p1, p2))
    else:
        traces = [read_trace(t) for t in args.traces]
        model, bins = fit_site(traces)
        print(format_fit(model, traces, bins))
    Path(args.output).write_text(json.dumps(model, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


def cmd_schedulers(args: argparse.Namespace) -> int:
    from batfeed.catalog import listing

    print(listing())
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from batfeed.demo import run_demo
    from batfeed.outpaths import writable_dir

    writable_dir(args.out, "-o/--output")
    return run_demo(Path(args.out), jobs=args.jobs)


def version_line() -> str:
    """``batfeed 0.1.0 (pybatsim 3.2.1, Python 3.11.7), compiled kernel (3 modules, Cython 3.3.1)``: the
    last part says which path runs (``pure Python (BATFEED_PURE=1)``, …; batfeed/kernel.py)."""
    from importlib.metadata import PackageNotFoundError, version

    from batfeed import __version__, kernel

    try:
        pybatsim = version("pybatsim")
    except PackageNotFoundError:
        pybatsim = "not installed"
    return f"batfeed {__version__} (pybatsim {pybatsim}, Python {sys.version.split()[0]}), {kernel.describe()}"


class _VersionAction(argparse.Action):
    """argparse's ``version`` action with the line computed when ``--version`` is given, not each time the
    parser is built (:func:`version_line` reads the installed packages' metadata)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, default: Any = argparse.SUPPRESS,
                 help: str | None = None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            sys.stdout.write(version_line() + "\n")      # one line, never wrapped
        except (AttributeError, OSError):       # as argparse: no stdout, or a closed one
            pass
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="batfeed", description="HPC job schedulers, user models and a Batsim-4.2-"
                                "compatible engine. Errors print one line and exit 1 (usage errors exit 2); "
                                "'batfeed COMMAND --help' describes a command.")
    p.add_argument("--version", action=_VersionAction,
                   help="print batfeed's version (and pybatsim's, Python's) and exit")
    p.add_argument("--debug", action="store_true",
                   help="print the full Python traceback with an error (also accepted after the command; "
                        "or set BATFEED_DEBUG=1)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("simulate", help="simulate Batsim inputs on the embedded engine")
    s.add_argument("platform", help="SimGrid platform XML (e.g. from 'batfeed platform' or 'batfeed convert')")
    s.add_argument("workload", nargs="*",
                   help="workload JSON files, .json.gz too (w0, w1, ...); none with --enable-dynamic-jobs: the "
                        "scheduler registers every job, as with Batsim without -w")
    s.add_argument("--events", action="append", metavar="FILE", help="external events file (repeatable)")
    s.add_argument("--scheduler", help="fcfs, module:Class, a .py file or a pybatsim scheduler name")
    s.add_argument("--options", help="scheduler options as a JSON object")
    s.add_argument("-o", "--output", "--export", dest="export", required=True, metavar="PREFIX",
                   help="write PREFIX_jobs.csv, PREFIX_schedule.csv, PREFIX_machine_states.csv and the run "
                        "manifest PREFIX_manifest.json (directory created if needed; --export is the old spelling)")
    s.add_argument("--transport", choices=["inprocess", "zmq"], default="inprocess",
                   help="inprocess (default) or zmq: with --scheduler, start it in a subprocess and "
                        "talk ZeroMQ; without, connect to a scheduler already listening at --socket")
    s.add_argument("--driver", choices=["auto", "direct", "pybatsim"], default="auto",
                   help="in-process: direct (the engine calls batfeed schedulers' callbacks itself; the "
                        "default for them) or pybatsim (messages through pybatsim's Batsim class; the "
                        "default for any other scheduler)")
    s.add_argument("--socket", default=DEFAULT_SOCKET, help=f"ZeroMQ endpoint (default {DEFAULT_SOCKET})")
    s.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="--transport zmq: give up (error, exit 1) when the scheduler does not answer a message "
                        "within SECONDS (default: wait forever, like Batsim, with a note on stderr after 60 s)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--enable-dynamic-jobs", action="store_true",
                   help="Batsim's switch: the scheduler may register jobs and profiles at run time")
    s.add_argument("--acknowledge-dynamic-jobs", action="store_true",
                   help="Batsim's switch: send JOB_SUBMITTED back for each job the scheduler registers")
    s.add_argument("--enable-profile-reuse", action="store_true",
                   help="Batsim's switch: dynamic jobs may reuse the profiles of earlier jobs (kept, not "
                        "garbage-collected)")
    s.add_argument("--forward-profiles-on-submission", action="store_true",
                   help="Batsim's switch: JOB_SUBMITTED events carry the job's profile")
    s.add_argument("--forward-unknown-events", action="store_true",
                   help="Batsim's switch: forward external events of unknown types to the scheduler")
    s.add_argument("--sched-cfg", help="string forwarded in SIMULATION_BEGINS config.sched-config")
    s.add_argument("--master-host", default="master_host", metavar="HOST",
                   help="the platform's management host, not used for jobs (default master_host, as Batsim)")
    s.add_argument("--mmax", type=int, help="keep only the first N compute machines")
    s.add_argument("-E", "--energy", action="store_true",
                   help="Batsim's -E: pstates, wattages, machine switches, energy queries, and "
                        "PREFIX_consumed_energy.csv and PREFIX_pstate_changes.csv (every machine needs a "
                        "wattage_per_state property)")
    s.add_argument("--users", metavar="MODEL",
                   help="replay the (single) workload as a recorded trace through user model MODEL "
                        "(rigid, feedback, a0/think-time, a60), wrapping --scheduler; enables dynamic jobs")
    s.add_argument("--user-options", metavar="JSON",
                   help='user-model options, e.g. {"speed_factor": 2, "graph": "reduced", "threshold_min": 30}')
    s.set_defaults(func=cmd_simulate)

    from batfeed.batsim_cli import add_batsim_parser

    add_batsim_parser(sub)              # Batsim 4.2.1's own command line on the engine

    s = sub.add_parser("sessions", help="split a trace into user sessions and write their dependency graphs")
    s.add_argument("trace", help="workload JSON (from 'batfeed convert swf') or an SWF trace")
    s.add_argument("-t", "--threshold", type=float, required=True, metavar="MINUTES",
                   help="a new session starts when the inter-arrival is >= MINUTES (0 = a0, 60 = a60)")
    s.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory (created if needed)")
    s.set_defaults(func=cmd_sessions)

    s = sub.add_parser("schedule", help="run a scheduler for a real Batsim (REP socket; waits for Batsim without "
                                        "limit unless --timeout)")
    s.add_argument("name", help="scheduler: fcfs, easy, conservative, maui, module:Class, a .py file or a "
                                "pybatsim scheduler name (see 'batfeed schedulers')")
    s.add_argument("--socket", default="tcp://*:28000", help="endpoint to bind (default tcp://*:28000)")
    s.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="give up (error, exit 1) when Batsim sends no message for SECONDS, the first one "
                        "included (default: wait forever, like pybatsim)")
    s.add_argument("--options", help="scheduler options as a JSON object")
    s.set_defaults(func=cmd_schedule)

    from batfeed.adapters.cli import add_convert_parser

    s = add_convert_parser(sub)  # one sub-parser per format: adapters/cli_parser.py
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("metrics", help="metrics of one or more PREFIX_jobs.csv (several: side by side)")
    s.add_argument("jobs_csv", nargs="+", metavar="PREFIX_jobs.csv",
                   help="PREFIX_jobs.csv of a run (Batsim's or batfeed's); several: one column per file, named "
                        "after its PREFIX")
    s.add_argument("--json", action="store_true", help="print the metrics as JSON instead of a table (several "
                                                       "files: an object keyed by the files' names)")
    s.add_argument("--tau", type=float, default=10.0, help="bounded-slowdown threshold in s (default 10)")
    s.add_argument("--nb-resources", type=int, metavar="N",
                   help="platform size N for the utilisation (default: the platform given with --platform, else "
                        "nb_computing_machines of the PREFIX_schedule.csv next to the jobs file, else the highest "
                        "allocated machine id + 1, with a warning)")
    s.add_argument("--platform", metavar="XML", help="platform XML of the run: N = its compute hosts")
    s.add_argument("--saturation", action="store_true",
                   help="also print the saturation check (Zakay & Feitelson): outstanding jobs at each week start "
                        "from the first submission, suffix minimum, last 20 %% dropped, slope >= 1 job/week = "
                        "saturated (warning on stderr); --json: the full series under \"saturation\"")
    s.set_defaults(func=cmd_metrics)

    s = sub.add_parser("report", help="HTML report with figures comparing runs (PREFIX_jobs.csv files, folders "
                                      "or a campaign folder)")
    s.add_argument("runs", nargs="+", metavar="RUN",
                   help="a PREFIX_jobs.csv (its PREFIX_manifest.json, if any, names it), a folder of them, or a "
                        "campaign folder (results.csv/results.parquet)")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="output directory: index.html, the figures and copies of the manifests (created if needed)")
    s.add_argument("--label", action="append", metavar="TEXT",
                   help="the name of a run in the report (repeatable: one per run, in order; default: from its "
                        "manifest, the scheduler and what differs between the runs, else the file name)")
    s.add_argument("--title", help="the page's title (default: the runs' names)")
    s.add_argument("--svg", action="store_true", help="also write every figure as SVG")
    s.add_argument("--gantt-window", metavar="T0:T1",
                   help="also draw the Gantt chart of the simulated time window [T0, T1) in seconds, job by job")
    s.add_argument("--gantt-max-jobs", type=int, default=2000, metavar="N",
                   help="a Gantt panel with more than N jobs becomes a heat map of busy machines (default 2000)")
    s.add_argument("--tau", type=float, default=10.0, help="bounded-slowdown threshold in s (default 10)")
    s.add_argument("--nb-resources", type=int, metavar="N",
                   help="platform size N for the utilisation (default: as batfeed metrics: --platform, else the "
                        "run's PREFIX_schedule.csv, else the highest allocated machine id + 1, with a warning)")
    s.add_argument("--platform", metavar="XML", help="platform XML of the runs: N = its compute hosts")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("platform", help="generate a homogeneous cluster platform XML")
    s.add_argument("hosts", type=int, help="number of compute hosts (a master host is added)")
    s.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="platform XML to write (directory created if needed)")
    s.add_argument("--cores", type=int, default=1, help="cores per host (default 1)")
    s.add_argument("--speed", default="1Gf", help="host speed with its SimGrid unit (default 1Gf)")
    s.set_defaults(func=cmd_platform)

    s = sub.add_parser("validate", help="weekly validation of the Maui scheduler against a recorded trace "
                                        "(errors.csv and PNG plots)")
    s.add_argument("trace", help="SWF trace (an Alea <trace>.machines next to it sizes the platform) or workload JSON")
    s.add_argument("-o", "--output", "--out", dest="out", required=True, metavar="DIR",
                   help="output directory, created if needed (--out is the old spelling)")
    s.add_argument("--config", metavar="MAUI_CFG", help="maui.cfg (default: Maui's defaults)")
    s.add_argument("--interval", type=float, metavar="SECONDS",
                   help="scheduling step (Maui's RMPOLLINTERVAL); 0 or absent: event-driven")
    s.add_argument("--poll", action="store_true", help="with --interval: iterate at every step while jobs wait")
    s.add_argument("--mechanics", choices=["nodes", "counts"], default="nodes",
                   help="Maui's node reservations and window backfill (nodes, default) or batfeed's earlier "
                        "count-based model (counts)")
    s.add_argument("--overrun", type=float, metavar="SECONDS",
                   help="keep the recorded requests and let jobs run up to request + SECONDS, as Maui's "
                        "JOBMAXOVERRUN (600 in Maui; default: requests below the run time become run + 1 s)")
    s.add_argument("--weeks", metavar="LIST", help="target weeks, e.g. 1-5,29 (default: all from week 1)")
    s.add_argument("--machines", metavar="FILE", help="Alea .machines file (platform size)")
    s.add_argument("--platform", metavar="XML", help="platform (default: homogeneous, the trace's size)")
    s.add_argument("--events", metavar="FILE", help="outages as a Batsim events file on the trace's time axis")
    s.add_argument("--maintenance", metavar="FILE", help="planned maintenance windows (Batsim events file)")
    s.add_argument("--on-machine-down", default="ignore", choices=["ignore", "kill-drop", "kill-resubmit"],
                   help="a job running on a machine that goes down: ignore it (default), kill it, or kill and "
                        "resubmit it")
    s.add_argument("--no-plots", action="store_true", help="write the CSV files only, no PNG plots")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("demo", help="convert KTH-SP2 and simulate it with FCFS (the README demo)")
    s.add_argument("-o", "--output", "--out", dest="out", default="runs/demo", metavar="DIR",
                   help="output directory (default runs/demo; --out is the old spelling)")
    s.add_argument("--jobs", type=int, help="only the first N jobs (default: the whole trace)")
    s.set_defaults(func=cmd_demo)

    s = sub.add_parser("fit-users", help="fit Shmueli's site-level user model (batches, think times, p_cont, "
                                         "sizes, runtimes, activity) to SWF traces (models.md C; users/site_fit.py)")
    s.add_argument("traces", nargs="+", metavar="TRACE", help="SWF trace(s) (plain, .gz or .xz), pooled")
    s.add_argument("-o", "--output", required=True, metavar="MODEL.json", help="model file to write")
    s.add_argument("--thesis", choices=("phase1", "phase2"),
                   help="the thesis's workload (users/site_thesis.py): sizes in nodes, intra-batch gaps <= 20 min, "
                        "Eq. 5.1; phase2: run-time classes equal, the long one bounded for 12.16-min jobs")
    s.set_defaults(func=cmd_fit_users)

    from batfeed.campaign.cli import add_campaign_parser

    add_campaign_parser(sub)  # batfeed/campaign/cli.py

    from batfeed.adapters.resample_cli import add_resample_parser

    add_resample_parser(sub)  # adapters/resample_cli.py

    from batfeed.reproduce.cli import add_reproduce_parser

    add_reproduce_parser(sub)  # batfeed/reproduce/cli.py

    s = sub.add_parser("schedulers", help="list the built-in schedulers and user models with their options "
                                          "and defaults")
    s.set_defaults(func=cmd_schedulers)
    return p


def _stdout_closed() -> int:
    """stdout's reader went away (``batfeed convert ... | head``): end quietly with exit code 141
    (128 + SIGPIPE, what a tool killed by the signal reports); stdout goes to /dev/null so that
    Python's final flush does not print "Exception ignored"."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


def main(argv: list[str] | None = None) -> int:
    from batfeed.crash import set_debug, take_debug_flag

    argv = list(sys.argv[1:] if argv is None else argv)
    set_debug(take_debug_flag(argv))          # --debug before or after the command
    args = build_parser().parse_args(argv)
    args.argv = argv                          # the command line, for run manifests
    if getattr(args, "command", None) == "simulate" and not args.scheduler and args.transport == "inprocess":
        print("batfeed simulate: error: --scheduler is required (unless --transport zmq connects to a "
              "running scheduler)", file=sys.stderr)
        return 2
    from batfeed.crash import internal_error, print_debug

    try:
        code = args.func(args)
        sys.stdout.flush()                    # a closed pipe shows here, not as a warning at exit
        return code
    except BrokenPipeError:                   # `batfeed ... | head`: the reader is gone
        return _stdout_closed()
    except BatfeedError as err:
        print_debug(err)
        print(f"batfeed {args.command}: error: {_one_line(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("batfeed: interrupted", file=sys.stderr)
        return 130
    except Exception as err:                  # keep last: a failure no check anticipated, still one line
        print_debug(err)
        print(f"batfeed {args.command}: {_one_line(internal_error(err))}", file=sys.stderr)
        return 1


def _one_line(message: str) -> str:
    """An error is one line on stderr, whatever a library put in its message (pandas' parser errors end in
    a newline): line breaks and the blanks around them become one space."""
    return re.sub(r"\s*\n\s*", " ", message.strip())


if __name__ == "__main__":
    sys.exit(main())
