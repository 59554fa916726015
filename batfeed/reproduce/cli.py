"""``batfeed reproduce NAME [OPTIONS]``: parses NAME and hands the rest to the reproduction's own
parser (``batfeed reproduce NAME --help``), so that each paper keeps its options in its module."""

from __future__ import annotations

import argparse

from batfeed.reproduce import NAMES, module

__all__ = ["add_reproduce_parser", "cmd_reproduce"]


def add_reproduce_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    names = "\n".join(f"  {n:<11} {what}" for n, (_, what) in NAMES.items())
    s = sub.add_parser(
        "reproduce", help="regenerate a seed paper's headline tables: paper | batfeed [band] | verdict "
                          "(docs/reproductions.md)",
        description="Regenerate a seed paper's headline tables with campaigns (resumable, --workers, Dask) and "
                    "print each cell as: paper | batfeed [band over seeds or resamples] | verdict.\n\n"
                    f"names:\n{names}\n\nEvery name takes --quick (a small version, minutes), --data DIR (the "
                    "Parallel Workloads Archive logs), --out DIR, --workers N, --executor local|dask, "
                    "--summary-only; 'batfeed reproduce NAME --help' for the rest.",
        formatter_class=argparse.RawDescriptionHelpFormatter, add_help=True)
    s.add_argument("name", choices=list(NAMES), metavar="NAME", help="one of: " + ", ".join(NAMES))
    s.add_argument("rest", nargs=argparse.REMAINDER, metavar="...", help="the reproduction's options")
    s.set_defaults(func=cmd_reproduce)
    return s


def cmd_reproduce(args: argparse.Namespace) -> int:
    return int(module(args.name).main(list(args.rest)) or 0)
