#!/usr/bin/env python3
"""A deterministic, order-sensitive raw Batsim-4 scheduler for conformance tests.

``Probe(options).handle(message) -> reply`` reads one Batsim→scheduler message (the parsed JSON object
``{"now": …, "events": […]}``) and returns its reply object.  It is a pure function of the messages
received so far and of ``options``: no wall clock, and its only randomness is
``random.Random(options["seed"])``, drawn only while reacting to events, so the draws too depend on the
order of the events.  Like the golden ``order_probe_scheduler.py`` it reacts to each event in the order
received and stamps its decisions with the message's ``now``, so any difference in the order of events
or in message boundaries changes its decisions.  With the default options it *is* the golden probe
(same decisions, same ``alloc`` strings).

Rules (every decision is valid for Batsim 4.2.1; the numbers are counters over the whole run):

basic
  ``SIMULATION_BEGINS`` gives N = ``nb_compute_resources``; all machines are free.  A submitted job
  (static ``JOB_SUBMITTED``, or a dynamic job, see below) with ``res`` ≤ 0 or ``res`` > N is rejected
  (``REJECT_JOB``).  Otherwise, if no job is queued, it starts at once (``EXECUTE_JOB``) on the
  ``res`` lowest-numbered machines that are free and available; if there are not enough of them it is
  rejected (``on_full: "reject"``, default) or appended to a FIFO queue (``on_full: "queue"``; while
  the queue is non-empty every new job goes behind it).  ``JOB_COMPLETED`` frees the job's machines and
  ``event_machine_available`` makes machines available again; both then start queued jobs in queue
  order while the head fits (no backfilling).  ``event_machine_unavailable`` takes machines out: they
  are never allocated until available again; a job running on them keeps running.  Batsim has applied
  all machine events of a message before it sends it, so a machine that is unavailable at the end of
  the message is not allocated even while reacting to an event placed before its NOTIFY (otherwise the
  decisions, event by event, are those of the golden probe, which never hit that case).  Likewise a job
  whose ``JOB_COMPLETED`` is in the message is deleted by Batsim as soon as the message is sent: it is
  never killed nor given metadata, and its profile is never reused, even before that event is read.
  ``alloc_style``: ``"list"`` (default, ``"0 1 2"`` like the golden probe) or ``"ranges"`` (``"0-2"``).
``metadata: M``
  before the decision on every M-th static submission, ``SET_JOB_METADATA`` on that job (also on jobs
  then rejected: the metadata reaches ``_jobs.csv`` because it is set first); with ``call_me_later``,
  every 2nd ``REQUESTED_CALL`` sets metadata on the most recently started running job; with dynamic
  jobs, every even-numbered registered job gets metadata right after its REGISTER_JOB.  Metadata
  strings contain spaces and commas, never double quotes.
``call_me_later: S`` (``cml_every: K``, default 1)
  after every K-th static submission, ``CALL_ME_LATER`` at now + S.  The request must be in the future
  when Batsim applies it, i.e. after any future-stamped decision placed before it in the same reply:
  the target is max(now, latest timestamp so far in the reply) + S.  (Batsim's waiter then sleeps at
  least 1e-5 s, whatever S.)
``future_decisions: D`` (a number or a list cycled through; ``future_every: F``, default 3)
  every F-th start is stamped now + D instead of now, unless its machines are in ``volatile``
  (machines named in the events files: an outage could begin before now + D).  Batsim applies a
  reply's events in order and sleeps until each one's timestamp, so every later decision of that reply
  takes effect at now + D too; from then on the reply allocates no volatile machine either.  The reply's
  ``now`` is at least its largest timestamp.
``advance_now: X`` (``advance_every: A``, default 4)
  the reply to every A-th message has ``now`` = now + X (decisions stay stamped now): the scheduler is
  busy until then and everything that happens meanwhile reaches it in one later message.
``kill: {"every": K, "on": [triggers], "multi": bool, "then_register": bool}``
  triggers: ``"call"`` (every K-th ``REQUESTED_CALL``), ``"submit"`` (every K-th static submission,
  before deciding on it), ``"static_end"`` (the ``no_more_static_job_to_submit`` NOTIFY).  The victim
  is the earliest-started running job (``static_end``: the latest-started one, often started at this
  very instant: zero runtime), never one started in the current reply nor one already being killed;
  with ``multi`` every 2nd kill names two jobs.  The victims' machines are free at once: the kill is
  followed, in the same reply, by the decisions that reuse them (queued jobs, the job being submitted).
  ``JOB_KILLED`` and the victims' ``JOB_COMPLETED`` (``COMPLETED_KILLED``, or a normal completion if the
  job ended before the kill took effect) free nothing more.  ``then_register`` (dynamic jobs only):
  each kill is followed by ``REGISTER_PROFILE`` + ``REGISTER_JOB`` of a replacement job.
``dynamic: {...}`` (Batsim ``--enable-dynamic-jobs``; keys ``total`` (default 8), ``every`` (default 4),
``ack`` (``--acknowledge-dynamic-jobs``), ``start_now``, ``reuse`` (``--enable-profile-reuse``),
``static_profiles``, ``workload`` (default ``"dyn"``), ``reopen``)
  after every ``every``-th static submission a new job is registered: ``REGISTER_PROFILE`` (a delay
  profile ``p<n>`` in ``workload``) then ``REGISTER_JOB`` ``<workload>!d<n>`` with ``subtime`` = now.
  With ``reuse``, odd-numbered jobs use the profile ``shared`` (registered once).  With
  ``static_profiles``, every 3rd job (n % 3 == 1) is registered in a static workload with a profile of
  that workload still alive: profile garbage collection makes a profile unusable once any job using it
  was completed or rejected (the probe tracks this from the messages).  Without ``ack`` the job is
  submitted by its registration, and the probe decides on it at once (start/queue/reject) in the same
  reply; with ``ack`` it decides at once if ``start_now`` is set, otherwise when the ``JOB_SUBMITTED``
  acknowledgement arrives.  After ``no_more_static_job_to_submit`` the remaining jobs are registered one
  at a time, each when the previous dynamic jobs have ended; ``NOTIFY registration_finished`` follows
  the last registration (or the NOTIFY itself if ``total`` was already reached): it is always sent.
  ``reopen``: once, in the reply to the first message after the one answered with
  ``registration_finished`` in which a job still runs (and does not complete), ``NOTIFY
  continue_registration``; in the reply to the next message, one more registration and
  ``registration_finished`` again.  (Registering in the same reply as ``continue_registration`` makes
  Batsim 4.2.1 abort: it checks the flag when it parses REGISTER_JOB, before its server has processed
  the NOTIFY.)
``seed`` (default 0)
  dynamic delays, resource counts and walltimes are drawn from ``random.Random(seed)``.

Usage (from the repo root): ``.venv/bin/python tests/conformance/probe.py ENDPOINT LOG [--options JSON]``
(or ``python -m conformance.probe`` with ``tests`` on ``sys.path``).  It binds ENDPOINT (ZeroMQ REP),
serves one simulation and writes LOG: one line ``{"recv": <message>, "sent": <reply>}`` per message,
``json.dumps(..., sort_keys=True)``, the format of the golden streams.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import Any

DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "on_full": "reject",
    "alloc_style": "list",
    "call_me_later": None,
    "cml_every": 1,
    "future_decisions": None,
    "future_every": 3,
    "advance_now": None,
    "advance_every": 4,
    "kill": None,
    "dynamic": None,
    "metadata": None,
    "volatile": "",
}

DYN_DEFAULTS: dict[str, Any] = {"total": 8, "every": 4, "ack": False, "start_now": False, "reuse": False,
                                "static_profiles": False, "workload": "dyn", "reopen": False}
KILL_DEFAULTS: dict[str, Any] = {"every": 2, "on": ["call"], "multi": False, "then_register": False}


class ProbeError(RuntimeError):
    """The messages received are inconsistent with what the probe decided (never expected from Batsim)."""


def parse_ids(text: str) -> list[int]:
    """Batsim interval set ``"0-3 7"`` -> ``[0, 1, 2, 3, 7]``."""
    res: list[int] = []
    for part in text.split():
        a, _, b = part.partition("-")
        res.extend(range(int(a), int(b or a) + 1))
    return res


def format_ids(ids: list[int], style: str) -> str:
    if style == "list":
        return " ".join(map(str, ids))
    parts: list[str] = []
    ids = sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return " ".join(parts)


class Probe:
    def __init__(self, options: dict[str, Any] | None = None):
        opts = dict(DEFAULTS)
        opts.update(options or {})
        unknown = set(opts) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown probe options {sorted(unknown)}")
        if opts["on_full"] not in ("reject", "queue"):
            raise ValueError("on_full must be 'reject' or 'queue'")
        self.o = opts
        self.dyn = None if not opts["dynamic"] else {**DYN_DEFAULTS, **opts["dynamic"]}
        self.killopt = None if not opts["kill"] else {**KILL_DEFAULTS, **opts["kill"]}
        fd = opts["future_decisions"]
        self.future = None if fd is None else (list(fd) if isinstance(fd, list | tuple) else [fd])
        self.rng = random.Random(opts["seed"])
        self.volatile = set(parse_ids(opts["volatile"]))
        self.n = 0
        self.free: set[int] = set()
        self.down: set[int] = set()
        self.running: dict[str, list[int]] = {}       # insertion order = start order
        self.killing: set[str] = set()                # kill sent, machines already freed
        self.queue: list[str] = []
        self.jobs: dict[str, dict[str, Any]] = {}     # job id -> {"res", "wl", "profile"}
        self.alive: dict[tuple[str, str], bool] = {}  # static (workload, profile) -> still usable
        self.dead: set[tuple[str, str]] = set()
        self.dyn_pending: set[str] = set()            # registered with ack, not decided yet
        self.dyn_ids: set[str] = set()
        self.dyn_in_flight: set[str] = set()
        self.ndyn = 0
        self.shared_registered = False
        self.static_done = False
        self.reg_finished = False
        self.reopened = False
        self.reopen_at = 0
        self.finished_at = 0
        self.nmsg = self.nsub = self.nstart = self.ncall = self.nkill = 0
        self.ended = False
        # per-message state
        self.now = 0.0
        self.eff = 0.0
        self.out: list[dict[str, Any]] = []
        self.started_here: set[str] = set()
        self.down_end: set[int] = set()
        self.ending: set[str] = set()

    # ------------------------------------------------------------------ message loop
    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        if self.ended:
            raise ProbeError("message received after SIMULATION_ENDS")
        self.nmsg += 1
        now = msg["now"]
        self.now = self.eff = now
        self.out = []
        self.started_here = set()
        # Batsim applies every machine event of this message before the reply: a machine that is
        # unavailable at the end of the message cannot be used, even when its NOTIFY comes after the event
        # being reacted to.
        down = set(self.down)
        for e in msg["events"]:
            if e["type"] == "NOTIFY" and e["data"]["type"] == "event_machine_unavailable":
                down |= set(parse_ids(e["data"]["resources"]))
            elif e["type"] == "NOTIFY" and e["data"]["type"] == "event_machine_available":
                down -= set(parse_ids(e["data"]["resources"]))
        self.down_end = down
        # Jobs whose JOB_COMPLETED is in this message are deleted by Batsim right after sending it (and
        # their profiles garbage-collected): never kill them, set their metadata or reuse their profiles.
        self.ending = {e["data"]["job_id"] for e in msg["events"] if e["type"] == "JOB_COMPLETED"}
        for j in self.ending:
            if j in self.jobs:
                key = (self.jobs[j]["wl"], self.jobs[j]["profile"])
                self.dead.add(key)
                self.alive.pop(key, None)
        for event in msg["events"]:
            self._event(event)
        d = self.dyn
        if d and d["reopen"] and not self.ended:
            running = [j for j in self.running if j not in self.ending]
            if self.reopen_at and self.nmsg > self.reopen_at:
                self.reopen_at = 0
                self.reg_finished = False
                self._register()
                self._finish_registration()
            elif self.reg_finished and not self.reopened and self.nmsg > self.finished_at and running:
                # Batsim checks "registration finished" when it *parses* a REGISTER_JOB, before its server
                # has processed an earlier continue_registration of the same reply: register in a later
                # reply (a job still runs, so a later message will come).
                self.reopened = True
                self.reopen_at = self.nmsg
                self._emit("NOTIFY", {"type": "continue_registration"})
        reply_now = now
        if self.ended:
            return {"now": now, "events": self.out}
        if self.o["advance_now"] is not None and self.nmsg % self.o["advance_every"] == 0:
            reply_now = now + self.o["advance_now"]
        reply_now = max(reply_now, self.eff)
        return {"now": reply_now, "events": self.out}

    def _event(self, e: dict[str, Any]) -> None:
        t, d = e["type"], e["data"]
        if t == "SIMULATION_BEGINS":
            self.n = d["nb_compute_resources"]
            self.free = set(range(self.n))
        elif t == "JOB_SUBMITTED":
            self._on_submitted(d["job_id"], d["job"])
        elif t == "JOB_COMPLETED":
            self._on_completed(d["job_id"])
        elif t == "JOB_KILLED":
            pass  # everything was done when the kill was sent
        elif t == "REQUESTED_CALL":
            self._on_call()
        elif t == "NOTIFY":
            kind = d["type"]
            if kind == "event_machine_unavailable":
                self.down |= set(parse_ids(d["resources"]))
            elif kind == "event_machine_available":
                self.down -= set(parse_ids(d["resources"]))
                self._drain()
            elif kind == "no_more_static_job_to_submit":
                self.static_done = True
                if self.killopt and "static_end" in self.killopt["on"]:
                    self._kill(latest=True)
                self._dyn_progress()
        elif t == "SIMULATION_ENDS":
            self.ended = True

    # ------------------------------------------------------------------ emitting
    def _emit(self, type_: str, data: dict[str, Any], ts: float | None = None) -> None:
        ts = self.now if ts is None else ts
        self.eff = max(self.eff, ts)
        self.out.append({"timestamp": ts, "type": type_, "data": data})

    # ------------------------------------------------------------------ reactions
    def _on_submitted(self, job_id: str, job: dict[str, Any]) -> None:
        if job_id in self.dyn_ids:   # acknowledgement of our own registration
            if job_id in self.dyn_pending:
                self.dyn_pending.discard(job_id)
                self._submit(job_id)
            return
        wl = job_id.split("!", 1)[0]
        self.jobs[job_id] = {"res": job["res"], "wl": wl, "profile": job["profile"]}
        key = (wl, job["profile"])
        if key not in self.dead:
            self.alive[key] = True
        self.nsub += 1
        o = self.o
        if o["metadata"] and self.nsub % o["metadata"] == 0:
            self._emit("SET_JOB_METADATA", {"job_id": job_id, "metadata": f"sub {self.nsub}, at {self.now!r}"})
        if self.killopt and "submit" in self.killopt["on"] and self.nsub % self.killopt["every"] == 0:
            self._kill()
        self._submit(job_id)
        if o["call_me_later"] is not None and self.nsub % o["cml_every"] == 0:
            self._emit("CALL_ME_LATER", {"timestamp": self.eff + o["call_me_later"]})
        dyn = self.dyn
        if dyn and not self.static_done and not self.reg_finished and self.nsub % dyn["every"] == 0 \
                and self.ndyn < dyn["total"]:
            self._register()

    def _on_completed(self, job_id: str) -> None:
        if job_id in self.killing:
            self.killing.discard(job_id)
        elif job_id in self.running:
            self.free |= set(self.running.pop(job_id))
        else:
            raise ProbeError(f"JOB_COMPLETED for {job_id}, which the probe did not start")
        self._job_ended(job_id)
        self._drain()
        self._dyn_progress()

    def _on_call(self) -> None:
        self.ncall += 1
        if self.killopt and "call" in self.killopt["on"] and self.ncall % self.killopt["every"] == 0:
            self._kill()
        if self.o["metadata"] and self.ncall % 2 == 0:
            cands = [j for j in self.running if j not in self.started_here and j not in self.ending]
            if cands:
                self._emit("SET_JOB_METADATA", {"job_id": cands[-1], "metadata": f"call {self.ncall}, running"})

    # ------------------------------------------------------------------ decisions
    def _avail(self) -> list[int]:
        late = self.eff > self.now
        return sorted(m for m in self.free if m not in self.down and m not in self.down_end
                      and not (late and m in self.volatile))

    def _submit(self, job_id: str) -> None:
        res = self.jobs[job_id]["res"]
        if res <= 0 or res > self.n:
            self._reject(job_id)
            return
        if self.queue:
            self.queue.append(job_id)
            return
        avail = self._avail()
        if len(avail) >= res:
            self._start(job_id, avail[:res])
        elif self.o["on_full"] == "queue":
            self.queue.append(job_id)
        else:
            self._reject(job_id)

    def _reject(self, job_id: str) -> None:
        self._emit("REJECT_JOB", {"job_id": job_id})
        self._job_ended(job_id)
        self._dyn_progress()

    def _start(self, job_id: str, take: list[int]) -> None:
        self.free -= set(take)
        self.running[job_id] = take
        self.started_here.add(job_id)
        self.nstart += 1
        ts = self.now
        if self.future and self.nstart % self.o["future_every"] == 0 and not set(take) & self.volatile:
            ts = self.now + self.future[(self.nstart // self.o["future_every"]) % len(self.future)]
        self._emit("EXECUTE_JOB", {"job_id": job_id, "alloc": format_ids(take, self.o["alloc_style"])}, ts)

    def _drain(self) -> None:
        while self.queue:
            head = self.queue[0]
            avail = self._avail()
            res = self.jobs[head]["res"]
            if len(avail) < res:
                return
            self.queue.pop(0)
            self._start(head, avail[:res])

    def _job_ended(self, job_id: str) -> None:
        info = self.jobs[job_id]
        key = (info["wl"], info["profile"])
        self.dead.add(key)
        self.alive.pop(key, None)
        if job_id in self.dyn_in_flight:
            self.dyn_in_flight.discard(job_id)

    def _kill(self, latest: bool = False) -> None:
        cands = [j for j in self.running if j not in self.started_here and j not in self.killing
                 and j not in self.ending]
        if not cands:
            return
        self.nkill += 1
        count = 2 if self.killopt["multi"] and self.nkill % 2 == 0 and len(cands) >= 2 else 1
        victims = cands[-count:] if latest else cands[:count]
        self._emit("KILL_JOB", {"job_ids": victims})
        for v in victims:
            self.free |= set(self.running.pop(v))
            self.killing.add(v)
            info = self.jobs[v]
            self.dead.add((info["wl"], info["profile"]))
            self.alive.pop((info["wl"], info["profile"]), None)
        if self.dyn and self.killopt["then_register"] and not self.reg_finished \
                and self.ndyn < self.dyn["total"]:
            self._register()
        self._drain()

    # ------------------------------------------------------------------ dynamic jobs
    def _register(self) -> None:
        d = self.dyn
        assert d is not None and not self.reg_finished
        n = self.ndyn
        self.ndyn += 1
        rng = self.rng
        delay = rng.choice([rng.randint(1, 60), round(rng.uniform(0.5, 40.0), 2)])
        res = rng.randint(1, max(1, self.n // 3))
        wl, prof = d["workload"], None
        if d["static_profiles"] and n % 3 == 1:
            alive = sorted(k for k in self.alive if k not in self.dead)
            if alive:
                wl, prof = alive[rng.randrange(len(alive))]
        if prof is None and d["reuse"] and n % 2 == 1 and self.shared_registered:
            prof = "shared"
        if prof is None:
            prof = "shared" if d["reuse"] and not self.shared_registered else f"p{n}"
            self.shared_registered = self.shared_registered or prof == "shared"
            self._emit("REGISTER_PROFILE", {"workload_name": wl, "profile_name": prof,
                                            "profile": {"type": "delay", "delay": delay}})
        job_id = f"{wl}!d{n}"
        job: dict[str, Any] = {"id": job_id, "subtime": self.now, "res": res, "profile": prof, "tag": f"dyn {n}"}
        w = rng.random()
        if w < 0.3:
            job["walltime"] = round(delay / 2 + 0.5, 2) if delay > 2 else 1.5
        elif w < 0.6:
            job["walltime"] = 1000.0
        self._emit("REGISTER_JOB", {"job_id": job_id, "job": job})
        self.jobs[job_id] = {"res": res, "wl": wl, "profile": prof}
        if self.o["metadata"] and n % 2 == 0:
            self._emit("SET_JOB_METADATA", {"job_id": job_id, "metadata": f"dyn {n}, registered"})
        self.dyn_ids.add(job_id)
        self.dyn_in_flight.add(job_id)
        if d["ack"] and not d["start_now"]:
            self.dyn_pending.add(job_id)
        else:
            self._submit(job_id)

    def _dyn_progress(self) -> None:
        d = self.dyn
        if not d or self.reg_finished or not self.static_done:
            return
        while self.ndyn < d["total"] and not self.dyn_in_flight:
            self._register()
            if self.reg_finished:   # a nested call finished it
                return
        if self.ndyn >= d["total"]:
            self._finish_registration()

    def _finish_registration(self) -> None:
        if not self.reg_finished:
            self.reg_finished = True
            self.finished_at = self.nmsg
            self._emit("NOTIFY", {"type": "registration_finished"})


# ---------------------------------------------------------------------- ZeroMQ server
def serve(endpoint: str, log_path: str, options: dict[str, Any], timeout_s: float | None = None) -> int:
    """Bind ``endpoint`` (REP), answer one simulation with a Probe, log every exchange; return #messages."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(endpoint)
    probe = Probe(options)
    count = 0
    try:
        with open(log_path, "w") as log:
            while True:
                if timeout_s is not None and not sock.poll(int(timeout_s * 1000)):
                    raise TimeoutError(f"no message from Batsim within {timeout_s} s")
                msg = json.loads(sock.recv_string())
                reply = probe.handle(msg)
                log.write(json.dumps({"recv": msg, "sent": reply}, sort_keys=True) + "\n")
                log.flush()
                sock.send_string(json.dumps(reply))
                count += 1
                if probe.ended:
                    break
    finally:
        sock.close(linger=0)
        ctx.term()
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Conformance probe scheduler (raw Batsim-4 protocol).")
    ap.add_argument("endpoint", help="ZeroMQ endpoint to bind, e.g. tcp://127.0.0.1:28000")
    ap.add_argument("log", help="where to write the {recv, sent} JSON lines")
    ap.add_argument("--options", default="{}", help="probe options as a JSON object")
    ap.add_argument("--timeout", type=float, default=None, help="give up if Batsim is silent this long (s)")
    args = ap.parse_args(argv)
    serve(args.endpoint, args.log, json.loads(args.options), args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
