#!/usr/bin/env python3
"""Record scenarios of Batsim 4.2.1's test suite as replayable test data: inputs, messages and outputs.

usage (from the repo root)::

    .venv/bin/python tests/conformance/record_suite.py --batsim-src BATSIM_GIT_CHECKOUT --refs BATSIM_REF_PREFIX \\
        --out tests/data/engine/suite -k ID [-k ID ...]

For each scenario whose id contains one of the ``-k`` patterns, real Batsim (``REFS/bin/batsim``) runs with the
scheduler the test starts (batsched or pybatsim), through a ZeroMQ proxy that logs every message Batsim sends
and every reply.  ``OUT/<name>/`` then holds ``run.json`` (the Batsim arguments with the input files renamed,
and the exchanged messages as parsed JSON), the input files (platform, workloads, events, as Batsim's
repository has them at ``--tag``; LGPL-3.0, see OUT/README.md) and Batsim's ``_jobs.csv``,
``_machine_states.csv`` and energy files.  ``tests/test_engine_suite_replay.py`` replays them: the engine must
send the very same messages and write the very same files, without Batsim or the scheduler installed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import zmq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conformance.batsim_suite import (  # noqa: E402
    COMPARED,
    extract,
    free_port,
    kill_all,
    start,
    stop,
)
from conformance.batsim_suite_enum import Scenario, enumerate_scenarios  # noqa: E402

INPUT_FLAGS = {"-p": "platform", "--platform": "platform", "-w": "workload", "--workload": "workload",
               "--events": "events"}


def proxy(front: int, back: int, log: list[list[object]], done: threading.Event) -> None:
    """Bind REP on ``front`` (Batsim connects), connect REQ to ``back`` (the scheduler), log each pair."""
    ctx = zmq.Context()
    rep, req = ctx.socket(zmq.REP), ctx.socket(zmq.REQ)
    rep.bind(f"tcp://127.0.0.1:{front}")
    req.connect(f"tcp://127.0.0.1:{back}")
    rep.setsockopt(zmq.RCVTIMEO, 60_000)
    try:
        while not done.is_set():
            msg = rep.recv()
            req.send(msg)
            reply = req.recv()
            rep.send(reply)
            sent = json.loads(msg)
            log.append([sent, json.loads(reply)])
            if any(e.get("type") == "SIMULATION_ENDS" for e in sent.get("events", [])):
                break
    except zmq.Again:
        pass
    finally:
        rep.close(linger=0)
        req.close(linger=0)
        ctx.term()


def record(sc: Scenario, refs: Path, dest: Path) -> str:
    work = Path(tempfile.mkdtemp(prefix="record-suite-"))
    bat_args, sched_args, files = sc.resolved(str(work))
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
    log: list[list[object]] = []
    done = threading.Event()
    sched = thread = None
    if sched_args:
        back, front = free_port(), free_port()
        exe = {"batsched": refs / "bin" / "batsched", "pybatsim": refs / "venv" / "bin" / "pybatsim"}
        sched = start([str(exe[sched_args[0]]), *sched_args[1:], "-s", f"tcp://127.0.0.1:{back}"], work,
                      work / "sched.log")
        thread = threading.Thread(target=proxy, args=(front, back, log, done), daemon=True)
        thread.start()
        bat_args = [*bat_args, "-s", f"tcp://localhost:{front}"]
    try:
        proc = start([str(refs / "bin" / "batsim"), *bat_args], work, work / "sim.out", work / "sim.err")
        rc = proc.wait(timeout=120)
        stop(proc, 0)
    finally:
        done.set()
        if thread is not None:
            thread.join(timeout=10)
        if sched is not None:
            stop(sched, 5.0)
    if rc != 0:
        return f"Batsim exited with {rc}"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", sc.id.split("::")[1]).strip("_")
    out = dest / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    args: list[str] = []
    i = 0
    plain = [a for a in bat_args if not a.startswith("tcp://")]
    while i < len(plain):
        a = plain[i]
        if a == "-s":
            i += 2
            continue
        if a in INPUT_FLAGS and i + 1 < len(plain):
            src = Path(plain[i + 1])
            shutil.copyfile(src, out / src.name)
            args += [a, src.name]
            i += 2
            continue
        if a == "-e":
            args += [a, "batres"]
            i += 2
            continue
        if a in ("--sched-cfg-file",):
            raise SystemExit(f"{sc.id}: {a} is not supported by the recorder")
        args.append(a)
        i += 1
    for suffix in COMPARED:
        got = Path(str(work / "batres") + suffix)
        if got.is_file():
            shutil.copyfile(got, out / f"batsim{suffix}")
    (out / "run.json").write_text(json.dumps({"id": sc.id, "batsim_args": args, "sched_args": sched_args,
                                              "messages": log}, indent=None) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return f"{len(log)} messages -> {out}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batsim-src", type=Path, required=True)
    p.add_argument("--tag", default="v4.2.1")
    p.add_argument("--refs", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("-k", action="append", required=True, metavar="ID")
    args = p.parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix="record-suite-src-") as tmp:
            scenarios = enumerate_scenarios(extract(args.batsim_src, args.tag, Path(tmp)))
            chosen = [s for s in scenarios if any(k in s.id for k in args.k)]
            for sc in chosen:
                print(sc.id, record(sc, args.refs.resolve(), args.out.resolve()), file=sys.stderr)
    finally:
        kill_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
