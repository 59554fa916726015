#!/usr/bin/env python3
"""Record Maui's schedule of the conformance scenarios with a Maui simulator binary.

usage (from the repository root)::

    MAUI=$HOME/refs/maui/bin/maui .venv/bin/python tests/conformance/maui/record.py [NAME ... | all]
        [--out tests/data/maui_ref] [--timeout 600] [--keep DIR]

For each scenario a fresh Maui home directory is written (:func:`conformance.maui.traces.write_home`),
``$MAUI`` runs in it (``MAUIHOMEDIR``; it listens on a free loopback port) until the trace is done, and
``<out>/<name>.csv`` receives ``job,tasks,submit,start,end,hosts`` per job from ``stats/simstat.out``
(hosts: the 0-based node indices Maui allocated, ``;``-separated); ``<out>/MAUI_COMMIT`` the binary's
build commit when ``$MAUI/../../COMMIT`` exists.  A job Maui held or removed (MJob.c ``MJobSetHold``, which
the simulator logs at every LOGLEVEL) has no simstat record: it is written with empty start, end and
hosts (it never ran).  A run that misses any other job or fails is an error.  A scenario with ``outages``
is driven through Maui's client commands while it runs (:func:`drive`).  With
fairshare on, Maui steps through idle gaps (``MAUI_SIM_IDLEJUMP=off``, :func:`fairshare`).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from conformance.maui.scenarios import SCENARIOS, Job, Scenario, jobs  # noqa: E402
from conformance.maui.traces import node_name, parse_simstat, write_jobs_home  # noqa: E402

OUT = HERE.parent.parent / "data" / "maui_ref"


def free_port() -> int:
    """Two consecutive free loopback ports (Maui binds PORT and PORT + 1)."""
    for _ in range(100):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            p = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", p + 1))
                except OSError:
                    continue
            return p
    raise RuntimeError("no two consecutive free ports")


def fairshare(cfg_text: str) -> bool:
    """The maui.cfg lines turn fairshare on (FSPOLICY other than NONE).  The trace-time patch's idle-gap
    jump rotates the fairshare windows once per jump, not once per window skipped (its README), so the
    recorder turns the jump off for them (``MAUI_SIM_IDLEJUMP=off``: Maui steps poll by poll)."""
    for line in cfg_text.splitlines():
        parts = line.split("#", 1)[0].split()
        if len(parts) == 2 and parts[0].upper() == "FSPOLICY" and parts[1].upper() not in ("NONE", "OFF", "FALSE"):
            return True
    return False


def hosts(field: str) -> str:
    """Maui's allocated host list (``n001:n002`` or ``[n001][n002]``) as 0-based indices ``0;1``."""
    names = [t for t in field.replace("[", " ").replace("]", " ").replace(":", " ").replace(",", " ").split()
             if t.startswith("n") and t[1:].isdigit()]
    return ";".join(str(int(n[1:]) - 1) for n in names)


def run(sc: Scenario, maui: str, home: Path, timeout: float) -> list[dict]:
    """Run ``maui`` on ``sc`` in ``home``; Maui's records, one per job."""
    t = time.monotonic()
    recs = run_jobs(jobs(sc), sc.nodes, sc.poll, sc.cfg_text(), maui, home, timeout, sc)
    print(f"{sc.name}: {len(recs)} jobs in {time.monotonic() - t:.1f} s")
    return recs


def run_jobs(js: list[Job], nodes: int, poll: int, cfg_text: str, maui: str, home: Path,
             timeout: float, sc: Scenario | None = None) -> list[dict]:
    """Run ``maui`` on jobs ``js`` in a fresh home ``home`` (node states and classes of ``sc``); its
    records, one per job, by job name (start None: Maui held or removed the job)."""
    changes = node_changes(sc, poll) if sc is not None else []
    if changes:
        cfg_text += f"SIMSTOPITERATION {changes[0][0]}\n"
    write_jobs_home(js, nodes, poll, cfg_text, home, free_port(), sc)
    env = {**os.environ, "MAUIHOMEDIR": str(home)}
    if fairshare(cfg_text) or changes:
        env["MAUI_SIM_IDLEJUMP"] = "off"    # step through idle gaps: windows then rotate as without the jump
    with open(home / "stdout.txt", "w") as out:
        if changes:
            drive(maui, home, env, out, changes, timeout)
        else:
            subprocess.run([maui], cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                           check=False)
    recs = parse_simstat(home / "stats" / "simstat.out")
    want = {j.name: j for j in js}
    got = {r["job"] for r in recs}
    held = held_jobs(home / "log" / "maui.log")
    lost = sorted(set(want) - got - held)
    if lost or not got <= set(want):
        raise RuntimeError(f"Maui recorded {len(got)} of {len(want)} jobs (missing {lost[:5]}); see {home}")
    recs += [{"job": n, "tasks": want[n].tasks, "submit": want[n].submit, "start": None, "end": None, "hosts": ""}
             for n in sorted(set(want) - got)]
    return sorted(recs, key=lambda r: r["job"])


def node_changes(sc: Scenario, poll: int) -> list[tuple[int, str, list[str]]]:
    """The scenario's outages as (iteration to pause after, state, node names), by iteration.  With the idle
    jump off, iteration i >= 1 runs at T0 + i·poll (iterations 0 and 1 at T0 + poll: MSys.c
    ``MSysUpdateTime``), and a state set while paused after iteration i applies at iteration i + 1 (MSim.c
    ``MSimRMGetInfo`` → MRM.c ``MRMNodePreUpdate``: ``N->NewState``), i.e. at T0 + (i + 1)·poll."""
    by: dict[tuple[int, str], list[str]] = {}
    for a, b, ns in sc.outages:
        for t, state in ((a, "Down"), (b, "Idle")):
            if state == "Idle" and not b:
                continue
            if t % poll or t < 2 * poll:
                raise ValueError(f"{sc.name}: outage time {t} is not a poll >= 2 polls after T0")
            by.setdefault((t // poll - 1, state), []).extend(node_name(n) for n in ns)
    return [(k, st, names) for (k, st), names in sorted(by.items())]


def drive(maui: str, home: Path, env: dict, out, changes: list[tuple[int, str, list[str]]], timeout: float) -> None:
    """Run ``maui`` paused at each change's iteration (SIMSTOPITERATION, then ``schedctl -s``), set the
    nodes' state with ``mnodectl modify state=<S> <node>`` (UserI.c ``MUINodeCtl``: simulation mode only),
    and resume (``schedctl -r`` after the last)."""
    tools = Path(maui).resolve().parent
    proc = subprocess.Popen([maui], cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT)
    end = time.monotonic() + timeout

    def client(*args: str) -> str:
        r = subprocess.run([str(tools / args[0]), *args[1:]], cwd=home, env=env, capture_output=True, text=True,
                           timeout=60, check=False)
        return r.stdout + r.stderr

    try:
        for i, (it, state, names) in enumerate(changes):
            while True:                         # paused: SIMSTOPITERATION back to -1 (MSim.c MSimProcessEvents)
                if proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError(f"Maui ended or timed out before iteration {it}; see {home}")
                got = client("schedctl", "-l", "SIMSTOPITERATION").split("SIMSTOPITERATION")
                if len(got) > 1 and got[1].split()[:1] == ["-1"]:
                    break
                time.sleep(0.1)
            for n in names:
                client("mnodectl", "modify", f"state={state}", n)
            if i + 1 < len(changes):
                client("schedctl", "-s", str(changes[i + 1][0]))
            else:
                client("schedctl", "-r")
        proc.wait(timeout=max(1.0, end - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()


def held_jobs(log: Path) -> set[str]:
    """The jobs MJob.c ``MJobSetHold`` held or removed: its trace line ``MJobSetHold(<job>,...`` (DBG 0 in
    simulation mode)."""
    if not log.exists():
        return set()
    out = set()
    for line in log.read_text(errors="replace").splitlines():
        i = line.find("MJobSetHold(")
        if i >= 0:
            out.add(line[i + len("MJobSetHold("):].split(",", 1)[0])
    return out


def write(sc: Scenario, recs: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{sc.name}.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["job", "tasks", "submit", "start", "end", "hosts"])
        for r in recs:
            w.writerow([r["job"], r["tasks"], r["submit"], "" if r["start"] is None else r["start"],
                        "" if r["end"] is None else r["end"], hosts(r["hosts"])])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", default=["all"])
    ap.add_argument("--maui", default=os.environ.get("MAUI"), help="Maui simulator binary (default $MAUI)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--keep", type=Path, help="keep the Maui home directories under this directory")
    a = ap.parse_args(argv)
    if not a.maui or not os.access(a.maui, os.X_OK):
        print("record.py: set $MAUI (or --maui) to the Maui simulator binary", file=sys.stderr)
        return 2
    names = list(SCENARIOS) if a.names == ["all"] else a.names
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        print(f"record.py: unknown scenario(s) {', '.join(bad)}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    base = a.keep or Path(tempfile.mkdtemp(prefix="maui-ref-"))
    for n in names:
        home = base / n
        shutil.rmtree(home, ignore_errors=True)
        write(SCENARIOS[n], run(SCENARIOS[n], a.maui, home, a.timeout), a.out)
    commit = Path(a.maui).resolve().parent.parent / "COMMIT"
    if commit.exists():
        (a.out / "MAUI_COMMIT").write_text(commit.read_text())
    if not a.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
