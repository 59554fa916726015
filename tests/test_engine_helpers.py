"""Shared helpers of the engine tests (tests/test_engine_*.py); this module holds no test.

- :func:`write_workload` / :func:`write_events` write Batsim inputs into a temporary directory;
- :class:`Scripted` is a pybatsim ``BatsimScheduler`` whose decisions are scripted per message
  time and which records what its callbacks saw;
- :class:`RecordingTransport` records every raw message the engine sends and every reply;
- :func:`run` simulates with both and checks the job accounting of every run
  (submitted == successful + failed + walltime + killed + rejected).

The other test files import it as ``from test_engine_helpers import ...`` (pytest puts the
``tests`` directory, which has no ``__init__.py``, on ``sys.path``).
"""

from __future__ import annotations

import copy
import csv
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from batsim.batsim import BatsimScheduler

from batfeed.engine import EngineConfig, SimulationResult, load_simulation
from batfeed.engine.transport import InProcessTransport

REPO = Path(__file__).resolve().parent.parent
SMALL_4 = REPO / "platforms" / "small_4.xml"          # 4 hosts of 1Gf, ids 0-3, zero latency
ENGINE_DATA = Path(__file__).resolve().parent / "data" / "engine"

JOBS_HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,"
               "success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,"
               "stretch,allocated_resources,consumed_energy,metadata")

Action = Callable[[Any], None]   # receives pybatsim's Batsim object (scheduler.bs)


# ---------------------------------------------------------------------- inputs
def job(jid: Any, subtime: float, res: int, profile: str, walltime: float | None = None,
        **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": jid, "subtime": subtime, "res": res, "profile": profile}
    if walltime is not None:
        out["walltime"] = walltime
    out.update(extra)
    return out


def delay(seconds: float, **extra: Any) -> dict[str, Any]:
    return {"type": "delay", "delay": seconds, **extra}


def write_workload(directory: Path, jobs: list[dict[str, Any]], profiles: dict[str, Any],
                   name: str = "w.json", nb_res: Any = 4, **top: Any) -> Path:
    data: dict[str, Any] = {"nb_res": nb_res, "jobs": jobs, "profiles": profiles, **top}
    path = Path(directory) / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_events(directory: Path, events: list[dict[str, Any]], name: str = "events.txt") -> Path:
    path = Path(directory) / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


# ---------------------------------------------------------------------- scheduler side
def raw(etype: str, **data: Any) -> Action:
    """Append a raw decision stamped with the scheduler's current time (bs.time())."""
    return lambda bs: bs._events_to_send.append({"timestamp": bs.time(), "type": etype, "data": data})


def raw_event(event: dict[str, Any]) -> Action:
    """Append ``event`` exactly as given (to send malformed or mis-stamped events)."""
    return lambda bs: bs._events_to_send.append(copy.deepcopy(event))


def execute(job_id: str, alloc: str) -> Action:
    return raw("EXECUTE_JOB", job_id=job_id, alloc=alloc)


def reject(job_id: str) -> Action:
    return raw("REJECT_JOB", job_id=job_id)


def kill(*job_ids: str) -> Action:
    return raw("KILL_JOB", job_ids=list(job_ids))


def call_me_later(t: float) -> Action:
    return raw("CALL_ME_LATER", timestamp=t)


def set_metadata(job_id: str, text: str) -> Action:
    return raw("SET_JOB_METADATA", job_id=job_id, metadata=text)


def notify(kind: str) -> Action:
    return raw("NOTIFY", type=kind)


def consume(seconds: float) -> Action:
    """pybatsim's consume_time: later decisions are stamped later, and the reply's now moves."""
    return lambda bs: bs.consume_time(seconds)


class Scripted(BatsimScheduler):
    """Answers each message with the actions scripted for its ``now``.

    ``script`` is ``{time: [action, ...]}`` or a list of ``(time, [action, ...])`` pairs: the first
    pending entry whose time equals the message's ``now`` runs (in ``onNoMoreEvents``) and is
    consumed, so a second entry for the same time answers the next message at that time.
    The SIMULATION_BEGINS message is answered with ``at_begin`` only (jobs with subtime 0 come in
    the next message, also at now=0, which the script's entry for time 0 answers).
    """

    def __init__(self, script: dict[float, list[Action]] | Iterable[tuple[float, list[Action]]] = (),
                 at_begin: list[Action] = ()):
        super().__init__({})
        self.at_begin = list(at_begin)
        self._begins = False
        items = script.items() if isinstance(script, dict) else script
        self.script: list[tuple[float, list[Action]]] = [(float(t), list(a)) for t, a in items]
        self.submitted: list[tuple[float, str]] = []
        self.completed: list[tuple[float, str, str, Any]] = []   # (now, id, state, return_code)
        self.killed: list[tuple[float, str, Any]] = []           # (now, id, progress)
        self.calls: list[float] = []
        self.unavailable: list[tuple[float, str]] = []
        self.available: list[tuple[float, str]] = []
        self.generic: list[dict[str, Any]] = []
        self.nows: list[float] = []

    def onBeforeEvents(self) -> None:
        self.nows.append(self.bs.time())

    def onSimulationBegins(self) -> None:
        self._begins = True

    def onJobSubmission(self, job: Any) -> None:
        self.submitted.append((self.bs.time(), job.id))

    def onJobCompletion(self, job: Any) -> None:
        self.completed.append((self.bs.time(), job.id, job.job_state.name, job.return_code))

    def onJobsKilled(self, jobs: list[Any]) -> None:
        self.killed += [(self.bs.time(), j.id, j.progress) for j in jobs]

    def onRequestedCall(self) -> None:
        self.calls.append(self.bs.time())

    def onNotifyEventMachineUnavailable(self, machines: Any) -> None:
        self.unavailable.append((self.bs.time(), str(machines)))

    def onNotifyEventMachineAvailable(self, machines: Any) -> None:
        self.available.append((self.bs.time(), str(machines)))

    def onNotifyGenericEvent(self, event_data: dict[str, Any]) -> None:
        self.generic.append(event_data)

    def onDeadlock(self) -> None:
        pass

    def onNoMoreEvents(self) -> None:
        if self._begins:
            self._begins = False
            for action in self.at_begin:
                action(self.bs)
            return
        now = self.bs.time()
        for i, (t, actions) in enumerate(self.script):
            if t == now:
                del self.script[i]
                for action in actions:
                    action(self.bs)
                return


# ---------------------------------------------------------------------- engine side
class RecordingTransport(InProcessTransport):
    """The in-process transport, keeping a deep copy of each message and of each reply."""

    def __init__(self, scheduler: Any):
        super().__init__(scheduler)
        self.messages: list[dict[str, Any]] = []
        self.replies: list[dict[str, Any]] = []

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        self.messages.append(copy.deepcopy(message))
        reply = super().exchange(message)
        self.replies.append(copy.deepcopy(reply))
        return reply


def check_accounting(result: SimulationResult) -> None:
    c = result.counts
    finished = (c["completed_successfully"] + c["completed_failed"] + c["completed_walltime_reached"]
                + c["completed_killed"])
    assert c["submitted"] == finished + c["rejected"], c


def run(workloads: list[Path], scheduler: Any, *, platform: Path = SMALL_4, events: list[Path] | tuple = (),
        config: EngineConfig | None = None, export: Path | str | None = None,
        transport: RecordingTransport | None = None) -> tuple[SimulationResult, RecordingTransport]:
    sim = load_simulation(platform, workloads, events, config)
    tr = transport if transport is not None else RecordingTransport(scheduler)
    result = sim.run(tr, export)
    check_accounting(result)
    return result, tr


# ---------------------------------------------------------------------- reading results
def types(message: dict[str, Any]) -> list[str]:
    """Event types of a message, NOTIFY events shown as ``NOTIFY:<type>``."""
    return [f"NOTIFY:{e['data']['type']}" if e["type"] == "NOTIFY" else e["type"] for e in message["events"]]


def events_of(messages: list[dict[str, Any]], etype: str) -> list[dict[str, Any]]:
    return [e for m in messages for e in m["events"] if e["type"] == etype]


def message_at(messages: list[dict[str, Any]], now: float, index: int = 0) -> dict[str, Any]:
    found = [m for m in messages if m["now"] == now]
    assert len(found) > index, f"no message #{index} at now={now}: {[m['now'] for m in messages]}"
    return found[index]


def jobs_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def timeline(path: Path) -> list[tuple[str, str, str, str, str, str]]:
    """(workload, job_id, final_state, start, finish, alloc) per _jobs.csv row, in file order."""
    return [(r["workload_name"], r["job_id"], r["final_state"], r["starting_time"], r["finish_time"],
             r["allocated_resources"]) for r in jobs_rows(path)]
