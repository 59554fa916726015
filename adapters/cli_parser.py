"""The ``batfeed convert FORMAT`` parsers: one sub-parser per format, showing only its own options.

Every option is parsed by every format (hidden where it does not apply), so that a misplaced one
gets a clear error from :func:`batfeed.adapters.cli.run_convert` rather than argparse's
"unrecognized arguments"; ``batfeed convert FORMAT --help`` lists only that format's options.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["ALLOWED", "FORMATS", "SWF_FILTERS", "add_convert_parser"]

FORMATS = {
    "swf": "SWF trace(s), plain/gz/xz -> workload, platform, report (one set per input)",
    "pbs": "PBS/TORQUE/PBS Pro accounting file(s), merged -> workload, platform, report",
    "maui": "Maui workload trace [--resources RESOURCE_TRACE] -> workload, platform, report",
    "sacct": "Slurm sacct --parsable2 file(s), merged -> workload, platform, report",
    "downtimes": "outage CSV / node-state log / maintenance windows / LANL failures -> Batsim events file",
    "to-swf": "Batsim PREFIX_jobs.csv -> SWF (--workload W.json restores submit offsets and users)",
    "to-maui": "Batsim workload JSON or SWF trace -> Maui 44-field workload trace + resource trace",
}
INPUTS = {"swf": ("TRACE", "SWF trace(s): plain, .gz or .xz"),
          "pbs": ("ACCOUNTING_FILE", "accounting file(s), e.g. one per day (merged by job id)"),
          "maui": ("WORKLOAD_TRACE", "Maui workload trace (one)"),
          "sacct": ("SACCT_FILE", "sacct -a -X -P output(s), with or without a header line (merged)"),
          "downtimes": ("FILE", "outage CSV, node-state log, maintenance windows or LANL failure CSV (merged)"),
          "to-swf": ("JOBS_CSV", "Batsim PREFIX_jobs.csv file(s)"),
          "to-maui": ("WORKLOAD", "Batsim workload JSON or SWF trace(s)")}
SWF_FILTERS = ("tune",)  # names of batfeed.adapters.filters.FILTERS (not imported here: it imports swf)
_CLEANING = {"unit", "procs_per_node", "nb_res", "walltime_fallback", "over_request", "overrun", "zero_runtime",
             "status", "user", "window", "max_jobs", "speed", "size_scale", "profiles"}
ALLOWED: dict[str, set[str]] = {
    "swf": _CLEANING | {"size_from", "extended", "machines", "filter"},
    "pbs": _CLEANING | {"nodes", "tz"},
    "maui": _CLEANING | {"resources"},
    "sacct": _CLEANING | {"tz", "fields", "nodes"},
    "downtimes": {"platform", "nb_nodes", "workload", "origin", "horizon", "min_duration", "source", "system", "tz"},
    "to-swf": {"workload"},
    "to-maui": {"epoch", "unit", "procs_per_node"},
}
WINDOW_HELP = ("keep the jobs submitted in [START, END): seconds on the trace's time axis (SWF: since the log "
               "start; other formats: Unix epochs) or dates, 2020-01-31 or 2020-01-31T12:00 (local time of the "
               "trace, see docs/adapters.md); use START..END when a bound has a time of day; either side may be "
               "empty")

# (group, flags, argparse keywords, {format: help that differs from the default})
_CLEAN, _FMT, _DOWN = "cleaning (workload formats)", "format options", "downtimes"
OPTIONS: list[tuple[str, tuple[str, ...], dict[str, Any], dict[str, str]]] = [
    (_CLEAN, ("--unit",), {"choices": ["procs", "nodes"],
                           "help": "a Batsim resource is a processor (procs, default) or a node"},
     {"to-maui": "a Batsim resource is a processor (procs, default: tasks = res) or a node (nodes = res, "
                 "tasks = res x --procs-per-node)"}),
    (_CLEAN, ("--procs-per-node",), {"type": int, "metavar": "N",
                                     "help": "processors per node, for --unit nodes when a record has no node count"},
     {"to-maui": "processors per node with --unit nodes (default 1)"}),
    (_CLEAN, ("--nb-res",), {"type": int, "metavar": "N",
                             "help": "platform size in resources (default: header, node list or largest job)"}, {}),
    (_CLEAN, ("--walltime-fallback",), {"metavar": "RULE", "help": "requested time of a job that has none: none "
                                        "(default, -1), runtime, <k>x (k times the run time), max, queue, SECONDS"},
     {}),
    (_CLEAN, ("--over-request",), {"choices": ["keep", "cap", "drop", "raise"],
                                   "help": "a job whose run time reaches its request: keep (default; Batsim kills "
                                           "it at its walltime, i.e. request + --overrun), cap the run time, drop it, "
                                           "raise the request"}, {}),
    (_CLEAN, ("--overrun",), {"metavar": "SECONDS",
                              "help": "Maui's JOBMAXOVERRUN (Maui's default 600): keep each request in "
                                      "requested_walltime (for --scheduler maui) and give Batsim walltime = request "
                                      "+ SECONDS (>= 0, simulated seconds), so jobs may overrun their request"}, {}),
    (_CLEAN, ("--zero-runtime",), {"choices": ["one_second", "drop"],
                                   "help": "a job with run time 0: run it 1 s (one_second, default) or drop it"}, {}),
    (_CLEAN, ("--status",), {"action": "append", "metavar": "S[,S...]",
                             "help": "keep only these statuses, as written in the trace (repeatable)"}, {}),
    (_CLEAN, ("--user",), {"action": "append", "metavar": "U[,U...]",
                           "help": "keep only these users, as written in the trace (repeatable)"}, {}),
    (_CLEAN, ("--window",), {"metavar": "START:END", "help": WINDOW_HELP}, {}),
    (_CLEAN, ("--max-jobs",), {"type": int, "metavar": "N", "help": "keep at most N jobs (the first ones kept)"}, {}),
    (_CLEAN, ("--speed",), {"type": float, "metavar": "F", "help": "divide run times and requests by F"}, {}),
    (_CLEAN, ("--size-scale",), {"type": float, "metavar": "F",
                                 "help": "multiply job and platform sizes by F (rounded up)"}, {}),
    (_CLEAN, ("--profiles",), {"choices": ["runtime", "job"],
                               "help": "one delay profile per distinct run time (runtime, default) or per job"}, {}),
    (_FMT, ("--size-from",), {"choices": ["procs", "nodes"],
                              "help": "platform size from the MaxProcs (default) or MaxNodes header"}, {}),
    (_FMT, ("--extended",), {"action": "store_true",
                             "help": "accept more than 18 columns (Alea's extended SWF, 19-column ALCF exports)"},
     {}),
    (_FMT, ("--machines",), {"metavar": "FILE", "help": "Alea .machines file giving the platform size"}, {}),
    (_FMT, ("--filter",), {"choices": list(SWF_FILTERS),
                           "help": "a study's extra cleaning rules: tune (the online-tuning paper's: allocated "
                                   "processors > platform, run time <= 0, submit < 0, request <= 0 or below the run "
                                   "time; adapters/filters.py)"}, {}),
    (_FMT, ("--nodes",), {"metavar": "FILE", "help": "node list: 'name [procs]' lines or pbsnodes -a output"},
     {"sacct": "node CPUs (default: the most in use at once on each node): 'NODE CPUS' lines (sinfo -N -h -o "
               "'%%N %%c'), slurm.conf NodeName=... CPUs=N lines or scontrol show node output"}),
    (_FMT, ("--resources",), {"metavar": "RESOURCE_TRACE",
                              "help": "Maui resource trace: the platform (node speeds) and its unavailable nodes"},
     {}),
    (_FMT, ("--fields",), {"metavar": "COL,COL...", "help": "column names, when the file has no header line"}, {}),
    (_FMT, ("--tz",), {"metavar": "ZONE", "help": "time zone of the trace's local times and of --window dates "
                       "(default UTC), e.g. Europe/Paris"},
     {"downtimes": "time zone of the file's local times and of --origin (default UTC)"}),
    (_DOWN, ("--platform",), {"metavar": "XML", "help": "platform giving the node names and resource ids"}, {}),
    (_DOWN, ("--nb-nodes",), {"type": int, "metavar": "N",
                              "help": "without --platform: N nodes node_0000 ... (one resource each)"}, {}),
    (_DOWN, ("--workload",), {"action": "append", "metavar": "JSON",
                              "help": "workload JSON giving the time origin (unix_start) and the horizon"},
     {"to-swf": "the simulated workload JSON(s), in w0, w1 ... order: restores submit offsets and users "
                "(repeatable)"}),
    (_DOWN, ("--origin",), {"metavar": "TIME", "help": "Unix epoch or date of simulation time 0 (default: the "
                            "workload's unix_start, else the first outage)"}, {}),
    (_DOWN, ("--horizon",), {"type": float, "metavar": "SECONDS",
                             "help": "clip events to [0, SECONDS] (default: the workload's end)"}, {}),
    (_DOWN, ("--min-duration",), {"type": float, "metavar": "SECONDS",
                                  "help": "drop outages shorter than this (default 240)"}, {}),
    (_DOWN, ("--source",), {"choices": ["auto", "outages", "states", "maintenance", "lanl"],
                            "help": "input kind (default auto: from the header line)"}, {}),
    (_DOWN, ("--system",), {"type": int, "metavar": "N", "help": "LANL system number (a file may hold several)"},
     {}),
    (_FMT, ("--epoch",), {"type": float, "metavar": "SECONDS",
                          "help": "Unix epoch of subtime 0 (default: the workload's unix_start, else 10^9)"}, {}),
]


def _dest(flags: tuple[str, ...]) -> str:
    return flags[0].lstrip("-").replace("-", "_")


def add_convert_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``convert`` and its per-format sub-parsers to ``sub`` (an argparse sub-parsers object)."""
    s = sub.add_parser("convert", help="convert traces to Batsim inputs (and back)",
                       description="Convert a trace; 'batfeed convert FORMAT --help' lists that format's options.")
    formats = s.add_subparsers(dest="format", metavar="FORMAT", required=True, title="formats")
    for fmt, text in FORMATS.items():
        f = formats.add_parser(fmt, help=text, description=text)
        metavar, what = INPUTS[fmt]
        f.add_argument("input", nargs="+", metavar=metavar, help=what)
        f.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory (created if needed)")
        f.add_argument("--strict", action="store_true", help="fail on the first bad record (default: skip and count)")
        f.add_argument("--name", metavar="STEM", help="output file stem (default: from the input's name)")
        groups: dict[str, Any] = {}
        for group, flags, kwargs, helps in OPTIONS:
            visible = _dest(flags) in ALLOWED[fmt]
            group = group if fmt in ("swf", "pbs", "maui", "sacct") else "options"
            if visible and group not in groups:
                groups[group] = f if group == "options" else f.add_argument_group(group)
            target = groups[group] if visible else f
            target.add_argument(*flags, **{**kwargs, "help": helps.get(fmt, kwargs["help"]) if visible
                                           else argparse.SUPPRESS})
        f.set_defaults(convert_defaults={a.dest: a.default for a in f._actions})
    return s
