#!/usr/bin/env python3
"""A raw ZeroMQ Batsim-4 scheduler that registers all its jobs (no static workload), for tests.

usage: dyn_register.py ENDPOINT LOG.jsonl

Binds ENDPOINT (REP), logs every message it receives (one JSON object per line) and answers
deterministically: at SIMULATION_BEGINS it registers profile ``p1`` and jobs ``dyn!1``-``dyn!3``
and asks to be called at 5; at that call it registers ``dyn!4``, ``dyn!5`` (profile ``p2``, metadata
with a comma) and notifies ``registration_finished``.  Jobs start first come, first served on the
lowest free machines (no acknowledgements: a job can start in the reply that registers it).
"""

from __future__ import annotations

import json
import sys

import zmq


class Sched:
    def __init__(self) -> None:
        self.free: list[int] = []
        self.queue: list[tuple[str, int]] = []
        self.running: dict[str, list[int]] = {}
        self.out: list[dict] = []
        self.now = 0.0

    def emit(self, type_: str, data: dict) -> None:
        self.out.append({"timestamp": self.now, "type": type_, "data": data})

    def register(self, n: int, res: int, profile: str, walltime: float) -> None:
        jid = f"dyn!{n}"
        self.emit("REGISTER_JOB", {"job_id": jid, "job": {"id": jid, "subtime": self.now, "res": res,
                                                           "walltime": walltime, "profile": profile}})
        self.queue.append((jid, res))

    def drain(self) -> None:
        while self.queue and self.queue[0][1] <= len(self.free):
            jid, res = self.queue.pop(0)
            take, self.free = self.free[:res], self.free[res:]
            self.running[jid] = take
            self.emit("EXECUTE_JOB", {"job_id": jid, "alloc": " ".join(map(str, take))})

    def handle(self, msg: dict) -> dict:
        self.now, self.out = float(msg["now"]), []
        for e in msg["events"]:
            t, d = e["type"], e.get("data", {})
            if t == "SIMULATION_BEGINS":
                self.free = list(range(d["nb_compute_resources"]))
                self.emit("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p1",
                                               "profile": {"type": "delay", "delay": 10}})
                for n, res in ((1, 2), (2, 4), (3, 1)):
                    self.register(n, res, "p1", 20)
                self.emit("CALL_ME_LATER", {"timestamp": 5})
            elif t == "REQUESTED_CALL":
                self.emit("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p2",
                                               "profile": {"type": "delay", "delay": 3.5}})
                self.register(4, 1, "p2", -1)
                self.register(5, 3, "p2", 2)
                self.emit("SET_JOB_METADATA", {"job_id": "dyn!5", "metadata": "late, short"})
                self.emit("NOTIFY", {"type": "registration_finished"})
            elif t == "JOB_COMPLETED":
                self.free = sorted(self.free + self.running.pop(d["job_id"]))
        self.drain()
        return {"now": self.now, "events": self.out}


def main() -> int:
    endpoint, log_path = sys.argv[1], sys.argv[2]
    sock = zmq.Context().socket(zmq.REP)
    sock.bind(endpoint)
    sched = Sched()
    with open(log_path, "w", encoding="utf-8") as log:
        while True:
            msg = json.loads(sock.recv())
            log.write(json.dumps(msg) + "\n")
            log.flush()
            sock.send(json.dumps(sched.handle(msg)).encode())
            if any(e["type"] == "SIMULATION_ENDS" for e in msg["events"]):
                return 0


if __name__ == "__main__":
    sys.exit(main())
