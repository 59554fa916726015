"""Run batfeed's ``maui`` scheduler on a Maui conformance scenario and compare it with Maui's recording.

The scenario becomes Batsim inputs: ``nodes`` zero-latency hosts (machine i = Maui's node ``n<i+1>``),
one delay job per trace job (subtime = submission − ``T0``, ``res`` = tasks, walltime = the request,
delay = the run time, ``user``/``group`` fields, ``queue``/``account``/``qos`` when the scenario sets them),
and batfeed's options ``config`` (the scenario's maui.cfg lines), ``interval`` (its poll) and ``poll`` (an
iteration at every poll while jobs wait, as Maui's loop: with BACKFILLDEPTH, a poll at which nothing
happened can still start a job).  It runs
through :func:`batfeed.runner.run_simulation`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from batfeed.platforms.generate import write_homogeneous_platform

from batfeed.runner import run_simulation
from conformance.maui.scenarios import T0, Job, Scenario, jobs

REF = Path(__file__).resolve().parent.parent.parent / "data" / "maui_ref"


def recording(name: str, ref: Path = REF) -> dict[str, dict]:
    """Maui's records of scenario ``name``: job -> {submit, start, end, hosts} (times from ``T0``; start and
    end None for a job Maui held or removed, which never ran)."""
    with open(ref / f"{name}.csv", newline="") as fh:
        return {r["job"]: {"submit": int(r["submit"]) - T0, "start": int(r["start"]) - T0 if r["start"] else None,
                           "end": int(r["end"]) - T0 if r["end"] else None, "hosts": r["hosts"]}
                for r in csv.DictReader(fh)}


def simulate(sc: Scenario, work: Path, options: dict | None = None) -> dict[str, tuple[float | None, str]]:
    """batfeed's start time (from ``T0``) and machines (``0;3;4``) of every job of ``sc`` (None, "" for a
    rejected job).  The scenario's down and drained nodes are unavailable from time 0 (a Batsim events
    file, as ``batfeed convert`` writes for a Maui resource trace's DEFINED/DRAINED nodes)."""
    work.mkdir(parents=True, exist_ok=True)
    platform = write_homogeneous_platform(work / "platform.xml", sc.nodes)
    profiles: dict[str, dict] = {}
    specs = []
    for j in jobs(sc):
        profiles.setdefault(f"d{j.runtime}", {"type": "delay", "delay": j.runtime})
        specs.append({"id": j.name, "subtime": j.submit - T0, "res": j.tasks, "walltime": j.wclimit,
                      "profile": f"d{j.runtime}", "user": j.user, "group": j.group,
                      **({"queue": j.cls} if sc.classes else {}), **({"account": j.account} if j.account else {}),
                      **({"qos": j.qos} if j.qos else {})})
    wl = work / "w.json"
    wl.write_text(json.dumps({"nb_res": sc.nodes, "jobs": specs, "profiles": profiles}))
    cfg = work / "maui.cfg"
    cfg.write_text(sc.cfg_text())
    opts = {"config": str(cfg), "interval": sc.poll, "poll": True, **(options or {})}
    evs = [(0, "machine_unavailable", sorted(sc.down + sc.drained))] if sc.down or sc.drained else []
    for a, b, ns in sc.outages:     # Maui sets their state at the iteration of that poll (record.py drive)
        evs += [(a, "machine_unavailable", sorted(ns))] + ([(b, "machine_available", sorted(ns))] if b else [])
    events = []
    if evs:
        events.append(work / "events.txt")
        events[0].write_text("".join(json.dumps({"timestamp": t, "type": k, "resources": " ".join(map(str, ns))}) + "\n"
                                     for t, k, ns in sorted(evs, key=lambda e: e[0])))
    run_simulation(platform, [wl], scheduler="maui", options=opts, events=events, export=work / "out",
                   machine_states=False)
    with open(work / "out_jobs.csv", newline="") as fh:
        return {r["job_id"].split("!")[-1]: ((float(r["starting_time"]), _machines(r["allocated_resources"]))
                                             if r["starting_time"] else (None, ""))
                for r in csv.DictReader(fh)}


def _machines(text: str) -> str:
    """Batsim's ``2-4 7`` as ``2;3;4;7``."""
    out = []
    for tok in text.split():
        a, _, b = tok.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return ";".join(map(str, out))


@dataclass
class Diff:
    """How batfeed's starts differ from Maui's on one scenario."""

    jobs: int                # jobs
    differing: int           # jobs not started at Maui's poll (or run by one of the two only)
    hosts_differing: int     # jobs given another set of nodes than Maui's
    within_one_poll: int     # jobs within one poll of Maui's start
    mean_wait_diff: float    # batfeed's mean wait − Maui's, s
    first: list[tuple[str, float, float]]   # the first differing jobs (job, Maui, batfeed) by Maui's start


def compare(ref: dict[str, dict], sim: dict[str, tuple[float, str]], poll: float) -> Diff:
    """Compare batfeed's starts and nodes ``sim`` with Maui's records ``ref`` (same jobs)."""
    if set(ref) != set(sim):
        raise AssertionError(f"job sets differ: {sorted(set(ref) ^ set(sim))[:5]}")
    got = {j: v[0] for j, v in sim.items()}
    never = [j for j, r in ref.items() if r["start"] is None or got[j] is None]   # run by neither, or one only
    ran = {j: r for j, r in ref.items() if r["start"] is not None and got[j] is not None}
    hosts = sum(sorted(map(int, sim[j][1].split(";"))) != sorted(map(int, r["hosts"].split(";")))
                for j, r in ran.items())
    diff = sorted((r["start"], j) for j, r in ran.items() if abs(got[j] - r["start"]) > 1e-6)
    diff += [(-1.0, j) for j in never if (ref[j]["start"] is None) != (got[j] is None)]
    near = sum(abs(got[j] - r["start"]) <= poll + 1e-6 for j, r in ran.items())
    near += sum(ref[j]["start"] is None and got[j] is None for j in never)
    mw = sum(got[j] - r["start"] for j, r in ran.items()) / max(1, len(ran))
    return Diff(len(ref), len(diff), hosts, near, round(mw, 3), [(j, ref[j]["start"], got[j]) for _, j in diff[:5]])


def kth_jobs(workload: Path) -> list[Job]:
    """The jobs of a converted SWF workload (``batfeed convert``; ``requested_walltime`` kept by
    ``--overrun``) as Maui trace jobs: submission ``T0`` + subtime, users ``u<user>``, groups ``g<group>``."""
    w = json.loads(Path(workload).read_text())
    delay = {k: v["delay"] for k, v in w["profiles"].items()}
    return [Job(str(j["id"]), int(j["res"]), f"u{j.get('user', 1)}", f"g{j.get('group', 1)}",
                int(j.get("requested_walltime", j["walltime"])), T0 + int(j["subtime"]),
                max(1, int(delay[j["profile"]]))) for j in w["jobs"]]


def name_credentials(workload: Path) -> None:
    """Rewrite a converted SWF workload's ``user``/``group`` fields in place as :func:`kth_jobs` names them
    in Maui's trace (``u<user>``, ``g<group>``), so that maui.cfg entries of a named credential
    (``GROUPCFG[g2]``) reach the same jobs in batfeed and in Maui.  Call it after :func:`kth_jobs`."""
    w = json.loads(Path(workload).read_text())
    for j in w["jobs"]:
        j["user"], j["group"] = f"u{j.get('user', 1)}", f"g{j.get('group', 1)}"
    Path(workload).write_text(json.dumps(w))


def simulate_workload(platform: Path, workload: Path, poll: int, cfg_text: str, work: Path) -> dict[str, float]:
    """batfeed's start time (from ``T0``) of every job of a Batsim ``workload`` on ``platform``."""
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "maui.cfg"
    cfg.write_text(cfg_text)
    opts = {"config": str(cfg), "interval": poll, "poll": True}
    run_simulation(platform, [workload], scheduler="maui", options=opts, export=work / "out", machine_states=False)
    with open(work / "out_jobs.csv", newline="") as fh:
        return {r["job_id"].split("!")[-1]: float(r["starting_time"]) for r in csv.DictReader(fh)}
