"""Batsim JSON messages: the engine's event tuples -> protocol events (Batsim 4.2's ``JsonProtocolWriter``,
reference §3-§5), and :class:`MessageDriver`, which sends them through a message transport (pybatsim
in-process, ZeroMQ, test probes) and reads the reply with :func:`batfeed.engine.protocol.parse_reply`.
"""

from __future__ import annotations

from typing import Any

from batfeed.engine.decisions import Decisions
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
from batfeed.engine.protocol import parse_reply
from batfeed.engine.state import EngineState
from batfeed.engine.workload import r6, round_json


def simulation_begins_data(sim: EngineState) -> dict[str, Any]:
    """The ``data`` of SIMULATION_BEGINS (reference §3)."""
    plat = sim.platform

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
        "config": sim.config.protocol_config(),
        "compute_resources": [res(h) for h in plat.compute],
        "storage_resources": [res(h) for h in plat.storage],
        "workloads": {w.name: w.path for w in sim.workloads.values()},
        "profiles": {w.name: {n: p.wire for n, p in w.profiles.items()} for w in sim.workloads.values()},
    }


def event_json(sim: EngineState, ev: tuple) -> dict[str, Any]:
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


class MessageDriver:
    """Drives a message transport (anything with ``exchange(message: dict) -> dict`` and ``close()``)."""

    direct = False

    def __init__(self, transport: Any):
        self.transport = transport
        self.name = getattr(transport, "name", "messages")

    def exchange(self, sim: Decisions, now: float, events: list[tuple]) -> tuple[float, list[tuple]]:
        message = {"now": r6(now), "events": [event_json(sim, ev) for ev in events]}
        return parse_reply(sim, self.transport.exchange(message))

    def close(self) -> None:
        self.transport.close()
