"""``batfeed convert FORMAT INPUT... -o DIR [--strict] [options]``: argument parsing for every adapter.

Each format accepts only its own options (others give a one-line error); every converter prints
its cleaning report as a table and the files it wrote.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from batfeed.errors import BatfeedError

__all__ = ["FORMATS", "add_convert_parser", "run_convert"]

FORMATS = {
    "swf": "SWF trace(s), plain/gz/xz -> workload, platform, report (one set per input)",
    "pbs": "PBS/TORQUE/PBS Pro accounting file(s), merged -> workload, platform, report",
    "maui": "Maui workload trace [--resources RESOURCE_TRACE] -> workload, platform, report",
    "sacct": "Slurm sacct --parsable2 file(s), merged -> workload, platform, report",
    "downtimes": "outage CSV / node-state log / maintenance windows / LANL failures -> Batsim events file",
    "to-swf": "Batsim PREFIX_jobs.csv -> SWF (--workload W.json restores submit offsets and users)",
    "to-maui": "Batsim workload JSON or SWF trace -> Maui 44-field workload trace + resource trace",
}
_CLEANING = {"unit", "procs_per_node", "nb_res", "walltime_fallback", "over_request", "zero_runtime", "status",
             "user", "window", "max_jobs", "speed", "size_scale", "profiles"}
ALLOWED: dict[str, set[str]] = {
    "swf": _CLEANING | {"size_from", "extended", "machines"},
    "pbs": _CLEANING | {"nodes", "tz"},
    "maui": _CLEANING | {"resources"},
    "sacct": _CLEANING | {"tz", "fields"},
    "downtimes": {"platform", "nb_nodes", "workload", "origin", "horizon", "min_duration", "source", "system", "tz"},
    "to-swf": {"workload"},
    "to-maui": {"epoch", "unit", "procs_per_node"},
}


def add_convert_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``convert`` sub-command to ``sub`` (an argparse sub-parsers object)."""
    s = sub.add_parser("convert", help="convert traces to Batsim inputs (and back)",
                       description="Formats: " + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    s.add_argument("format", help=", ".join(FORMATS))
    s.add_argument("input", nargs="+")
    s.add_argument("-o", "--output", required=True, metavar="DIR")
    s.add_argument("--strict", action="store_true", help="fail on the first bad record (default: skip and count)")
    s.add_argument("--name", help="output file stem (default: from the first input)")
    g = s.add_argument_group("workload conversion (swf, pbs, maui, sacct)")
    g.add_argument("--unit", choices=["procs", "nodes"], help="a Batsim resource is a processor (default) or a node")
    g.add_argument("--procs-per-node", type=int, help="processors per node for --unit nodes")
    g.add_argument("--nb-res", type=int, help="platform size (default: header / node list / largest job)")
    g.add_argument("--walltime-fallback", help="missing request: none (default), runtime, <k>x, max, queue, seconds")
    g.add_argument("--over-request", choices=["keep", "cap", "drop", "raise"], help="run >= request (default keep)")
    g.add_argument("--zero-runtime", choices=["one_second", "drop"], help="run time 0 (default one_second)")
    g.add_argument("--status", action="append", help="keep only these statuses (repeatable, comma-separated)")
    g.add_argument("--user", action="append", help="keep only these users (repeatable, comma-separated)")
    g.add_argument("--window", metavar="START:END", help="keep submits in [START, END) (trace time; either empty)")
    g.add_argument("--max-jobs", type=int, help="keep only the first N jobs")
    g.add_argument("--speed", type=float, help="divide run times and requests by this factor")
    g.add_argument("--size-scale", type=float, help="multiply job and platform sizes (rounded up)")
    g.add_argument("--profiles", choices=["runtime", "job"], help="one delay profile per run time (default) or job")
    g.add_argument("--size-from", choices=["procs", "nodes"], help="swf: platform size from MaxProcs or MaxNodes")
    g.add_argument("--extended", action="store_true", help="swf: accept extra columns (Alea extended SWF, ALCF)")
    g.add_argument("--machines", help="swf: Alea .machines file giving the platform size")
    g.add_argument("--nodes", help="pbs: node list ('name [procs]' lines or pbsnodes -a output)")
    g.add_argument("--resources", help="maui: resource trace (platform and unavailable nodes)")
    g.add_argument("--fields", help="sacct: comma-separated column names when the file has no header")
    g.add_argument("--tz", help="time zone of local times (default UTC)")
    d = s.add_argument_group("downtimes")
    d.add_argument("--platform", help="platform XML giving node names and resource ids")
    d.add_argument("--nb-nodes", type=int, help="without --platform: nodes node_0000 ... (one resource each)")
    d.add_argument("--workload", action="append", help="workload JSON: time origin (unix_start) and horizon "
                                                       "(to-swf: the simulated workloads, repeatable)")
    d.add_argument("--origin", help="epoch or time of simulation time 0")
    d.add_argument("--horizon", type=float, help="clip events to [0, HORIZON] seconds")
    d.add_argument("--min-duration", type=float, help="drop outages shorter than this (s, default 240)")
    d.add_argument("--source", choices=["auto", "outages", "states", "maintenance", "lanl"])
    d.add_argument("--system", type=int, help="LANL system number")
    d.add_argument("--epoch", type=float, help="to-maui: epoch of subtime 0 (default: the workload's unix_start)")
    return s


def _split(values: list[str] | None) -> list[str] | None:
    return None if values is None else [v.strip() for text in values for v in text.split(",") if v.strip()]


def _window(text: str | None) -> tuple[float | None, float | None]:
    if not text:
        return (None, None)
    from zoneinfo import ZoneInfo

    from batfeed.adapters.downtimes import parse_time

    lo, sep, hi = text.partition(":") if text.count(":") == 1 else text.partition("..")
    if not sep:
        raise BatfeedError(f"--window must be START:END (or START..END), got {text!r}")
    try:
        return (parse_time(lo, ZoneInfo("UTC")) if lo else None, parse_time(hi, ZoneInfo("UTC")) if hi else None)
    except ValueError as err:
        raise BatfeedError(f"--window: {err}") from None


def _options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    for key in ("unit", "procs_per_node", "walltime_fallback", "over_request", "zero_runtime", "max_jobs", "speed",
                "size_scale", "profiles"):
        if (value := getattr(args, key)) is not None:
            opts[key] = value
    if args.status:
        opts["statuses"] = _split(args.status)
    if args.user:
        opts["users"] = _split(args.user)
    if args.window:
        opts["window"] = _window(args.window)
    return opts


def _check_allowed(args: argparse.Namespace, parser_defaults: dict[str, Any]) -> None:
    allowed = ALLOWED[args.format]
    for key, default in parser_defaults.items():
        if key in ("format", "input", "output", "strict", "name", "command", "func"):
            continue
        if getattr(args, key, default) not in (default, None, False) and key not in allowed:
            raise BatfeedError(f"option --{key.replace('_', '-')} does not apply to format '{args.format}'")


def run_convert(args: argparse.Namespace, defaults: dict[str, Any] | None = None) -> int:
    """Run ``batfeed convert`` with parsed ``args``; prints the report table(s)."""
    from batfeed.adapters.report import format_report

    if args.format not in FORMATS:
        raise BatfeedError(f"converter '{args.format}' is not available yet (available: {', '.join(FORMATS)})")
    _check_allowed(args, defaults or {})
    try:
        written = _dispatch(args)
    except ValueError as err:  # invalid option value
        raise BatfeedError(str(err)) from None
    for report, paths in written:
        print(format_report(report))
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _dispatch(args: argparse.Namespace) -> list[tuple[dict[str, Any], list[Path]]]:
    fmt, out, strict = args.format, args.output, args.strict
    tz = args.tz or "UTC"
    if fmt == "swf":
        from batfeed.adapters.swf import convert_swf

        if args.name and len(args.input) > 1:
            raise BatfeedError("--name needs a single SWF input")
        results = [convert_swf(path, out, strict=strict, nb_res=args.nb_res, size_from=args.size_from or "procs",
                               extended=args.extended, machines=args.machines, name=args.name, **_options(args))
                   for path in args.input]
    elif fmt == "pbs":
        from batfeed.adapters.pbs import convert_pbs

        results = [convert_pbs(args.input, out, strict=strict, nb_res=args.nb_res, nodes_file=args.nodes, tz=tz,
                               name=args.name, **_options(args))]
    elif fmt == "sacct":
        from batfeed.adapters.sacct import convert_sacct

        fields = args.fields.split(",") if args.fields else None
        results = [convert_sacct(args.input, out, strict=strict, nb_res=args.nb_res, tz=tz, fields=fields,
                                 name=args.name, **_options(args))]
    elif fmt == "maui":
        from batfeed.adapters.maui import convert_maui

        if len(args.input) != 1:
            raise BatfeedError("maui takes one workload trace (give the resource trace with --resources)")
        results = [convert_maui(args.input[0], out, resources=args.resources, strict=strict, nb_res=args.nb_res,
                                name=args.name, **_options(args))]
    else:
        return _reverse_or_events(args)
    return [(r.report, [r.workload_path, r.platform_path, r.report_path]) for r in results]


def _reverse_or_events(args: argparse.Namespace) -> list[tuple[dict[str, Any], list[Path]]]:
    fmt, out = args.format, args.output
    if fmt == "downtimes":
        from batfeed.adapters.downtimes import DEFAULT_MIN_DURATION, convert_downtimes

        if args.workload and len(args.workload) > 1:
            raise BatfeedError("downtimes takes one --workload")
        origin: Any = args.origin
        if origin is not None:
            try:
                origin = float(origin)
            except ValueError:
                pass
        r = convert_downtimes(args.input, out, platform=args.platform, nb_nodes=args.nb_nodes,
                              workload=args.workload[0] if args.workload else None, origin=origin,
                              horizon=args.horizon, min_duration=args.min_duration if args.min_duration is not None
                              else DEFAULT_MIN_DURATION, source=args.source or "auto", tz=args.tz or "UTC",
                              system=args.system, strict=args.strict, name=args.name)
        return [(r.report, [r.events_path, r.report_path])]
    if fmt == "to-swf":
        from batfeed.adapters.jobs_csv import jobs_csv_to_swf

        results = []
        for path in args.input:
            e = jobs_csv_to_swf(path, out, workloads=args.workload or [], strict=args.strict,
                                name=args.name if len(args.input) == 1 else None)
            results.append((e.report, [e.swf_path, e.report_path]))
        return results
    from batfeed.adapters.maui import export_maui

    results = []
    for path in args.input:
        m = export_maui(path, out, epoch=args.epoch, unit=args.unit or "procs", procs_per_node=args.procs_per_node or 1,
                        name=args.name if len(args.input) == 1 else None)
        results.append((m.report, [m.workload_path, m.resources_path]))
    return results
