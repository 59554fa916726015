"""Batsim JSON messages: the engine's event tuples -> protocol events, and replies -> decisions.

Used by every message transport (pybatsim in-process, ZeroMQ, test probes).  Event objects follow
Batsim 4.2's ``JsonProtocolWriter`` (reference §3-§5); a reply is checked like Batsim's
``JsonProtocolReader`` checks it (a number ``now``, an array ``events``, each event with a number
``timestamp`` not after ``now``, a known ``type`` and an object ``data``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batfeed.engine.intervals import format_hyphen
from batfeed.engine.kinds import (
    E_ANSWER,
    E_BEGINS,
    E_CALL,
    E_COMPLETED,
    E_ENDS,
    E_GENERIC,
    E_KILLED,
    E_MACHINES,
    E_NOTIFY,
    E_STATE_CHANGED,
    E_SUBMITTED,
)
from batfeed.engine.protocol import MSG_HANDLERS
from batfeed.engine.workload import r6, round_json
from batfeed.errors import ProtocolError

if TYPE_CHECKING:
    from batfeed.engine.simulator import Simulator

_NUM = (int, float)
_EMPTY: dict[str, Any] = {}


def simulation_begins_data(sim: Simulator) -> dict[str, Any]:
    """The ``data`` of SIMULATION_BEGINS (reference §3)."""
    cfg, plat = sim.config, sim.platform

    def res(h: Any) -> dict[str, Any]:
        props = dict(h.properties)
        props.setdefault("role", "")  # Batsim reads a missing role as ""
        return {"id": h.id, "name": h.name, "state": "idle", "properties": props,
                "zone_properties": dict(h.zone_properties)}

    return {
        "nb_resources": len(plat.compute) + len(plat.storage),
        "nb_compute_resources": len(plat.compute),
        "nb_storage_resources": len(plat.storage),
        "allow_compute_sharing": False,
        "allow_storage_sharing": True,
        "config": {
            "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
            "redis-prefix": "default",
            "profiles-forwarded-on-submission": cfg.forward_profiles_on_submission,
            "dynamic-jobs-enabled": cfg.enable_dynamic_jobs,
            "dynamic-jobs-acknowledged": cfg.acknowledge_dynamic_jobs,
            "profile-reuse-enabled": cfg.enable_profile_reuse,
            "sched-config": cfg.sched_config,
            "forward-unknown-events": cfg.forward_unknown_events,
        },
        "compute_resources": [res(h) for h in plat.compute],
        "storage_resources": [res(h) for h in plat.storage],
        "workloads": {w.name: w.path for w in sim.workloads.values()},
        "profiles": {w.name: {n: p.wire for n, p in w.profiles.items()} for w in sim.workloads.values()},
    }


def event_json(sim: Simulator, ev: tuple) -> dict[str, Any]:
    """One engine event as a Batsim protocol event object (doubles with 6 decimals, like Batsim)."""
    kind, t = ev[0], r6(ev[1])
    if kind == E_SUBMITTED:
        job = ev[2]
        data = {"job_id": job.id, "job": job.json_dict}
        if sim.config.forward_profiles_on_submission:
            data["profile"] = job.prof.wire
        return {"timestamp": t, "type": "JOB_SUBMITTED", "data": data}
    if kind == E_COMPLETED:
        job = ev[2]
        return {"timestamp": t, "type": "JOB_COMPLETED",
                "data": {"job_id": job.id, "job_state": job.state, "return_code": job.return_code,
                         "alloc": job.alloc}}
    if kind == E_CALL:
        return {"timestamp": t, "type": "REQUESTED_CALL", "data": {}}
    if kind == E_NOTIFY:
        return {"timestamp": t, "type": "NOTIFY", "data": {"type": ev[2]}}
    if kind == E_MACHINES:
        return {"timestamp": t, "type": "NOTIFY", "data": {"type": ev[2], "resources": format_hyphen(ev[3])}}
    if kind == E_KILLED:
        progress = {jid: round_json(p) for jid, p in ev[3].items()}     # a composed job's: a task tree
        return {"timestamp": t, "type": "JOB_KILLED", "data": {"job_ids": ev[2], "job_progress": progress}}
    if kind == E_GENERIC:
        return {"timestamp": t, "type": "NOTIFY", "data": ev[2]}
    if kind == E_BEGINS:
        return {"timestamp": t, "type": "SIMULATION_BEGINS", "data": simulation_begins_data(sim)}
    if kind == E_ENDS:
        return {"timestamp": t, "type": "SIMULATION_ENDS", "data": {}}
    if kind == E_STATE_CHANGED:     # -E (energy_sim.py): append_resource_state_changed, append_answer_energy
        return {"timestamp": t, "type": "RESOURCE_STATE_CHANGED", "data": {"resources": format_hyphen(ev[2]),
                                                                           "state": ev[3]}}
    if kind == E_ANSWER:
        return {"timestamp": t, "type": "ANSWER", "data": {"consumed_energy": r6(ev[2])}}
    raise AssertionError(f"unknown event kind {kind}")


def parse_reply(sim: Simulator, reply: Any) -> tuple[float, list[tuple]]:
    """A scheduler's reply -> (now, decisions ``(timestamp, handler, (data,))``), Batsim's checks."""
    try:
        events, now = reply["events"], reply["now"]
        ok = isinstance(events, list) and isinstance(now, _NUM) and not isinstance(now, bool)
    except (TypeError, KeyError):
        ok = False
    if not ok:
        raise ProtocolError(f"malformed reply at t={sim.clock:f}: a message needs a number 'now' and an "
                            f"array 'events' (got {str(reply)[:200]})")
    now = float(now)
    out = []
    for ev in events:
        try:
            ts, kind, data = ev["timestamp"], ev["type"], ev["data"]
            ok = isinstance(ts, _NUM) and not isinstance(ts, bool) and isinstance(data, dict)
        except (TypeError, KeyError):
            ok = False
        if not ok:
            raise ProtocolError(f"malformed event in reply at t={sim.clock:f}: each event needs a number "
                                f"'timestamp', a string 'type' and an object 'data' (got {str(ev)[:200]})")
        handler = MSG_HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise ProtocolError(f"unknown event type {kind!r} from the scheduler at t={sim.clock:f}")
        if ts > now:
            raise ProtocolError(f"{kind} has timestamp {ts} later than the reply's now ({now}) (Batsim aborts)")
        out.append((float(ts), handler.__get__(sim), (data,)))
    return now, out


class MessageDriver:
    """Drives a message transport (anything with ``exchange(message: dict) -> dict`` and ``close()``)."""

    direct = False

    def __init__(self, transport: Any):
        self.transport = transport
        self.name = getattr(transport, "name", "messages")

    def exchange(self, sim: Simulator, now: float, events: list[tuple]) -> tuple[float, list[tuple]]:
        message = {"now": r6(now), "events": [event_json(sim, ev) for ev in events]}
        return parse_reply(sim, self.transport.exchange(message))

    def close(self) -> None:
        self.transport.close()
