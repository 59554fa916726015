"""Batsim's ``JsonProtocolReader``: a scheduler's JSON reply -> the engine's decisions (reference §4, §6, §12).

:func:`parse_reply` checks a reply as Batsim does (a number ``now``, an array ``events``, each event with
a number ``timestamp`` not after ``now``, a known ``type`` and an object ``data``) and makes each event a
decision ``(timestamp, reader, (sim, data))``.  The reader (:data:`MSG_HANDLERS`) runs when the event
loop applies the decision at its date: it checks the ``data`` object's form as Batsim does, then calls
the matching ``_do_*`` method of :class:`~batfeed.engine.decisions.Decisions`, the interface the
direct driver calls too.  Every reply Batsim 4.2 would abort on raises
:class:`~batfeed.errors.ProtocolError`.
"""

from __future__ import annotations

from typing import Any

from batfeed.engine import intervals
from batfeed.engine.decisions import Decisions
from batfeed.engine.workload import SEP
from batfeed.errors import ProtocolError

_NUM = (int, float)
_NO_EXTRA: frozenset[str] = frozenset()
# alloc strings already parsed -> (intervals, size); the lists are never mutated
_ALLOCS: dict[str, tuple[list[tuple[int, int]], int]] = {}


def parse_reply(sim: Decisions, reply: Any) -> tuple[float, list[tuple]]:
    """A scheduler's reply -> (now, decisions ``(timestamp, reader, (sim, data))``), Batsim's checks."""
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
        reader = MSG_HANDLERS.get(kind) if isinstance(kind, str) else None
        if reader is None:
            raise ProtocolError(f"unknown event type {kind!r} from the scheduler at t={sim.clock:f}")
        if ts > now:
            raise ProtocolError(f"{kind} has timestamp {ts} later than the reply's now ({now}) (Batsim aborts)")
        out.append((float(ts), reader, (sim, data)))
    return now, out


def _job(sim: Decisions, data: dict[str, Any], what: str) -> Any:
    jid = data.get("job_id")
    job = sim.job(jid) if isinstance(jid, str) else None
    if job is None:
        raise ProtocolError(f"{what}: job '{jid}' does not exist (Batsim aborts)")
    return job


def execute_job(sim: Decisions, data: dict[str, Any]) -> None:
    job = _job(sim, data, "EXECUTE_JOB")
    extra = _NO_EXTRA if len(data) == 2 else set(data) - {"job_id", "alloc"}
    if "alloc" not in data or len(extra) > 1 or not extra <= {"mapping", "storage_mapping", "additional_io_job"}:
        raise ProtocolError(f"EXECUTE_JOB {job.id}: data must have 'job_id', 'alloc' and at most one of "
                            f"mapping/storage_mapping/additional_io_job (got {sorted(data)})")
    if extra & {"storage_mapping", "additional_io_job"}:
        raise ProtocolError(f"EXECUTE_JOB {job.id}: {next(iter(extra))} (I/O) is not modelled by the embedded "
                            "engine: use real Batsim")
    alloc = data["alloc"]
    cached = _ALLOCS.get(alloc) if isinstance(alloc, str) else None
    if cached is None:
        try:
            ivs = intervals.parse(alloc) if isinstance(alloc, str) else None
        except ValueError:
            ivs = None
        if not ivs:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: alloc {alloc!r} is not a non-empty interval set")
        n = intervals.size(ivs)
        if len(_ALLOCS) < 1 << 16:
            _ALLOCS[alloc] = (ivs, n)
    else:
        ivs, n = cached
    mapping = data.get("mapping")
    if mapping is not None and not isinstance(mapping, dict):
        raise ProtocolError(f"EXECUTE_JOB {job.id}: the mapping must be an object")
    sim._do_execute(job, ivs, n, mapping)


def reject_job(sim: Decisions, data: dict[str, Any]) -> None:
    job = _job(sim, data, "REJECT_JOB")
    if len(data) != 1:
        raise ProtocolError(f"REJECT_JOB {job.id}: data must be exactly {{job_id}} (got {sorted(data)})")
    sim._do_reject(job)


def kill_job(sim: Decisions, data: dict[str, Any]) -> None:
    ids = data.get("job_ids")
    if set(data) != {"job_ids"} or not isinstance(ids, list):
        raise ProtocolError(f"KILL_JOB: data must be exactly {{job_ids: [...]}} (got {data})")
    jobs: list[Any] = []
    for jid in ids:
        job = sim.job(jid) if isinstance(jid, str) else None
        if job is None:
            raise ProtocolError(f"KILL_JOB: job '{jid}' does not exist (Batsim aborts)")
        jobs.append(job)
    sim._do_kill(jobs)


def call_me_later(sim: Decisions, data: dict[str, Any]) -> None:
    t = data.get("timestamp")
    if len(data) != 1 or not isinstance(t, _NUM) or isinstance(t, bool):
        raise ProtocolError(f"CALL_ME_LATER: data must be exactly {{timestamp: number}} (got {data})")
    sim._do_call_me_later(float(t))


def register_profile(sim: Decisions, data: dict[str, Any]) -> None:
    wl_name, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile")
    sim._check_registration("REGISTER_PROFILE", f"{wl_name}/{name}")
    if not isinstance(wl_name, str) or not isinstance(name, str) or SEP in wl_name:
        raise ProtocolError(f"REGISTER_PROFILE: needs string workload_name and profile_name (got {data})")
    sim._do_register_profile(wl_name, name, prof)


def register_job(sim: Decisions, data: dict[str, Any]) -> None:
    jid, js = data.get("job_id"), data.get("job")
    sim._check_registration("REGISTER_JOB", str(jid))
    if not isinstance(jid, str) or jid.count(SEP) != 1 or not isinstance(js, dict):
        raise ProtocolError(f"REGISTER_JOB: job_id must be 'workload!name' and job an object (got {data})")
    sim._do_register_job(sim.make_dynamic_job(jid, js))


def notify(sim: Decisions, data: dict[str, Any]) -> None:
    sim._do_notify(data.get("type"))


def set_job_metadata(sim: Decisions, data: dict[str, Any]) -> None:
    job = _job(sim, data, "SET_JOB_METADATA")
    meta = data.get("metadata")
    if len(data) != 2 or not isinstance(meta, str):
        raise ProtocolError(f"SET_JOB_METADATA {job.id}: data must be exactly {{job_id, metadata: string}}")
    sim._do_set_metadata(job, meta)


def change_job_state(sim: Decisions, data: dict[str, Any]) -> None:
    sim._do_change_state(_job(sim, data, "CHANGE_JOB_STATE"), data.get("job_state"))


def set_resource_state(sim: Decisions, data: dict[str, Any]) -> None:
    sim._msg_set_resource_state(data)       # -E: the energy model reads it (batfeed/engine/energy_switch.py)


def query(sim: Decisions, data: dict[str, Any]) -> None:
    sim._msg_query(data)                    # -E: batfeed/engine/energy_sim.py


def ignored(sim: Decisions, data: dict[str, Any]) -> None:
    """ANSWER / TO_JOB_MSG: accepted; no modelled profile reads them."""


# JSON decision type -> its reader, called with the engine and the event's ``data`` object
MSG_HANDLERS = {
    "EXECUTE_JOB": execute_job,
    "REJECT_JOB": reject_job,
    "KILL_JOB": kill_job,
    "CALL_ME_LATER": call_me_later,
    "REGISTER_PROFILE": register_profile,
    "REGISTER_JOB": register_job,
    "NOTIFY": notify,
    "SET_JOB_METADATA": set_job_metadata,
    "CHANGE_JOB_STATE": change_job_state,
    "SET_RESOURCE_STATE": set_resource_state,
    "QUERY": query,
    "ANSWER": ignored,
    "TO_JOB_MSG": ignored,
}
