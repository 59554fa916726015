#!/usr/bin/env python3
"""A scripted scheduler exercising Batsim's energy requests, used to record tests/data/engine/energy/dvfs_*.

usage: ``energy_dvfs_sched.py ENDPOINT [LOG.json]`` (binds a REP socket at ENDPOINT; LOG: every message received
and the reply, as ``[[message, reply], ...]``).  At the start it sets machines 0-1 to computation pstate 3
(immediate), switches machines 6-9 off (pstate 13) and queries the energy; when 6-9 are asleep it switches 6-7 on
again and then uses them; jobs run FCFS on the awake machines; after each message with a JOB_COMPLETED, idle
machines 2-4 alternate between computation pstates 5 and 1, and every third JOB_COMPLETED queries the energy.
For the platforms with Batsim's 16 pstates (0-12 computation, 13 sleep, 14/15 switching), e.g.
cluster_energy_128.xml.  Recorded with real Batsim 4.2.1 (``batsim -p P -w W -e PREFIX -E -s ENDPOINT``).
"""

from __future__ import annotations

import json
import sys

import zmq


def _state(now: float, resources: str, state: str) -> dict[str, object]:
    return {"timestamp": now, "type": "SET_RESOURCE_STATE", "data": {"resources": resources, "state": state}}


def main() -> int:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(sys.argv[1])
    log: list[list[object]] = []
    queue: list[tuple[str, int]] = []
    busy: dict[int, str] = {}
    pstate: dict[int, int] = {}
    switching: set[int] = set()
    sleeping: set[int] = set()
    awake = [0, 1, 2, 3, 4, 5]
    completed = 0
    while True:
        msg = json.loads(sock.recv())
        now, out = msg["now"], []
        for ev in msg["events"]:
            kind, data = ev["type"], ev["data"]
            if kind == "SIMULATION_BEGINS":
                out.append(_state(now, "0-1", "3"))
                out.append(_state(now, "6-9", "13"))
                switching.update(range(6, 10))
                out.append({"timestamp": now, "type": "QUERY", "data": {"requests": {"consumed_energy": {}}}})
            elif kind == "JOB_SUBMITTED":
                queue.append((data["job_id"], data["job"]["res"]))
            elif kind == "JOB_COMPLETED":
                for m in [m for m, j in busy.items() if j == data["job_id"]]:
                    del busy[m]
                completed += 1
                if completed % 3 == 0:
                    out.append({"timestamp": now, "type": "QUERY", "data": {"requests": {"consumed_energy": {}}}})
            elif kind == "RESOURCE_STATE_CHANGED":
                machines = []
                for part in data["resources"].split():
                    a, _, b = part.partition("-")
                    machines += range(int(a), int(b or a) + 1)
                for m in machines:
                    switching.discard(m)
                    (sleeping.add if data["state"] == "13" else sleeping.discard)(m)
                if data["state"] == "13" and 6 in machines:
                    out.append(_state(now, "6-7", "0"))
                    switching.update([6, 7])
                if data["state"] == "0" and 6 in machines:
                    awake.extend([6, 7])
            elif kind == "SIMULATION_ENDS":
                reply = {"now": now, "events": []}
                log.append([msg, reply])
                sock.send_string(json.dumps(reply))
                if len(sys.argv) > 2:
                    with open(sys.argv[2], "w", encoding="utf-8") as fh:
                        json.dump(log, fh)
                return 0
        while queue:
            free = [m for m in awake if m not in busy and m not in switching and m not in sleeping]
            if len(free) < queue[0][1]:
                break
            jid, res = queue.pop(0)
            for m in free[:res]:
                busy[m] = jid
            alloc = " ".join(map(str, free[:res]))
            out.append({"timestamp": now, "type": "EXECUTE_JOB", "data": {"job_id": jid, "alloc": alloc}})
        if any(ev["type"] == "JOB_COMPLETED" for ev in msg["events"]):
            for m in (2, 3, 4):
                if m not in busy and not queue:
                    pstate[m] = 5 if pstate.get(m, 0) != 5 else 1
                    out.append(_state(now, str(m), str(pstate[m])))
        reply = {"now": now, "events": out}
        log.append([msg, reply])
        sock.send_string(json.dumps(reply))


if __name__ == "__main__":
    sys.exit(main())
