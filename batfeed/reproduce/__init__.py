"""``batfeed reproduce NAME``: each seed paper's headline tables, paper and batfeed side by side
(docs/reproductions.md).  Each name is a module with ``main(argv) -> int`` built on campaigns
(resumable, ``--workers``, Dask) that accepts the options of :func:`common_arguments`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from batfeed.errors import BatfeedError

__all__ = ["NAMES", "common_arguments", "data_dir", "module"]

# name -> (module, the paper and what is regenerated)
NAMES: dict[str, tuple[str, str]] = {
    "tuning": ("batfeed.reproduce.tuning", "Gaussier et al., Online Tuning of EASY-Backfilling: Tables 3 and 4"),
    "rwf": ("batfeed.reproduce.rwf", "Madon et al., Replay with Feedback: Tables 1 and 2"),
    "resampling": ("batfeed.reproduce.resampling", "Zakay & Feitelson, Workload Resampling: Table V, "
                   "locality and Hurst, bootstrap and load sweep"),
    "site-users": ("batfeed.reproduce.site_users", "Shmueli's thesis: site-level users E1, E2, E7 (CREASY)"),
    "maui": ("batfeed.reproduce.maui", "Zitzlsberger et al., Maui/PBS simulation: weekly validation and "
             "the step effect"),
}
REPO = Path(__file__).resolve().parents[2]


def module(name: str):
    """The module of ``name`` (imported on demand)."""
    import importlib

    if name not in NAMES:
        raise BatfeedError(f"unknown reproduction '{name}' (known: {', '.join(NAMES)})")
    return importlib.import_module(NAMES[name][0])


def common_arguments(p: argparse.ArgumentParser, name: str) -> None:
    """The options every reproduction takes."""
    p.add_argument("--quick", action="store_true", help="a small version that runs in minutes (the full "
                                                         "version runs at the paper's scale)")
    p.add_argument("--data", type=Path, metavar="DIR", help="folder of the Parallel Workloads Archive logs "
                   "(default: $BATFEED_SHARED/data/swf, else ../shared/data/swf beside the repository)")
    p.add_argument("--out", type=Path, metavar="DIR", help=f"the campaign folder (default: runs/reproduce/{name}"
                                                            "[-quick]); a second invocation reuses its runs")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel runs (default: the CPUs)")
    p.add_argument("--executor", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler-address", help="with --executor dask: the Dask scheduler, tcp://HOST:8786")
    p.add_argument("--summary-only", action="store_true", help="run nothing: print from the runs already done")


def default_out(args: argparse.Namespace, name: str) -> Path:
    return args.out or REPO / "runs" / "reproduce" / (f"{name}-quick" if args.quick else name)


def data_dir(args: argparse.Namespace, needed: list[str], optional: bool = False) -> Path | None:
    """The folder holding the logs ``needed`` (file names): ``--data``, else $BATFEED_SHARED/data/swf,
    else ../shared/data/swf.  Missing files stop the run with a line naming them and where the
    Parallel Workloads Archive has them (``optional``: None instead)."""
    if args.data is not None:
        candidates = [args.data]
    else:
        shared = os.environ.get("BATFEED_SHARED")
        candidates = ([Path(shared) / "data" / "swf"] if shared else []) + [REPO.parent / "shared" / "data" / "swf"]
    for d in candidates:
        if d.is_dir() and all((d / f).is_file() for f in needed):
            return d
    if optional:
        return None
    where = args.data or candidates[-1]
    missing = [f for f in needed if not (Path(where) / f).is_file()]
    raise BatfeedError(f"{where}: missing {', '.join(missing)}: download them from the Parallel Workloads "
                       "Archive (https://www.cs.huji.ac.il/labs/parallel/workload/logs.html) into one folder and "
                       "give it with --data DIR")
