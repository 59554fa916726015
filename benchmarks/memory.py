"""Peak memory (RSS) and wall time of ``batfeed`` commands, each run in its own subprocess.

    .venv/bin/python benchmarks/memory.py                          # convert swf CEA-Curie (312,826 jobs)
    .venv/bin/python benchmarks/memory.py --data /path/to/shared/data
    .venv/bin/python benchmarks/memory.py --trace /tmp/big.swf -- --walltime-fallback max

``convert``: runs ``batfeed convert swf TRACE -o TMPDIR [EXTRA...]`` (TRACE defaults to
``DATA/swf/CEA-Curie-2011-2.1-cln.swf.gz``, ``--data`` defaulting to ``../shared/data`` relative to
the repository root; the measurement is skipped with a message when it is absent), after the same
command on a one-job trace (the baseline: interpreter and imports).  Prints, per run: wall time (s),
peak RSS (MB), the jobs read (from the conversion report) and bytes per job, both peak RSS / jobs and
(peak RSS - baseline) / jobs, the memory that grows with the trace.

``--simulate PLATFORM WORKLOAD``: measures ``batfeed simulate PLATFORM WORKLOAD --scheduler S -o TMP/run``
instead (``--scheduler``, default easy): peak RSS and bytes per job (jobs from ``_schedule.csv``); the
finished jobs' rows are streamed to ``_jobs.csv`` (docs/engine.md), so what remains is the loaded
workload and platform, the scheduler and the engine's job table.

:func:`measure` is reusable for any command, e.g. ``batfeed simulate``::

    from benchmarks.memory import measure
    wall, peak = measure([".venv/bin/batfeed", "simulate", "p.xml", "w.json", "--scheduler", "fcfs",
                          "--export", "/tmp/run"])
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data"
CURIE = "swf/CEA-Curie-2011-2.1-cln.swf.gz"
ONE_JOB = "; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"


def measure(cmd: list[str]) -> tuple[float, int]:
    """Run ``cmd`` (stdout and stderr discarded) and return (wall seconds, peak RSS in bytes).

    The peak is the child's own maximum resident set size (``wait4`` rusage, Linux: kB), so
    measurements made one after the other from one parent do not mix.  Raises CalledProcessError
    if the command fails.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes, Linux kB
    return wall, usage.ru_maxrss * scale


def batfeed_command() -> list[str]:
    """The ``batfeed`` console script of this interpreter's environment (else ``python -m batfeed.cli``)."""
    script = Path(sys.executable).with_name("batfeed")
    return [str(script)] if script.exists() else [sys.executable, "-m", "batfeed.cli"]


def convert(trace: Path, extra: list[str], work: Path) -> dict[str, float]:
    """Measure ``batfeed convert swf TRACE`` against the one-job baseline; returns the numbers."""
    bf = batfeed_command()
    tiny = work / "one_job.swf"
    tiny.write_text(ONE_JOB)
    _, base = measure([*bf, "convert", "swf", str(tiny), "-o", str(work / "base"), *extra])
    out = work / "out"
    wall, peak = measure([*bf, "convert", "swf", str(trace), "-o", str(out), *extra])
    reports = sorted(out.glob("*_report.json"))
    jobs = json.loads(reports[0].read_text())["read"] if reports else 0
    return {"wall_s": wall, "peak_rss_bytes": peak, "baseline_rss_bytes": base, "jobs": jobs}


def simulate(platform: str, workload: str, scheduler: str, extra: list[str]) -> int:
    """Measure ``batfeed simulate`` and print peak RSS and bytes per job."""
    with tempfile.TemporaryDirectory(prefix="batfeed-memory-") as tmp:
        prefix = Path(tmp) / "run"
        wall, peak = measure([*batfeed_command(), "simulate", platform, workload, "--scheduler", scheduler,
                              "--no-progress", "-o", str(prefix), *extra])
        head, row = (prefix.with_name("run_schedule.csv")).read_text().splitlines()[:2]
        jobs = int(dict(zip(head.split(","), row.split(","), strict=True))["nb_jobs"]) or 1
    print(f"simulate {Path(workload).name} --scheduler {scheduler} {' '.join(extra)}".rstrip())
    print(f"  jobs            {jobs:>12,}\n  wall time       {wall:>12.2f} s")
    print(f"  peak RSS        {peak / (1024 * 1024):>12.1f} MB\n  bytes per job   {peak / jobs:>12,.0f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="shared data directory (default ../shared/data)")
    ap.add_argument("--trace", help=f"SWF trace to convert (default DATA/{CURIE})")
    ap.add_argument("extra", nargs="*", help="more 'batfeed convert swf' options (after --)")
    ap.add_argument("--simulate", nargs=2, metavar=("PLATFORM", "WORKLOAD"), help="measure batfeed simulate")
    ap.add_argument("--scheduler", default="easy", help="scheduler of --simulate (default easy)")
    args = ap.parse_args()
    if args.simulate:
        return simulate(*args.simulate, args.scheduler, args.extra)
    trace = Path(args.trace) if args.trace else Path(args.data) / CURIE
    if not trace.exists():
        print(f"convert: skipped, {trace} not found (give --data DIR or --trace FILE)")
        return 0
    with tempfile.TemporaryDirectory(prefix="batfeed-memory-") as tmp:
        r = convert(trace, args.extra, Path(tmp))
    jobs = r["jobs"] or 1
    mb = 1024 * 1024
    print(f"convert swf {trace.name} {' '.join(args.extra)}".rstrip())
    print(f"  jobs read       {r['jobs']:>12,}")
    print(f"  wall time       {r['wall_s']:>12.2f} s")
    print(f"  peak RSS        {r['peak_rss_bytes'] / mb:>12.1f} MB   "
          f"(one-job baseline {r['baseline_rss_bytes'] / mb:.1f} MB)")
    print(f"  bytes per job   {r['peak_rss_bytes'] / jobs:>12,.0f}      "
          f"(above baseline: {(r['peak_rss_bytes'] - r['baseline_rss_bytes']) / jobs:,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
