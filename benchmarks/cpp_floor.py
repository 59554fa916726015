"""The C++ floor: a minimal EASY-FCFS / FCFS loop (``floor_easy.cpp``) timed on the benchmark's jobs.

    .venv/bin/python benchmarks/cpp_floor.py WORKLOAD.json              # build, time EASY and FCFS
    .venv/bin/python benchmarks/cpp_floor.py WORKLOAD.json --check      # + batfeed's EASY/FCFS waits

The fast-path targets are ratios to this loop measured in the same run (e.g. KTH-SP2 EASY-FCFS
<= 15x, CEA-Curie <= 6x).  It is built from ``benchmarks/floor_easy.cpp`` with the system compiler
(``$CXX``, else ``c++``/``g++``/``clang++`` on PATH, ``-O2 -std=c++17``) into a temporary
directory; without a compiler, :func:`build` returns the reason and the benchmarks print one line
and go on.  The jobs reach it as a text dump of the workload the benchmark simulates
(:func:`dump_workload`: machines, then ``subtime res walltime runtime`` per job in Batsim's
submission order), so reading JSON is not part of the comparison, and its time excludes reading
(std::chrono around the simulation, best of ``repeat`` repetitions in one process).

The loop does the work of batfeed's ``easy`` (defaults: policy FCFS, reservation "count") and
``fcfs`` schedulers, without machine ids, outputs or checks; on KTH-SP2 and CEA-Curie its start
times are batfeed's exactly (``--check``: same sum of start times, same mean wait).  It decides once
per instant, where Batsim may split an instant's events over several messages, so on other
workloads the waits could differ slightly (``--check`` prints both).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "floor_easy.cpp"
FAMILY = {"fcfs": "fcfs", "easy": "easy"}     # batfeed scheduler name -> floor mode doing the same work


def compiler() -> str | None:
    """``$CXX`` if set, else the first of c++, g++, clang++ on PATH (None: none)."""
    cxx = os.environ.get("CXX")
    if cxx:
        return shutil.which(cxx)
    return next((p for p in map(shutil.which, ("c++", "g++", "clang++")) if p), None)


def build(outdir: str | Path) -> tuple[Path | None, str]:
    """Compile the floor into ``outdir``: (binary, compiler line) or (None, why not)."""
    cxx = compiler()
    if cxx is None:
        return None, "no compiler (c++, g++, clang++ not on PATH, $CXX unset)"
    exe = Path(outdir) / "floor_easy"
    cmd = [cxx, "-O2", "-std=c++17", "-o", str(exe), str(SOURCE)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{cxx} failed ({err})"
    if proc.returncode != 0:
        return None, f"{cxx} failed: {proc.stderr.strip()[-300:]}"
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()
    return exe, f"{Path(cxx).name} -O2 -std=c++17 ({version[0] if version else '?'})"


def write_jobs(path: str | Path, nb_machines: int, rows: Iterable[tuple[float, int, float, float]]) -> int:
    """Write the floor's input: ``rows`` (subtime, res, walltime (<= 0: none), runtime), already in
    Batsim's submission order (subtime, then job id string).  Returns the number of jobs."""
    lines = [f"{float(s)!r} {int(q)} {float(w)!r} {float(r)!r}\n" for s, q, w, r in rows]
    with open(path, "w", encoding="ascii") as f:
        f.write(f"{int(nb_machines)} {len(lines)}\n")
        f.writelines(lines)
    return len(lines)


def dump_workload(workload: str | Path, out: str | Path) -> int:
    """The floor's input from a Batsim workload of ``delay`` profiles (what ``batfeed convert swf``
    writes); the platform is ``nb_res`` identical machines.  Returns the number of jobs."""
    data = json.loads(Path(workload).read_text())
    profiles = data["profiles"]
    jobs = sorted(data["jobs"], key=lambda j: (float(j["subtime"]), str(j["id"])))
    rows = []
    for j in jobs:
        p = profiles[j["profile"]]
        if p.get("type") != "delay":
            raise ValueError(f"job {j['id']}: profile {j['profile']} is {p.get('type')}, the floor needs delay")
        rows.append((j["subtime"], j["res"], j.get("walltime", -1), p["delay"]))
    return write_jobs(out, data["nb_res"], rows)


def run(exe: str | Path, mode: str, jobs_file: str | Path, repeat: int = 3) -> dict[str, float]:
    """One run of the floor (``mode``: easy or fcfs); its printed ``key=value`` pairs, numbers as floats
    (``seconds``: the best of ``repeat`` repetitions of the simulation)."""
    out = subprocess.run([str(exe), mode, str(jobs_file), str(repeat)], capture_output=True, text=True,
                         check=True, timeout=3600).stdout
    pairs = dict(kv.split("=", 1) for kv in out.split())
    return {k: (v if k == "mode" else float(v)) for k, v in pairs.items()}


def floors(exe: str | Path, workload: str | Path, workdir: str | Path, repeat: int = 3) -> dict[str, dict] | None:
    """Dump ``workload`` (in a child process, so the parent keeps no JSON) and time both modes; None,
    with one line saying why, if that fails (e.g. profiles other than ``delay``)."""
    jobs_file = Path(workdir) / (Path(workload).stem + "_floor.txt")
    try:
        subprocess.run([sys.executable, __file__, "--dump", str(workload), str(jobs_file)], check=True,
                       capture_output=True, text=True)
        return {mode: run(exe, mode, jobs_file, repeat) for mode in ("easy", "fcfs")}
    except subprocess.CalledProcessError as err:
        why = (err.stderr or "").strip().splitlines()
        print(f"C++ floor skipped for {Path(workload).name}: {why[-1] if why else err}", flush=True)
        return None


def ratio_cell(sim: float, scheduler: str, options: dict, floor: dict[str, dict] | None) -> str:
    """``sim`` over the floor of its family: ``123 easy`` (same algorithm), ``123 easy*`` (another
    scheduler or policy, compared with the EASY-FCFS floor), ``-`` without a floor."""
    if not floor:
        return "-"
    mode = FAMILY.get(scheduler) if not options else None
    secs = floor[mode or "easy"]["seconds"]
    return f"{sim / secs:.0f} {mode or 'easy*'}" if secs > 0 else "-"


def check(workload: Path, exe: Path) -> int:
    """Mean waits of the floor and of batfeed's schedulers on ``workload`` (:func:`batfeed.api.simulate_jobs`:
    the embedded engine, direct driver); 1 if the start times differ."""
    import pandas as pd

    from batfeed.api import simulate_jobs

    data = json.loads(Path(workload).read_text())
    delay = {name: p["delay"] for name, p in data["profiles"].items()}
    jobs = pd.DataFrame({"id": [j["id"] for j in data["jobs"]], "subtime": [j["subtime"] for j in data["jobs"]],
                         "res": [j["res"] for j in data["jobs"]],
                         "walltime": [j.get("walltime", -1) for j in data["jobs"]],
                         "runtime": [delay[j["profile"]] for j in data["jobs"]]})
    nb = data["nb_res"]
    del data
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file = Path(tmp) / "jobs.txt"
        dump_workload(workload, jobs_file)
        for mode in ("easy", "fcfs"):
            f = run(exe, mode, jobs_file, 1)
            out = simulate_jobs(jobs, nb_machines=nb, scheduler=mode)
            starts = float(out["starting_time"].sum())
            same = starts == f["sum_start"]
            bad += not same
            print(f"{mode}: mean wait floor {f['mean_wait']:.6f} s, batfeed {out['waiting_time'].mean():.6f} s; "
                  f"sum of start times {'equal' if same else 'differ'} ({f['sum_start']:.0f}, {starts:.0f})")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", nargs="?", help="Batsim workload JSON of delay profiles (batfeed convert swf)")
    ap.add_argument("--check", action="store_true", help="also compare the mean waits with batfeed's")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dump", nargs=2, metavar=("WORKLOAD", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        dump_workload(*args.dump)
        return 0
    if not args.workload:
        ap.error("give a workload")
    with tempfile.TemporaryDirectory() as tmp:
        exe, how = build(tmp)
        if exe is None:
            print(f"C++ floor skipped: {how}")
            return 0
        print(f"C++ floor built with {how}")
        for mode, r in floors(exe, args.workload, tmp, args.repeat).items():
            print(f"{mode}: {int(r['jobs'])} jobs, {r['seconds'] * 1e3:.2f} ms (best of {args.repeat}), "
                  f"mean wait {r['mean_wait']:.3f} s, sum of start times {r['sum_start']:.0f}")
        return check(Path(args.workload), exe) if args.check else 0


if __name__ == "__main__":
    sys.exit(main())
