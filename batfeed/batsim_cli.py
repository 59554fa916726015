"""``batfeed batsim``: the engine behind Batsim 4.2.1's own command line (``batsim --help``; its docopt usage
in ``src/batsim.cpp``), so that a script running ``batsim -p P -w W -e PREFIX -s ENDPOINT`` runs the same with
``batfeed batsim`` in place of ``batsim``: it connects to the scheduler listening at ``-s`` (REQ), as Batsim
does, and writes Batsim's ``PREFIX_jobs.csv``, ``_schedule.csv`` and ``_machine_states.csv`` (and with
``-E/--energy``, ``_consumed_energy.csv`` and ``_pstate_changes.csv``).

Every option the engine models is accepted with Batsim's spelling and default; the others (workflows, Redis,
compute sharing, ...) are refused with one line naming the feature, before anything runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from batfeed.errors import BatfeedError, InputError

BATSIM_VERSION = "4.2.1"        # the version whose behaviour the engine follows
SIMGRID_VERSION = "3.32.0"      # the SimGrid whose clock arithmetic the engine follows (batfeed/engine/clock.py)
VERBOSITIES = ("quiet", "network-only", "information", "debug")

# Batsim options the engine does not model: flag -> (how many values it takes, what it is)
REFUSED = {
    "--workflow": (1, "workflows"),
    "--workflow-start": (2, "workflows"),
    "--enable-redis": (0, "Redis"),
    "--redis-hostname": (1, "Redis"),
    "--redis-port": (1, "Redis"),
    "--redis-prefix": (1, "Redis"),
    "--add-role-to-hosts": (1, "host roles given on the command line (give them as role properties in the "
                               "platform)"),
    "--enable-compute-sharing": (0, "compute sharing"),
    "--disable-storage-sharing": (0, "storage (PFS) sharing"),
    "--dump-execution-context": (0, "Batsim's execution context"),
    "--workflow-jobs-limit": (1, "workflows"),
    "--ignore-beyond-last-workflow": (0, "workflows"),
    "--sg-cfg": (1, "other SimGrid settings than Batsim's (the engine follows SimGrid 3.32 as Batsim configures "
                    "it)"),
}
SHORT = {"--workflow": "-W", "--workflow-start": "--WS", "--add-role-to-hosts": "-r"}


def add_batsim_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """``batfeed batsim``, with Batsim 4.2.1's options, defaults and spellings."""
    b = sub.add_parser(
        "batsim", help="run the engine with Batsim 4.2.1's own command line (-p PLATFORM -w WORKLOAD -e PREFIX "
                       "-s ENDPOINT ...), against a scheduler listening at -s",
        description="Batsim 4.2.1's command line on batfeed's engine: connects to the scheduler at -s, as batsim "
                    "does. Options Batsim has but the engine does not model are refused with one line.")
    b.add_argument("-p", "--platform", metavar="PLATFORM_FILE", help="the SimGrid platform to simulate")
    b.add_argument("-w", "--workload", action="append", default=[], metavar="WORKLOAD_FILE",
                   help="a workload JSON file to simulate (repeatable)")
    b.add_argument("--events", action="append", default=[], metavar="EVENTS_FILE",
                   help="a file of external events (repeatable)")
    b.add_argument("-m", "--master-host", default="master_host", metavar="NAME",
                   help="the platform's management host (default: master_host)")
    b.add_argument("-s", "--socket-endpoint", default="tcp://localhost:28000", metavar="ENDPOINT",
                   help="the scheduler's socket (default: tcp://localhost:28000)")
    b.add_argument("-e", "--export", default="out", metavar="PREFIX", help="output prefix (default: out)")
    b.add_argument("--disable-schedule-tracing", action="store_true",
                   help="no Pajé trace (batfeed never writes PREFIX_schedule.trace)")
    b.add_argument("--disable-machine-state-tracing", action="store_true", help="no PREFIX_machine_states.csv")
    b.add_argument("-E", "--energy", action="store_true",
                   help="the energy model: pstates, wattages, machine switches (SET_RESOURCE_STATE), energy queries, "
                        "PREFIX_consumed_energy.csv and PREFIX_pstate_changes.csv")
    b.add_argument("--mmax", type=int, default=0, metavar="NB", help="keep the first NB machines (0: all)")
    b.add_argument("--mmax-workload", action="store_true",
                   help="keep as many machines as the largest nb_res of the workloads")
    for flag, text in (("--forward-profiles-on-submission", "JOB_SUBMITTED carries the job's profile"),
                       ("--enable-dynamic-jobs", "the scheduler may register jobs and profiles"),
                       ("--acknowledge-dynamic-jobs", "JOB_SUBMITTED back for each REGISTER_JOB"),
                       ("--enable-profile-reuse", "dynamic jobs may reuse the profiles of other jobs"),
                       ("--forward-unknown-events", "forward external events of unknown types")):
        b.add_argument(flag, action="store_true", help=text)
    b.add_argument("--no-sched", action="store_true",
                   help="no scheduler: every job starts at time 0 on machines 0..res-1 (Batsim's batexec mode)")
    b.add_argument("-v", "--verbosity", default="information", metavar="LEVEL",
                   help=f"{', '.join(VERBOSITIES)} (default information): quiet prints nothing on success")
    b.add_argument("-q", "--quiet", action="store_true", help="--verbosity quiet")
    cfg = b.add_mutually_exclusive_group()
    cfg.add_argument("--sched-cfg", metavar="CFG_STR", help="forwarded in SIMULATION_BEGINS (config.sched-config)")
    cfg.add_argument("--sched-cfg-file", metavar="CFG_FILE", help="same, read from a file")
    b.add_argument("--sg-log", action="append", default=[], metavar="LOG_OPTION",
                   help="SimGrid logging option: accepted, without effect (batfeed has no SimGrid log)")
    b.add_argument("--version", action="store_true", help="the Batsim version the engine follows")
    b.add_argument("--simgrid-version", action="store_true", help="the SimGrid version the engine follows")
    for flag, (values, what) in REFUSED.items():     # parsed, so that the refusal names the feature
        names = [SHORT[flag], flag] if flag in SHORT else [flag]
        how: dict[str, Any] = {"action": "append", "nargs": values, "metavar": "VALUE"} if values else \
            {"action": "store_true"}
        b.add_argument(*names, dest=_dest(flag), help=f"refused: needs {what}, which the engine does not model",
                       **how)
    b.set_defaults(func=cmd_batsim)
    return b


def _dest(flag: str) -> str:
    return "refused_" + flag[2:].replace("-", "_")


def _refused(args: argparse.Namespace) -> None:
    for flag, (_, what) in REFUSED.items():
        if getattr(args, _dest(flag), None):
            shown = f"{SHORT[flag]}/{flag}" if flag in SHORT else flag
            raise BatfeedError(f"{shown} needs {what}, which batfeed's engine does not model; run this simulation "
                               "with real Batsim (docs/engine.md says what the engine models)")


def _mmax(args: argparse.Namespace) -> int | None:
    if args.mmax < 0:
        raise BatfeedError(f"--mmax must be >= 0 (got {args.mmax})")
    if not args.mmax_workload:
        return args.mmax or None
    from batfeed.adapters.workload import load_workload_json

    sizes = [load_workload_json(w).get("nb_res") for w in args.workload]
    if not sizes:
        raise BatfeedError("--mmax-workload needs workloads (-w)")
    for w, n in zip(args.workload, sizes, strict=True):
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise InputError(f"'nb_res' must be a JSON integer > 0 (got {n!r}) for --mmax-workload", w)
    return max(sizes)                   # Batsim: the largest nb_res, which --mmax, if set, cannot raise


def cmd_batsim(args: argparse.Namespace) -> int:
    """Run ``batfeed batsim``: check Batsim's options, then simulate against the scheduler at ``-s``."""
    if args.version:
        from batfeed import __version__

        print(f"{BATSIM_VERSION} (batfeed {__version__}'s engine)")
        return 0
    if args.simgrid_version:
        print(SIMGRID_VERSION)
        return 0
    _refused(args)
    if not args.platform:
        raise BatfeedError("-p/--platform is required (batsim -p <platform_file> [-w <workload_file>...] ...)")
    if args.verbosity not in VERBOSITIES:
        raise BatfeedError(f"--verbosity must be one of {', '.join(VERBOSITIES)} (got '{args.verbosity}')")
    quiet = args.quiet or args.verbosity == "quiet"
    for path, what in [(args.platform, "Platform"), *((w, "Workload") for w in args.workload),
                       *((e, "Events") for e in args.events)]:
        if not Path(path).is_file():             # batsim.cpp: "Platform file '%s' cannot be read."
            raise InputError(f"{what} file cannot be read", path)
    sched_config = args.sched_cfg or ""
    if args.sched_cfg_file:
        try:
            sched_config = Path(args.sched_cfg_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"cannot read the scheduler configuration ({err})", args.sched_cfg_file) from None
    mmax = _mmax(args)
    if args.no_sched:
        return _no_sched(args, mmax, quiet)
    from batfeed.manifest import command_line
    from batfeed.outpaths import writable_prefix
    from batfeed.runner import run_simulation

    outputs = ("_jobs.csv", "_schedule.csv", "_machine_states.csv", "_manifest.json")
    if args.energy:
        outputs += ("_consumed_energy.csv", "_pstate_changes.csv")
    writable_prefix(args.export, outputs, "-e/--export")
    result = run_simulation(
        args.platform, args.workload, events=args.events, export=args.export, transport="zmq",
        socket=args.socket_endpoint, dynamic=args.enable_dynamic_jobs, ack=args.acknowledge_dynamic_jobs,
        profile_reuse=args.enable_profile_reuse, forward_profiles=args.forward_profiles_on_submission,
        forward_unknown=args.forward_unknown_events, sched_config=sched_config, master_host=args.master_host,
        mmax=mmax, machine_states=not args.disable_machine_state_tracing, call=command_line(args),
        energy=args.energy)
    if not quiet:
        c = result.counts
        print(f"batfeed batsim: simulated {result.simulated_time:g} s in {result.wall_time:.2f} s wall "
              f"({result.messages} messages); jobs: submitted={c['submitted']}; wrote {args.export}_jobs.csv"
              + ("" if args.disable_schedule_tracing else " (no Pajé trace: batfeed does not write "
                 f"{args.export}_schedule.trace)"), file=sys.stderr)
    return 0



def _no_sched(args: argparse.Namespace, mmax: int | None, quiet: bool) -> int:
    """``--no-sched``: Batsim's batexec mode (batfeed/engine/batexec.py); no scheduler, no socket."""
    if args.energy:
        raise BatfeedError("-E/--energy with --no-sched is not modelled by batfeed's engine (the energy model runs "
                           "with a scheduler); run this simulation with real Batsim")
    if args.events:
        raise BatfeedError("--events with --no-sched: without a server nobody receives the events (Batsim's event "
                           "submitters then wait forever); drop one of them")
    from batfeed.engine.batexec import run_batexec
    from batfeed.engine.platform import load_platform
    from batfeed.engine.workload_file import load_workload
    from batfeed.outpaths import writable_prefix

    writable_prefix(args.export, ("_jobs.csv", "_schedule.csv", "_machine_states.csv"), "-e/--export")
    platform = load_platform(args.platform, args.master_host, mmax)
    workloads = [load_workload(w, f"w{i}") for i, w in enumerate(args.workload)]
    end = run_batexec(platform, workloads, args.export, machine_states=not args.disable_machine_state_tracing)
    if not quiet:
        print(f"batfeed batsim --no-sched: simulated {end:g} s; {sum(len(w.jobs) for w in workloads)} jobs ran "
              f"(none is written to {args.export}_jobs.csv, as in Batsim's batexec mode)", file=sys.stderr)
    return 0
