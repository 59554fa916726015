#!/usr/bin/env python3
"""Run real Batsim 4.2.1 against the conformance probe on scenarios and store the recordings.

usage (from the repo root)::

    .venv/bin/python tests/conformance/record.py --batsim /work/batsim-local/bin/batsim \\
        --out tests/data/conformance SEEDS_OR_NAMES...    # e.g. 1 2 3 h_kills, or: all
    .venv/bin/python tests/conformance/record.py --no-links --gzip-csv --repeat 2 all   # the *_nolink twins

For each scenario: its inputs are generated (twice, and compared byte for byte) into the working
directory ``$TMPDIR/batfeed-conformance/<name>/`` (a fixed path, so that the absolute workload paths
Batsim puts in SIMULATION_BEGINS, hence the recordings, are the same each time), the probe
(``probe.py``, a separate process) binds a free loopback port, Batsim runs with ``-p … -w … --events …
-e <work>/out -s tcp://localhost:PORT --verbosity quiet --disable-schedule-tracing`` plus the
scenario's switches (its output goes to ``<work>/run<k>/batsim.log``; ``--keep`` keeps the working
directory), and ``<out>/<name>/`` receives the inputs and
``messages.jsonl.gz`` (the probe's log: ``{"recv", "sent"}`` per line), ``out_jobs.csv``,
``out_machine_states.csv``, ``out_schedule.csv`` (gzipped with ``--gzip-csv``) and ``scenario.json``
(with the exact Batsim command line, relative paths).  ``--repeat K`` runs Batsim K times and fails
unless every stream and output (bar the wall-clock fields) is identical.  A Batsim abort is reported
as a failure (exit status 1), never skipped: it means the probe made an invalid decision.
``--copy-golden SRC`` copies the golden recordings of ``SRC`` into ``tests/data/batsim_golden``.
``--no-links`` records the link-less twins (``<name>_nolink``: same scenario on a Vivaldi platform
without links, see ``scenarios.nolink_platform_xml``) of the scenarios named; a name ending in
``_nolink`` does the same without the switch.
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conformance import scenarios  # noqa: E402
from conformance.scenarios import SCENARIO_FILE, Scenario  # noqa: E402

DEFAULT_SEEDS = list(range(1, 25))
OUTPUTS = ("_jobs.csv", "_machine_states.csv", "_schedule.csv")
WALLCLOCK = ("scheduling_time", "simulation_time")
KEEP = False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_batsim(sc: Scenario, batsim: str, work: Path, timeout: float) -> dict:
    """One run of real Batsim + the probe on ``sc``; returns paths and timings; raises on any failure."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = work / "messages.jsonl"
    probe_cmd = [sys.executable, str(HERE / "probe.py"), f"tcp://127.0.0.1:{port}", str(log),
                 "--options", json.dumps(sc.probe_options), "--timeout", str(timeout)]
    probe = subprocess.Popen(probe_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cmd = sc.batsim_command(batsim, str(work / "out"), f"tcp://localhost:{port}")
    t0 = time.monotonic()
    try:
        bat = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.wait()
        raise RuntimeError(f"{sc.name}: Batsim did not finish within {timeout} s") from None
    wall = time.monotonic() - t0
    (work / "batsim.log").write_text(bat.stdout + bat.stderr)
    try:
        pout, perr = probe.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        probe.kill()
        pout, perr = probe.communicate()
    if bat.returncode != 0 or probe.returncode != 0:
        tail = "\n".join((bat.stdout + bat.stderr).splitlines()[-15:])
        raise RuntimeError(f"{sc.name}: Batsim exited with {bat.returncode}, probe with {probe.returncode}\n"
                           f"--- batsim output (tail):\n{tail}\n--- probe stderr:\n{perr[-2000:]}")
    return {"log": log, "prefix": work / "out", "wall": wall, "cmd": cmd}


def schedule_without_wallclock(path: Path) -> list[list[str]]:
    head, row = path.read_text().splitlines()[:2]
    keys, vals = head.split(","), row.split(",")
    return [[k, v] for k, v in zip(keys, vals, strict=True) if k not in WALLCLOCK]


def same_run(a: dict, b: dict) -> str | None:
    if a["log"].read_bytes() != b["log"].read_bytes():
        la, lb = a["log"].read_text().splitlines(), b["log"].read_text().splitlines()
        i = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), min(len(la), len(lb)))
        return f"message streams differ at line {i + 1}"
    for suffix in OUTPUTS[:2]:
        if not filecmp.cmp(f"{a['prefix']}{suffix}", f"{b['prefix']}{suffix}", shallow=False):
            return f"{suffix} differs"
    if schedule_without_wallclock(Path(f"{a['prefix']}_schedule.csv")) != \
            schedule_without_wallclock(Path(f"{b['prefix']}_schedule.csv")):
        return "_schedule.csv differs (beyond its wall-clock fields)"
    return None


def gzip_to(src: Path, dst: Path) -> None:
    with open(src, "rb") as f, open(dst, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                                       filename="") as gz:
        shutil.copyfileobj(f, gz)


def record(which: str, batsim: str, out: Path, timeout: float, repeat: int, gzip_csv: bool,
           version: str) -> str:
    name = scenarios.scenario_name(which)
    dest = out / name
    # a fixed working path: Batsim puts the absolute workload paths in SIMULATION_BEGINS, and the same
    # path each time makes re-recordings byte-identical (one recorder per scenario at a time)
    tmp = Path(tempfile.gettempdir()) / "batfeed-conformance" / name
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if KEEP:
        print(f"{name}: working in {tmp}", flush=True)
    try:
        return _record(which, name, dest, tmp, batsim, timeout, repeat, gzip_csv, version)
    finally:
        if not KEEP:
            shutil.rmtree(tmp, ignore_errors=True)


def _record(which: str, name: str, dest: Path, tmp: Path, batsim: str, timeout: float, repeat: int,
            gzip_csv: bool, version: str) -> str:
    sc = scenarios.make(which, tmp / "in")
    scenarios.make(which, tmp / "again")   # the generator must be reproducible
    for f in sc.files() + [SCENARIO_FILE]:
        if (tmp / "in" / f).read_bytes() != (tmp / "again" / f).read_bytes():
            raise RuntimeError(f"{name}: generating twice gives different {f}")
    runs = [run_batsim(sc, batsim, tmp / f"run{k}", timeout) for k in range(max(1, repeat))]
    for k, r in enumerate(runs[1:], 2):
        diff = same_run(runs[0], r)
        if diff:
            raise RuntimeError(f"{name}: run 1 and run {k} of real Batsim differ: {diff}")
    run = runs[0]
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(tmp / "in", dest)
    gzip_to(run["log"], dest / "messages.jsonl.gz")
    for suffix in OUTPUTS:
        src = Path(f"{run['prefix']}{suffix}")
        if gzip_csv:
            gzip_to(src, dest / f"out{suffix}.gz")
        else:
            shutil.copy(src, dest / f"out{suffix}")
    meta = json.loads((dest / SCENARIO_FILE).read_text())
    rel = [a.replace(str(tmp / "in") + "/", "").replace(str(run["prefix"]), "out") for a in run["cmd"]]
    rel = [a.rsplit(":", 1)[0] + ":PORT" if a.startswith("tcp://") else a for a in rel]
    rel[0] = "batsim"
    meta["recorded_with"] = {"batsim_version": version, "command": rel,
                             "endpoint": "tcp://localhost:PORT (probe bound at tcp://127.0.0.1:PORT)"}
    (dest / SCENARIO_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    nlines = sum(1 for _ in run["log"].open())
    return f"{name}: {nlines} messages, {run['wall']:.2f} s" + (f", {repeat} identical runs" if repeat > 1 else "")


def copy_golden(src: Path, dst: Path) -> None:
    """Copy the golden recordings; their scheduler script is kept as ``.py.txt`` (reference only: it is
    not the repo's code style, and ``conformance.probe.Probe`` with default options reproduces it)."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir()):
        if f.is_file():
            name = f.name + ".txt" if f.suffix == ".py" else f.name
            shutil.copy(f, dst / name)
            (dst / name).chmod(0o644)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", nargs="*", help="seeds (42 or seed042), hand-written names, or 'all'")
    ap.add_argument("--batsim", default="/work/batsim-local/bin/batsim")
    ap.add_argument("--out", type=Path, default=HERE.parent / "data" / "conformance")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--repeat", type=int, default=1, help="run Batsim this many times and require identity")
    ap.add_argument("--gzip-csv", action="store_true", help="store the output CSVs gzipped")
    ap.add_argument("--copy-golden", type=Path, default=None, metavar="SRC",
                    help="copy SRC (the batsim_golden directory) into tests/data/batsim_golden")
    ap.add_argument("--keep", action="store_true", help="keep the temporary working directories")
    ap.add_argument("--no-links", action="store_true",
                    help="record the link-less twins <name>_nolink of the scenarios named")
    args = ap.parse_args(argv)
    global KEEP
    KEEP = args.keep
    if args.copy_golden:
        copy_golden(args.copy_golden, HERE.parent / "data" / "batsim_golden")
        print(f"copied {args.copy_golden} -> {HERE.parent / 'data' / 'batsim_golden'}")
    which: list[str] = []
    for w in args.which:
        which += (list(scenarios.HAND) + [str(s) for s in DEFAULT_SEEDS]) if w == "all" else [w]
    if args.no_links:
        which = [scenarios.scenario_name(w) + ("" if scenarios.scenario_name(w).endswith(scenarios.NOLINK)
                                               else scenarios.NOLINK) for w in which]
    version = subprocess.run([args.batsim, "--version"], capture_output=True, text=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    failures = []
    for w in which:
        try:
            print(record(w, args.batsim, args.out, args.timeout, args.repeat, args.gzip_csv, version), flush=True)
        except Exception as err:  # report every failure, keep going, exit 1
            failures.append(w)
            print(f"FAILED {w}: {err}", flush=True)
    if failures:
        print(f"{len(failures)} scenario(s) failed: {' '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
