#!/usr/bin/env python3
"""Run Batsim 4.2.1's own test scenarios with real Batsim and with ``batfeed batsim``, and compare the outputs.

usage (from the repo root)::

    .venv/bin/python tests/conformance/batsim_suite.py --batsim-src BATSIM_GIT_CHECKOUT \\
        --refs BATSIM_REF_PREFIX --out runs/batsim-suite [-k PATTERN] [--jobs N] [--timeout S] [--list]

Batsim's ``test``, ``platforms``, ``workloads`` and ``events`` at ``--tag`` (v4.2.1) are extracted with
``git archive`` into a temporary directory; the scenarios are those its pytest would run, Redis left out
(``batsim_suite_enum``).  Each scenario runs twice in ``OUT/runs/<id>/{batsim,batfeed}/``: the scheduler
exactly as the test starts it (``batsched -v ALGO [--variant_options_filepath F]``, ``pybatsim SCHED``, or
none) plus ``-s tcp://127.0.0.1:PORT``, then ``batsim`` (``REFS/bin/batsim``), or ``batfeed batsim``, with
the test's arguments plus ``-s tcp://localhost:PORT``; a free loopback port and a fresh scheduler per run.
Every process runs in its own process group, killed at the end of its run (and on exit or a signal).

Statuses: ``identical`` (``_jobs.csv``, ``_machine_states.csv`` and the energy files Batsim wrote are
byte-identical), ``differs`` (the first differing file and line), ``refused`` (batfeed exited non-zero
with one stderr line), ``batfeed-failed`` (traceback, timeout, several stderr lines, no outputs),
``batsim-failed`` (real Batsim failed or timed out; not counted), ``batsim-unstable`` (the outputs differ and
real Batsim, run twice more, does not repeat its own outputs: e.g. a pybatsim scheduler that iterates over a
``set`` of jobs, ordered by memory address; not counted).  Writes ``OUT/results.json`` and
``OUT/results.csv`` and prints a table and a summary.  ``-k`` keeps the ids containing PATTERN (repeatable:
any of them).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conformance.batsim_suite_enum import Scenario, enumerate_scenarios  # noqa: E402

STATUSES = ("identical", "differs", "refused", "batfeed-failed", "batsim-failed", "batsim-unstable")
COMPARED = ("_jobs.csv", "_machine_states.csv", "_consumed_energy.csv", "_pstate_changes.csv")
REQUIRED = ("_jobs.csv", "_machine_states.csv")      # batfeed must write these when Batsim did
SCHED_GRACE = 10.0          # robin's success-timeout: how long the scheduler may take to exit after the run
DEFAULT_BATFEED = HERE.parents[1] / ".venv" / "bin" / "batfeed"


# -- processes and ports ------------------------------------------------------------------------------------

_live: set[int] = set()             # process groups started here and not yet reaped
_live_lock = threading.Lock()
_stopping = threading.Event()       # set on Ctrl-C / SIGTERM: start() refuses new processes
_ports: set[int] = set()            # ports handed out during this run (never reused)
_ports_lock = threading.Lock()


def free_port() -> int:
    """A loopback port nothing listens on, not handed out before in this run."""
    with _ports_lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _ports:
                _ports.add(port)
                return port


def start(argv: list[str], cwd: Path, out: Path, err: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new process group (stdout to ``out``, stderr to ``err`` or ``out``, stdin closed)."""
    with _live_lock:
        if _stopping.is_set():
            raise KeyboardInterrupt
        with out.open("wb") as fo, open(err or os.devnull, "wb") as fe:
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=fo,
                                    stderr=fe if err else subprocess.STDOUT, start_new_session=True)
        _live.add(proc.pid)
    return proc


def stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Wait up to ``grace`` s for ``proc`` to exit, then TERM (and KILL) its whole process group."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    with _live_lock:
        _live.discard(proc.pid)


def kill_all() -> None:
    """Kill every process group still running and start no other (on exit, Ctrl-C or SIGTERM)."""
    _stopping.set()
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# -- one run ------------------------------------------------------------------------------------------------

@dataclass
class Run:
    """One side of a scenario: its exit status, wall time and messages."""

    rc: int | None = None           # None: timed out
    wall: float = 0.0
    stderr: str = ""
    outputs: str = ""               # the export prefix


def run_side(sc: Scenario, sim: list[str], refs: Path, work: Path, timeout: float) -> Run:
    """Run the scenario's scheduler and ``sim`` (the simulator's argv head) in ``work``."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bat_args, sched_args, files = sc.resolved(str(work))
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
    port = free_port()
    sched = None
    if sched_args:
        exe = {"batsched": refs / "bin" / "batsched", "pybatsim": refs / "venv" / "bin" / "pybatsim"}
        sched_argv = [str(exe[sched_args[0]]), *sched_args[1:], "-s", f"tcp://127.0.0.1:{port}"]
        sched = start(sched_argv, work, work / "sched.log")
    run = Run(outputs=str(work / "batres"))
    t0 = time.monotonic()
    try:
        proc = start([*sim, *bat_args, "-s", f"tcp://localhost:{port}"], work, work / "sim.out", work / "sim.err")
        try:
            run.rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.rc = None
        run.wall = round(time.monotonic() - t0, 3)
        stop(proc, 0)
    finally:
        if sched is not None:
            stop(sched, SCHED_GRACE if run.rc == 0 else 1.0)
    run.stderr = (work / "sim.err").read_text(encoding="utf-8", errors="replace")
    return run


# -- classification -----------------------------------------------------------------------------------------

def first_difference(a: Path, b: Path) -> dict[str, object] | None:
    """``None`` if the files are byte-identical, else the first differing line (1-based) of each."""
    da, db = a.read_bytes(), b.read_bytes()
    if da == db:
        return None
    la, lb = da.decode(errors="replace").splitlines(), db.decode(errors="replace").splitlines()
    i = next((k for k in range(min(len(la), len(lb))) if la[k] != lb[k]), min(len(la), len(lb)))
    end = "<end of file>"
    return {"line": i + 1, "batsim": la[i] if i < len(la) else end, "batfeed": lb[i] if i < len(lb) else end}


WARNING = re.compile(r"^\S+:\d+: \w*Warning: ")


def split_warnings(stderr: str) -> tuple[list[str], list[str]]:
    """The non-empty stderr lines, less Python warnings (``file:line: XWarning: ...`` + its source line)."""
    lines: list[str] = []
    warnings: list[str] = []
    for ln in (ln for ln in stderr.splitlines() if ln.strip()):
        if WARNING.match(ln):
            warnings.append(ln.split(": ", 1)[1])
        elif not (warnings and ln.startswith("  ") and not lines):    # the source line below a warning
            lines.append(ln)
    return lines, warnings


def classify(sc: Scenario, bs: Run, bf: Run) -> tuple[str, str, dict[str, object]]:
    """Status, one-line detail and extra data (``diff`` or ``refusal``) of a scenario's two runs."""
    expect = f" (as the test expects: it fails with '{sc.expects_failure}' otherwise)" if sc.expects_failure else ""
    if bs.rc is None:
        return "batsim-failed", f"Batsim timed out{expect}", {}
    if bs.rc != 0 or not Path(bs.outputs + "_jobs.csv").is_file():
        return "batsim-failed", f"Batsim exited with {bs.rc}{expect}", {}
    lines, warnings = split_warnings(bf.stderr)
    extra: dict[str, object] = {"batfeed_warnings": warnings} if warnings else {}
    if bf.rc is None:
        return "batfeed-failed", "batfeed timed out", {}
    if "Traceback (most recent call last)" in bf.stderr:
        return "batfeed-failed", f"traceback: {lines[-1] if lines else ''}", {}
    if bf.rc != 0:
        if len(lines) == 1:
            return "refused", lines[0], {"refusal": lines[0], **extra}
        return "batfeed-failed", f"exit {bf.rc}, {len(lines)} stderr lines: {lines[-1] if lines else ''}", {}
    if not Path(bf.outputs + "_jobs.csv").is_file():
        return "batfeed-failed", "exit 0 without _jobs.csv", {}
    for suffix in COMPARED:
        ref, got = Path(bs.outputs + suffix), Path(bf.outputs + suffix)
        if not ref.is_file():
            if suffix in REQUIRED and got.is_file():
                return "differs", f"{suffix}: batfeed wrote it, Batsim did not", {"diff": {"file": suffix}, **extra}
            continue
        if not got.is_file():
            return "differs", f"{suffix}: missing from batfeed's outputs", {"diff": {"file": suffix}, **extra}
        diff = first_difference(ref, got)
        if diff is not None:
            return ("differs", f"{suffix} line {diff['line']}: batsim `{diff['batsim']}` / batfeed `{diff['batfeed']}`",
                    {"diff": {"file": suffix, **diff}, **extra})
    return "identical", "", extra


def refusal_reason(line: str) -> str:
    """A refusal line without its prefix, paths, names and advice: what groups refusals together."""
    text = re.sub(r"^batfeed batsim: error: ", "", line)
    text = re.sub(r"(?<!\S)/\S*?(?=:?(\s|$))", "<path>", text)          # absolute paths, not -E/--energy
    text = re.sub(r"\b[^\s!]+![^\s:]+", "<job>", text)                    # job ids (workload!name)
    text = re.sub(r"\bprofile '[^']*'", "profile <name>", text)
    return re.split(r";|: (?:run|use) ", text)[0].strip()


def exemption(sc: Scenario) -> str:
    """The feature issue 26 lets batfeed refuse that the scenario uses (SMPI, usage trace, PFS, workflow,
    compute sharing), or ``""``."""
    if any(a in ("-W", "--workflow") for a in sc.batsim_args):
        return "workflow"
    if "--enable-compute-sharing" in sc.batsim_args:
        return "compute sharing"
    types: set[str] = set()
    for w in sc.workloads:
        try:
            types |= {str(p.get("type")) for p in json.loads(Path(w).read_text(encoding="utf-8"))["profiles"].values()}
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            continue
    if "smpi" in types:
        return "SMPI"
    if "usage_trace" in types:
        return "usage trace"
    if any(t.endswith("_pfs") or t == "data_staging" for t in types):    # not a run merely on a PFS platform
        return "PFS"
    return ""


# -- the suite ----------------------------------------------------------------------------------------------

def run_scenario(sc: Scenario, args: argparse.Namespace, out: Path) -> dict[str, object]:
    work = out / "runs" / re.sub(r"[^A-Za-z0-9_.-]+", "_", sc.id)
    bs = run_side(sc, [str(args.refs / "bin" / "batsim")], args.refs, work / "batsim", args.timeout)
    if bs.rc == 0:
        bf = run_side(sc, [str(args.batfeed), "batsim"], args.refs, work / "batfeed", args.timeout)
    else:
        bf = Run()                  # not needed: Batsim itself failed
    status, detail, extra = classify(sc, bs, bf)
    if status == "batsim-failed":
        bf = Run()
    elif status == "differs":       # is real Batsim itself repeatable here? (a scheduler may iterate a set)
        for k in (2, 3):
            again = run_side(sc, [str(args.refs / "bin" / "batsim")], args.refs, work / f"batsim-{k}", args.timeout)
            if again.rc == 0 and classify(sc, bs, again)[0] == "differs":
                status = "batsim-unstable"
                detail = (f"real Batsim's outputs differ from run to run (run {k}: "
                          f"{classify(sc, bs, again)[1][:100]}); batfeed: {detail}")
                break
    return {"id": sc.id, "status": status, "detail": detail, **extra, "exempt": exemption(sc), "test": sc.test,
            "params": sc.params,
            "batsim_args": sc.batsim_args, "sched_args": sc.sched_args, "expects_failure": sc.expects_failure,
            "batsim": {"rc": bs.rc, "wall": bs.wall}, "batfeed": {"rc": bf.rc, "wall": bf.wall},
            "dir": str(work)}


def summarise(results: list[dict[str, object]]) -> dict[str, object]:
    counts = Counter(str(r["status"]) for r in results)
    refusals = Counter(refusal_reason(str(r["refusal"])) for r in results if r["status"] == "refused")
    diffs = Counter(str(r["diff"]["file"]) for r in results if r["status"] == "differs")      # type: ignore[index]
    exempt = Counter(str(r["exempt"]) for r in results if r["status"] == "refused" and r["exempt"])
    return {"scenarios": len(results), "counted": len(results) - counts["batsim-failed"] - counts["batsim-unstable"],
            "counts": {s: counts[s] for s in STATUSES}, "refused_exempt": dict(exempt.most_common()),
            "refusal_reasons": dict(refusals.most_common()), "differing_files": dict(diffs.most_common())}


def report(results: list[dict[str, object]], summary: dict[str, object]) -> str:
    width = max((len(str(r["id"])) for r in results), default=10)
    rows = [f"{r['id']:<{width}}  {r['status']:<14}  {str(r['detail'])[:160]}" for r in results]
    counts: dict[str, int] = summary["counts"]          # type: ignore[assignment]
    lines = [*rows, "", f"{summary['scenarios']} scenarios, {summary['counted']} counted (Batsim ran): "
             + ", ".join(f"{s} {counts[s]}" for s in STATUSES)]
    exempt: dict[str, int] = summary["refused_exempt"]      # type: ignore[assignment]
    lines.append(f"refused for a feature issue 26 exempts (SMPI, usage trace, PFS, workflow, compute sharing): "
                 f"{sum(exempt.values())} ({', '.join(f'{k} {n}' for k, n in exempt.items()) or '-'})")
    for title, key in (("refusals by reason", "refusal_reasons"), ("differences by file", "differing_files")):
        groups: dict[str, int] = summary[key]               # type: ignore[assignment]
        if groups:
            lines += [f"{title}:", *(f"  {n:4d}  {reason}" for reason, n in groups.items())]
    return "\n".join(lines)


def write_results(out: Path, results: list[dict[str, object]], meta: dict[str, object]) -> None:
    (out / "results.json").write_text(json.dumps({**meta, "results": results}, indent=1) + "\n", encoding="utf-8")
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "status", "detail", "batsim_rc", "batfeed_rc", "batsim_wall", "batfeed_wall"])
        for r in results:
            bs, bf = r["batsim"], r["batfeed"]
            w.writerow([r["id"], r["status"], r["detail"], bs["rc"], bf["rc"], bs["wall"], bf["wall"]])  # type: ignore[index]


def extract(src: Path, tag: str, dest: Path) -> Path:
    """Batsim's test, platforms, workloads and events at ``tag``, extracted under ``dest``."""
    archive = subprocess.run(["git", "-C", str(src), "archive", tag, "test", "platforms", "workloads", "events"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "test"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batsim-src", type=Path, required=True, help="Batsim's git repository")
    p.add_argument("--tag", default="v4.2.1", help="the tag whose tests are run (default v4.2.1)")
    p.add_argument("--refs", type=Path, required=True, help="the reference installation (bin/batsim, bin/batsched, "
                                                             "venv/bin/pybatsim)")
    p.add_argument("--out", type=Path, default=Path("runs/batsim-suite"), help="output directory")
    p.add_argument("-k", action="append", default=[], metavar="PATTERN", help="keep ids containing PATTERN")
    p.add_argument("--jobs", type=int, default=2, help="scenarios run in parallel (default 2)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per simulator run (default 60)")
    p.add_argument("--batfeed", type=Path, default=DEFAULT_BATFEED, help="the batfeed executable")
    p.add_argument("--list", action="store_true", help="only list the scenarios")
    return p.parse_args(argv)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.refs = args.refs.resolve()
    for exe in (args.refs / "bin" / "batsim", args.refs / "bin" / "batsched", args.batfeed):
        if not exe.is_file():
            print(f"batsim_suite: {exe} not found", file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, _interrupt)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="batsim-suite-") as tmp:
        scenarios = enumerate_scenarios(extract(args.batsim_src, args.tag, Path(tmp)))
        total = len(scenarios)
        if args.k:
            scenarios = [s for s in scenarios if any(k.lower() in s.id.lower() for k in args.k)]
        if args.list:
            for s in scenarios:
                print(s.id, "|", " ".join(s.batsim_args), "|", " ".join(s.sched_args) or "(no scheduler)")
            print(f"{len(scenarios)} of {total} scenarios")
            return 0
        out = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        results: list[dict[str, object]] = []
        pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
        try:
            for r in pool.map(lambda s: run_scenario(s, args, out), scenarios):
                results.append(r)
                print(f"[{len(results)}/{len(scenarios)}] {r['status']:<14} {r['id']}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            print("batsim_suite: interrupted", file=sys.stderr)
            return 130
        finally:
            kill_all()
            pool.shutdown(wait=True, cancel_futures=True)
    summary = summarise(results)
    meta = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": shlex.join([os.path.relpath(sys.executable), *sys.argv]), "tag": args.tag,
            "enumerated": total, "selected": len(scenarios), "wall_seconds": round(time.monotonic() - t0, 1),
            "summary": summary}
    write_results(out, results, meta)
    print(report(results, summary))
    print(f"wall time {meta['wall_seconds']} s; results in {out}/results.json and results.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
