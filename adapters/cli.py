"""``batfeed convert FORMAT INPUT... -o DIR [--strict] [options]``: running every adapter.

Each format accepts only its own options (others give a one-line error; the parsers are in
:mod:`batfeed.adapters.cli_parser`); every converter prints its cleaning report as a table and the
files it wrote.  The output directory is checked before the conversion starts, and a conversion
that keeps nothing is an error that says why (:mod:`batfeed.adapters.empty`), with nothing written.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from batfeed.adapters.cli_parser import ALLOWED, FORMATS, add_convert_parser

from batfeed.errors import BatfeedError

__all__ = ["FORMATS", "add_convert_parser", "run_convert"]


def _split(values: list[str] | None) -> list[str] | None:
    return None if values is None else [v.strip() for text in values for v in text.split(",") if v.strip()]


def _window(text: str | None) -> tuple[Any, Any]:
    if not text:
        return (None, None)
    from batfeed.adapters.window import parse_window

    try:
        return parse_window(text)
    except ValueError as err:
        raise BatfeedError(str(err)) from None


def _options(args: argparse.Namespace, window: tuple[Any, Any]) -> dict[str, Any]:
    opts: dict[str, Any] = {"require_kept": True}
    for key in ("unit", "procs_per_node", "walltime_fallback", "over_request", "overrun", "zero_runtime", "max_jobs",
                "speed", "size_scale", "profiles"):
        if (value := getattr(args, key)) is not None:
            opts[key] = value
    if args.status:
        opts["statuses"] = _split(args.status)
    if args.user:
        opts["users"] = _split(args.user)
    if window != (None, None):
        opts["window"] = window
    return opts


def _check_allowed(args: argparse.Namespace, parser_defaults: dict[str, Any]) -> None:
    allowed = ALLOWED[args.format]
    for key, default in parser_defaults.items():
        if key in ("format", "input", "output", "strict", "name", "command", "func"):
            continue
        if getattr(args, key, default) not in (default, None, False) and key not in allowed:
            raise BatfeedError(f"option --{key.replace('_', '-')} does not apply to format '{args.format}' "
                               f"(see batfeed convert {args.format} --help)")


def run_convert(args: argparse.Namespace, defaults: dict[str, Any] | None = None) -> int:
    """Run ``batfeed convert`` with parsed ``args``; prints the report table(s) as each input is done."""
    from batfeed.adapters.report import format_report

    from batfeed.outpaths import writable_dir

    if args.format not in FORMATS:
        raise BatfeedError(f"converter '{args.format}' is not available (available: {', '.join(FORMATS)})")
    _check_allowed(args, defaults or getattr(args, "convert_defaults", {}))
    window = _window(getattr(args, "window", None))  # a bad --window before any work
    writable_dir(args.output, "-o/--output")
    done: list[str] = []
    try:
        for report, paths in _dispatch(args, window):
            print(format_report(report))
            print("wrote " + ", ".join(str(p) for p in paths))
            done.append(str(report["input"]))
    except ValueError as err:  # invalid option value
        raise BatfeedError(_after(str(err), done)) from None
    except BatfeedError as err:
        if not done:
            raise
        raise BatfeedError(_after(str(err), done)) from None
    return 0


def _after(message: str, done: list[str]) -> str:
    return f"{message} (converted before the error: {', '.join(done)})" if done else message


def _dispatch(args: argparse.Namespace, window: tuple[Any, Any]) -> Iterator[tuple[dict[str, Any], list[Path]]]:
    """(report, files written) of each conversion, as each is done."""
    fmt, out, strict = args.format, args.output, args.strict
    tz = args.tz or "UTC"
    if fmt == "swf":
        from batfeed.adapters.filters import FILTERS
        from batfeed.adapters.swf import convert_swf

        if args.name and len(args.input) > 1:
            raise BatfeedError("--name needs a single SWF input")
        extra_drop = FILTERS[args.filter] if args.filter else None
        results: Iterable[Any] = (
            convert_swf(path, out, strict=strict, nb_res=args.nb_res, size_from=args.size_from or "procs",
                        extended=args.extended, machines=args.machines, name=args.name, extra_drop=extra_drop,
                        **_options(args, window))
            for path in args.input)
    elif fmt == "pbs":
        from batfeed.adapters.pbs import convert_pbs

        results = [convert_pbs(args.input, out, strict=strict, nb_res=args.nb_res, nodes_file=args.nodes, tz=tz,
                               name=args.name, **_options(args, window))]
    elif fmt == "sacct":
        from batfeed.adapters.sacct import convert_sacct

        fields = args.fields.split(",") if args.fields else None
        results = [convert_sacct(args.input, out, strict=strict, nb_res=args.nb_res, tz=tz, fields=fields,
                                 nodes_file=args.nodes, name=args.name, **_options(args, window))]
    elif fmt == "maui":
        from batfeed.adapters.maui import convert_maui

        if len(args.input) != 1:
            raise BatfeedError("maui takes one workload trace (give the resource trace with --resources)")
        results = [convert_maui(args.input[0], out, resources=args.resources, strict=strict, nb_res=args.nb_res,
                                name=args.name, **_options(args, window))]
    else:
        yield from _reverse_or_events(args)
        return
    for r in results:
        yield r.report, [r.workload_path, r.platform_path, r.report_path]


def _reverse_or_events(args: argparse.Namespace) -> Iterator[tuple[dict[str, Any], list[Path]]]:
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
                              system=args.system, strict=args.strict, name=args.name, require_kept=True)
        yield r.report, [r.events_path, r.report_path]
        return
    if fmt == "to-swf":
        from batfeed.adapters.jobs_csv import jobs_csv_to_swf

        for path in args.input:
            e = jobs_csv_to_swf(path, out, workloads=args.workload or [], strict=args.strict,
                                name=args.name if len(args.input) == 1 else None, require_kept=True)
            yield e.report, [e.swf_path, e.report_path]
        return
    from batfeed.adapters.maui import export_maui

    for path in args.input:
        m = export_maui(path, out, epoch=args.epoch, unit=args.unit or "procs", procs_per_node=args.procs_per_node or 1,
                        name=args.name if len(args.input) == 1 else None, require_kept=True)
        yield m.report, [m.workload_path, m.resources_path]
