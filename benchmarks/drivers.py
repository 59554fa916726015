"""Direct driver vs pybatsim path vs a minimal C++ loop: wall time, peak RSS, jobs/s, cost per message.

    .venv/bin/python benchmarks/drivers.py                                   # everything (~40 min)
    .venv/bin/python benchmarks/drivers.py --traces kth                      # KTH-SP2 only (~2 min)
    .venv/bin/python benchmarks/drivers.py --traces curie --schedulers easy fcfs --drivers direct
    .venv/bin/python benchmarks/drivers.py --traces kth --batsim /path/to/batsim   # + real Batsim

For KTH-SP2 (data/swf), SDSC-BLUE and CEA-Curie (../shared/data/swf, or ``--data DIR``; skipped when
absent) and the schedulers FCFS, EASY-FCFS, EASY-SQF, conservative, Maui, CREASY and LOS, each runs in
a fresh process (so its peak RSS is its own) through the direct driver and through pybatsim's
``Batsim`` class, and prints one row with:

- ``load``: reading the workload and platform; ``sim``: the simulation alone (what the targets are
  about); ``RSS``: the process's peak resident memory; ``jobs/s`` of the simulation;
- per message, the engine's and the scheduler side's cost in µs (scheduler side = time inside the
  driver: callbacks and, on the pybatsim path, pybatsim's parsing; engine = the rest);
- ``pyb/dir``: the pybatsim path's simulation time over the direct driver's;
- ``comp/pure``: the simulation time over the same run's with ``BATFEED_PURE=1`` in the
  environment (the pure-Python path of the compiled kernel); by default for the direct driver only
  (``--pure all|none``); in parentheses when the compiled kernel is not in use (not built, or stale
  after an edit: ``scripts/bootstrap.sh`` rebuilds it), the two runs then being pure Python;
- ``xC++``: the simulation time over the C++ floor's on the same jobs, measured in the same run:
  ``benchmarks/floor_easy.cpp``, a minimal count-based EASY-FCFS / FCFS loop with no outputs and no
  checks (``benchmarks/cpp_floor.py``; it gives the start times of batfeed's EASY and FCFS on
  KTH-SP2 and CEA-Curie), built once per run with the system compiler (``-O2 -std=c++17``; without
  one, one line says so and the column is ``-``), best of 3.  ``easy``/``fcfs``: against the floor
  of the same algorithm; ``easy*``: another scheduler or policy, against the EASY-FCFS floor.  The
  floor's own times are printed as rows ``C++ easy``/``C++ fcfs`` after each trace's conversion.

Conversion (SWF -> workload JSON + platform) is done once per trace, in its own process, and
reported with its own peak RSS.  ``--batsim PATH`` also runs real Batsim with the same scheduler
over ZeroMQ (``batfeed schedule``) on the same inputs and prints its wall time, the ratio to the
direct driver and its whole cost per message (engine column: Batsim + ZeroMQ + scheduler; real
Batsim cannot run the in-process drivers).  The targets of the fast-path issues are printed with
the ratio measured/target (< 1: met), the C++ ratios among them (KTH-SP2 EASY <= 15x, CEA-Curie
EASY <= 6x, direct driver).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpp_floor  # noqa: E402  (benchmarks/ is not a package)
from memory import batfeed_command, measure  # noqa: E402

TRACES = {
    "kth": ("data/swf/KTH-SP2-1996-2.1-cln.swf.gz", True),
    "blue": ("swf/SDSC-BLUE-2000-4.2-cln.swf.gz", False),
    "curie": ("swf/CEA-Curie-2011-2.1-cln.swf.gz", False),
}
SCHEDULERS = {
    "fcfs": ("fcfs", {}),
    "easy": ("easy", {}),
    "easy-sqf": ("easy", {"policy": "SQF"}),
    "conservative": ("conservative", {}),
    "maui": ("maui", {}),
    "maui-counts": ("maui", {"mechanics": "counts"}),
    "creasy": ("creasy", {"alpha": 6000}),
    "los": ("los", {}),
}
# issue 27's targets (simulation seconds; peak RSS in bytes)
TARGETS = {("kth", "easy", "direct"): ("sim", 0.15), ("curie", "easy", "direct"): ("sim", 2.5),
           ("curie", "fcfs", "direct"): ("sim", 1.5), ("curie", "conservative", "direct"): ("sim", 30.0),
           ("curie", "maui", "direct"): ("sim", 20.0), ("curie", "easy", "direct", "rss"): ("rss", 400e6)}
KERNEL_NOTES: set[str] = set()     # the reasons already printed for runs without the compiled kernel
FLOOR_TARGETS = {("kth", "easy", "direct"): 15.0, ("curie", "easy", "direct"): 6.0}   # sim / C++ floor


def worker(platform: str, workload: str, scheduler: str, options: str, driver: str) -> None:
    """One simulation in this process; prints a JSON line (times in s, RSS in bytes)."""
    from batfeed.engine import load_simulation
    from batfeed.registry import make_scheduler
    from batfeed.runner import in_process_driver

    t0 = time.perf_counter()
    sim = load_simulation(platform, [workload])
    load = time.perf_counter() - t0
    link = in_process_driver(make_scheduler(scheduler, json.loads(options)), driver)
    # the sum of start times, compared with the C++ floor's: the submit times plus the tracer's waits (the run
    # frees its finished jobs, and the compiled tracer's methods cannot be wrapped); None if a job was rejected
    subs = math.fsum(j.subtime for w in sim.workloads.values() for j in w.jobs)
    t1 = time.perf_counter()
    result = sim.run(link, None)
    wall = time.perf_counter() - t1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    sum_start = subs + math.fsum(sim.tracer.waits) if sim.tracer.nb_rejected == 0 else None
    print(json.dumps({"load": load, "sim": wall, "sched": sim.scheduling_time, "messages": result.messages,
                      "jobs": result.counts["submitted"], "driver": result.driver, "rss": rss, "sum_start": sum_start,
                      "kernel": kernel_state()}))


def kernel_state() -> tuple[str, str]:
    """("compiled" | "pure", why) of this process (batfeed/kernel.py)."""
    try:
        from batfeed import kernel

        s = kernel.state()
        return s["path"], s.get("why", "")
    except (ImportError, AttributeError, KeyError):
        return "pure", "no batfeed.kernel"


def run_child(cmd: list[str], timeout: float = 7200, pure: bool = False) -> str:
    """Run ``cmd`` and return its stdout (one simulation per process: its own peak RSS);
    ``pure``: with ``BATFEED_PURE=1`` (the compiled kernel's pure-Python path)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("BATFEED_PURE", None)
    if pure:
        env["BATFEED_PURE"] = "1"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}… failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def real_batsim(batsim: str, platform: Path, workload: Path, scheduler: str, options: dict, out: Path) -> float:
    """Real Batsim + ``batfeed schedule`` over ZeroMQ on loopback; its wall time."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sched = subprocess.Popen([str(REPO / ".venv/bin/batfeed"), "schedule", scheduler, "--socket",
                              f"tcp://127.0.0.1:{port}", "--options", json.dumps(options)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0 = time.perf_counter()
        subprocess.run([batsim, "-p", str(platform), "-w", str(workload), "-e", str(out), "-s",
                        f"tcp://127.0.0.1:{port}", "--verbosity", "quiet", "--disable-schedule-tracing"],
                       check=True, capture_output=True, timeout=7200)
        return time.perf_counter() - t0
    finally:
        sched.wait(timeout=60)


HEAD = (f"{'trace':6} {'scheduler':13} {'driver':9} {'jobs':>7} {'msgs':>7} {'load s':>7} {'sim s':>8} "
        f"{'RSS MB':>7} {'jobs/s':>8} {'µs/msg engine':>14} {'µs/msg sched':>13} {'pyb/dir':>8} {'comp/pure':>9} "
        f"{'xC++':>10}")


def row(name: str, sched: str, driver: str, jobs: object = "", msgs: object = "", load: str = "", sim: str = "",
        rss: str = "", jps: str = "", engine: str = "", sched_us: str = "", pyb: str = "", pure: str = "",
        cpp: str = "", note: str = "") -> str:
    return (f"{name:6} {sched:13} {driver:9} {jobs!s:>7} {msgs!s:>7} {load:>7} {sim:>8} {rss:>7} {jps:>8} "
            f"{engine:>14} {sched_us:>13} {pyb:>8} {pure:>9} {cpp:>10}{note}").rstrip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    ap.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS), choices=list(SCHEDULERS))
    ap.add_argument("--drivers", nargs="+", default=["direct", "pybatsim"], choices=["direct", "pybatsim"])
    ap.add_argument("--pure", choices=["direct", "all", "none"], default="direct",
                    help="rows also run with BATFEED_PURE=1 for comp/pure (default: direct driver only)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="../shared/data")
    ap.add_argument("--workdir", type=Path, help="keep converted inputs here (default: a temporary directory)")
    ap.add_argument("--batsim", help="also time real Batsim (this binary) with the same scheduler over ZeroMQ")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0
    py = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable
    targets = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        exe, how = cpp_floor.build(tmp)
        print(f"C++ floor built with {how}" if exe else f"C++ floor skipped: {how}; column xC++ is -")
        print("sim s: simulation alone; µs/msg: engine and scheduler side per Batsim message; pyb/dir: pybatsim "
              "path / direct driver;\ncomp/pure: compiled / BATFEED_PURE=1 sim time; xC++: sim / C++ floor sim "
              "of the same jobs (easy, fcfs: same algorithm; easy*: vs the EASY-FCFS floor)\n")
        print(HEAD, flush=True)
        for name in args.traces:
            rel, shipped = TRACES[name]
            trace = REPO / rel if shipped else args.data / rel
            if not trace.exists():
                print(f"skip {name}: {trace} not found (give --data)")
                continue
            out = work / name
            cwall, crss = measure([*batfeed_command(), "convert", "swf", str(trace), "-o", str(out), "--name", name])
            platform, workload = out / f"{name}_platform.xml", out / f"{name}.json"
            nb_jobs = json.loads((out / f"{name}_report.json").read_text())["kept"]
            print(row(name, "convert", "", nb_jobs, sim=f"{cwall:.2f}", rss=f"{crss / 1e6:.0f}",
                      note=f"  ({crss / max(nb_jobs, 1):.0f} B/job)"), flush=True)
            floor = cpp_floor.floors(exe, workload, tmp) if exe else None
            for mode, f in (floor or {}).items():
                print(row(name, f"C++ {mode}", "floor", int(f["started"]), sim=f"{f['seconds']:.4f}",
                          jps=f"{f['started'] / f['seconds']:.0f}",
                          note=f"  (best of 3, {int(f['decisions'])} decisions, mean wait {f['mean_wait']:.0f} s)"),
                      flush=True)
            for sched in args.schedulers:
                targets += run_scheduler(args, py, name, sched, platform, workload, floor, work)
    if targets:
        print("\ntargets (measured / target; < 1 met):")
        for what, value, target, unit in targets:
            print(f"  {what}: {value:.2f} {unit} vs {target:g} {unit} -> {value / target:.2f}")
    return 0


def run_scheduler(args: argparse.Namespace, py: str, name: str, sched: str, platform: Path, workload: Path,
                  floor: dict | None, work: Path) -> list[tuple]:
    """The rows of one scheduler on one trace (each driver, then real Batsim); returns its targets."""
    sname, opts = SCHEDULERS[sched]
    measured, targets = {}, []
    cmd = [py, __file__, "--worker", str(platform), str(workload), sname, json.dumps(opts)]
    for drv in args.drivers:
        r = json.loads(run_child([*cmd, drv]).strip().splitlines()[-1])
        measured[drv] = r
        pure = ""
        if args.pure == "all" or args.pure == drv:
            rp = json.loads(run_child([*cmd, drv], pure=True).strip().splitlines()[-1])
            pure = f"{r['sim'] / rp['sim']:.2f}"
            path, why = r.get("kernel", ("pure", "?"))
            if path != "compiled":        # both runs were pure Python: the ratio is only noise
                pure = f"({pure})"
                if why not in KERNEL_NOTES:
                    KERNEL_NOTES.add(why)
                    print(f"comp/pure in parentheses: the compiled kernel is not in use ({why})", flush=True)
        pyb = f"{r['sim'] / measured['direct']['sim']:.1f}x" if drv == "pybatsim" and "direct" in measured else ""
        cpp = cpp_floor.ratio_cell(r["sim"], sname, opts, floor)
        mode = cpp_floor.FAMILY.get(sname) if floor and not opts else None
        differ = mode is not None and r.get("sum_start") not in (None, floor[mode]["sum_start"])
        print(row(name, sched, r["driver"], r["jobs"], r["messages"], f"{r['load']:.2f}", f"{r['sim']:.2f}",
                  f"{r['rss'] / 1e6:.0f}", f"{r['jobs'] / r['sim']:.0f}",
                  f"{(r['sim'] - r['sched']) / r['messages'] * 1e6:.1f}", f"{r['sched'] / r['messages'] * 1e6:.1f}",
                  pyb, pure, cpp, "  (start times differ from the C++ floor's)" if differ else ""), flush=True)
        key = (name, sched, drv)
        if key in TARGETS:
            targets.append((f"{name} {sched} {drv} simulation", r["sim"], TARGETS[key][1], "s"))
        if key + ("rss",) in TARGETS:
            targets.append((f"{name} {sched} {drv} peak RSS", r["rss"] / 1e6, TARGETS[key + ("rss",)][1] / 1e6, "MB"))
        if key in FLOOR_TARGETS and floor:
            targets.append((f"{name} {sched} {drv} simulation / C++ floor", r["sim"] / floor["easy"]["seconds"],
                            FLOOR_TARGETS[key], "x"))
    if args.batsim and "direct" in measured:
        d = measured["direct"]
        bw = real_batsim(args.batsim, platform, workload, sname, opts, work / f"{name}_{sched}_batsim")
        print(row(name, sched, "batsim", sim=f"{bw:.2f}", jps=f"{d['jobs'] / bw:.0f}",
                  engine=f"{bw / d['messages'] * 1e6:.1f}", pyb=f"{bw / d['sim']:.0f}x",
                  cpp=cpp_floor.ratio_cell(bw, sname, opts, floor),
                  note="  (real Batsim 4.2.1 + batfeed schedule over ZeroMQ; µs/msg: everything, pyb/dir: "
                       "Batsim / direct)"), flush=True)
    return targets


if __name__ == "__main__":
    sys.exit(main())
