"""Shared core of batfeed's backfilling schedulers (EASY, conservative; later Maui and LOS).

Algorithms only decide (``schedule``), through :meth:`BackfillScheduler.launch` and the base class's
buffered ``start``/``reject``; this class keeps the ordered :class:`WaitQueue` (policies of
models.md §A), the availability :class:`Profile` (running jobs' expected ends, reservations,
maintenance windows), and handles the machines' life:

- machines reported unavailable are never allocated and leave the profile; what happens to the
  jobs running on them is option ``on_machine_down``: ``"ignore"`` (default: they continue, as
  Batsim lets them; the machines come back when the outage ends), ``"kill-drop"`` (killed and
  counted as dropped) or ``"kill-resubmit"`` (killed and registered again as ``<id>#resub<n>``
  with a copy of their profile; needs ``--enable-dynamic-jobs``, otherwise they are dropped with a
  warning; the scheduler then sends ``registration_finished`` once no static job, no external
  event and nothing running or waiting is left to kill);
- ``maintenance``: planned windows ``[{"start": s, "end": e, "machines": "0-3"}, ...]`` or the path
  of a Batsim events file (``machine_unavailable``/``machine_available`` pairs): no job is placed
  on those machines if its expected span [now, now + p̃) overlaps the window, and reservations
  count them as taken during the window;
- options come from pybatsim's ``-o`` JSON / ``batfeed simulate --options``; unknown keys or
  values stop the run with a one-line :class:`OptionError`;
- the algorithm runs only after a message that changed something (submission, completion,
  availability) and when at least one machine is free.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from batfeed.schedulers import passes
from batfeed.schedulers.base import BatfeedScheduler, procset_intervals
from batfeed.schedulers.jobqueue import Entry, WaitQueue
from batfeed.schedulers.options import Option, OptionError, validate
from batfeed.schedulers.profile import Profile
from batfeed.schedulers.resources import Intervals, count, intersect, parse, subtract, union
from batsim.batsim import Job
from procset import ProcSet

log = logging.getLogger("batfeed.schedulers")

ON_MACHINE_DOWN = ("ignore", "kill-resubmit", "kill-drop")
POLICY = Option("policy", "policy", "FCFS", "primary queue order P (ties: submission order)")
ON_DOWN = Option("on_machine_down", "choice", "ignore", "jobs running on machines that become unavailable: "
                 "continue (ignore, as in Batsim), are killed (kill-drop) or killed and resubmitted as "
                 "<id>#resub<n> (kill-resubmit, needs --enable-dynamic-jobs)", choices=ON_MACHINE_DOWN)
MAINTENANCE = Option("maintenance", "maintenance", None, "planned windows: no job whose span [t, t + walltime) "
                     "overlaps a window uses its machines", nullable=True)
__all__ = ["BackfillScheduler", "OptionError", "load_maintenance", "walltime_warnings", "ON_MACHINE_DOWN"]


def load_maintenance(spec: Any) -> list[tuple[float, float, Intervals]]:
    """Windows (start, end, machines) from the ``maintenance`` option (a list, or an events file path)."""
    if spec is None:
        return []
    if isinstance(spec, str):
        return _windows_from_events(spec)
    if not isinstance(spec, list):
        raise OptionError(f"option 'maintenance' must be a list of windows or an events file path, got {spec!r}")
    out = []
    for w in spec:
        try:
            s, e, m = float(w["start"]), float(w["end"]), parse(w["machines"])
        except (KeyError, TypeError, ValueError) as err:
            raise OptionError(f"bad maintenance window {w!r}: need start, end and machines ('0-3 7'): {err}") from None
        if not 0 <= s < e or not m:
            raise OptionError(f"bad maintenance window {w!r}: need 0 <= start < end and some machines")
        out.append((s, e, m))
    return out


def _windows_from_events(path: str) -> list[tuple[float, float, Intervals]]:
    opened: dict[int, float] = {}
    spans: dict[tuple[float, float], list[tuple[int, int]]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise OptionError(f"option 'maintenance': cannot read events file {path}: {err.strerror}") from None
    events = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                ev = json.loads(line)
                events.append((float(ev["timestamp"]), ev["type"] != "machine_available", ev, n))
            except (ValueError, KeyError, TypeError) as err:
                raise OptionError(f"{path}:{n}: bad event ({err})") from None
    for t, _, ev, n in sorted(events, key=lambda x: x[:2]):
        if ev["type"] not in ("machine_unavailable", "machine_available"):
            continue
        try:
            machines = [m for a, b in parse(ev["resources"]) for m in range(a, b + 1)]
        except (KeyError, ValueError) as err:
            raise OptionError(f"{path}:{n}: bad resources ({err})") from None
        for m in machines:
            if ev["type"] == "machine_unavailable":
                opened.setdefault(m, t)
            elif m in opened:
                spans.setdefault((opened.pop(m), t), []).append((m, m))
    for m, s in opened.items():
        spans.setdefault((s, float("inf")), []).append((m, m))
    return sorted((s, e, union(ivs, [])) for (s, e), ivs in spans.items() if e > s)


def walltime_warnings(scheduler: str | None, workloads: Iterable[Any]) -> list[str]:
    """One line per static workload with jobs without walltime, when ``scheduler`` (a batfeed name or
    ``module:Class``) relies on walltimes (``NEEDS_WALLTIME``): such jobs count as never ending."""
    from batfeed.registry import BUILTIN

    target = BUILTIN.get(str(scheduler).lower(), str(scheduler))
    module, _, name = target.partition(":")
    if not name or "/" in target or not module.startswith("batfeed."):
        return []
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return []                  # make_scheduler reports it
    if not getattr(cls, "NEEDS_WALLTIME", False):
        return []
    out = []
    for w in workloads:
        n = sum(1 for j in w.jobs if j.walltime <= 0)
        if n:
            out.append(f"warning: {n} of {len(w.jobs)} jobs of {w.name} have no walltime: {cls.__name__} counts "
                       "them as never ending, so it cannot reserve or backfill around them (give walltimes, e.g. "
                       "batfeed convert --walltime-fallback)")
    return out


class BackfillScheduler(BatfeedScheduler):
    """Base of the backfilling algorithms; subclasses implement ``schedule()`` and extend ``OPTIONS``."""

    OPTIONS: dict[str, Option] = {o.name: o for o in (POLICY, ON_DOWN, MAINTENANCE)}
    NEEDS_WALLTIME = True           # reservations and backfilling use the requested times
    trace_reservations = False      # tests: also record reservations when no machine is free
    PROFILE_ENDS_IN_STEPS = False   # True for schedulers calling Profile.earliest() at every decision

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        self.opts = self.parse_options(self.options)
        self.wq = self.make_queue()
        self.profile = Profile(ends_in_steps=self.PROFILE_ENDS_IN_STEPS)
        self.windows = load_maintenance(self.opts["maintenance"])
        self.reservations: list[tuple[float, str, float]] = []   # (now, job id, reserved start)
        self.downtime_killed: list[str] = []
        self.resubmitted: dict[str, str] = {}
        self.dropped: list[str] = []
        self._killing: set[str] = set()
        self._changed = False        # something happened since the last decision
        self._ended = False          # a job ended / machines changed since the last decision
        self._registration_done = False
        self._calls: set[float] = set()
        self._resubmit_mode = self.opts["on_machine_down"] == "kill-resubmit"

    # ---------------------------------------------------------------- options
    @classmethod
    def parse_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """The options with their defaults, validated against ``OPTIONS`` (:mod:`options`)."""
        return validate(cls.OPTIONS, options, cls.__name__)

    def make_queue(self) -> WaitQueue:
        o = self.opts
        return WaitQueue(o["policy"], o.get("backfill_policy"), o.get("theta"), o.get("ties", "oldest"),
                         o.get("backfill_theta", True))

    # ---------------------------------------------------------------- decisions
    def launch(self, e: Entry, ivs: Intervals, now: float) -> None:
        """Start entry ``e`` now on ``ivs`` (already out of the free set); the caller removes it from the queue."""
        passes.launch(e, ivs, now, self.profile, self.running, self._to_start)

    def allocate(self, e: Entry, now: float, exclude: Intervals | tuple[()] = ()) -> Intervals | None:
        """Take the lowest free machines for ``e`` outside ``exclude`` and the windows its span overlaps."""
        free = self.free
        if e.q > free.count:
            return None
        if not exclude and not self.profile.windows:
            return free.take_lowest(e.q)
        excl = self.profile.blocked(now, now + e.p) if self.profile.windows else []
        if exclude:
            excl = union(excl, list(exclude))
        return self.free.take_lowest_outside(e.q, excl)

    def record(self, now: float, e: Entry, t: float) -> None:
        self.reservations.append((now, e.id, t))

    # ---------------------------------------------------------------- pybatsim callbacks
    def onSimulationBegins(self) -> None:
        super().onSimulationBegins()
        for s, e, m in self.windows:
            if m[-1][1] >= self.nb_machines:
                raise OptionError(f"maintenance window {s:g}-{e:g}: machine {m[-1][1]} does not exist "
                                  f"(the platform has {self.nb_machines})")
            self.profile.add_window(s, e, m)

    def on_submit(self, job: Job) -> None:
        self.wq.push(job, self.bs.time(), self.planned_walltime(job))
        self._changed = True

    def planned_walltime(self, job: Job) -> float | None:
        """The requested time to plan with, when not the job's Batsim walltime (None: that walltime)."""
        return None

    def onJobCompletion(self, job: Job) -> None:
        jid = job.id
        ivs = self.running.pop(jid, None)
        if ivs is not None:
            self.free.release(subtract(ivs, self.unavailable) if self.unavailable else ivs)
        self.profile.remove(jid)
        if self._killing:
            self._killing.discard(jid)
        self._changed = self._ended = True

    def onNotifyEventMachineUnavailable(self, machines: ProcSet) -> None:
        super().onNotifyEventMachineUnavailable(machines)
        self.profile.unavailable = self.unavailable
        down = procset_intervals(machines)
        hit = []
        for jid, ivs in self.running.items():
            if intersect(ivs, down):
                self.profile.set_ret(jid, count(subtract(ivs, self.unavailable)))
                hit.append(jid)
        self._changed = self._ended = True
        mode = self.opts["on_machine_down"]
        hit = [j for j in hit if j not in self._killing]
        if mode == "ignore" or not hit:
            return
        jobs = [self.bs.jobs[j] for j in hit]
        for job in jobs:
            # one KILL_JOB per job: a job ending at this very instant is absent from its JOB_KILLED's
            # job_progress (Batsim's killer finds it finished), and pybatsim 3.2.1 raises KeyError on
            # a JOB_KILLED whose job_progress lacks some but not all of its jobs
            self.bs.kill_jobs([job])
        self._killing.update(hit)
        self.downtime_killed += hit
        for job in jobs:
            if mode == "kill-resubmit" and self.bs.dynamic_job_registration_enabled:
                self._resubmit(job)
            else:
                if mode == "kill-resubmit":
                    log.warning("cannot resubmit %s killed by a downtime: dynamic jobs are disabled "
                                "(run with --enable-dynamic-jobs); dropped", job.id)
                self.dropped.append(job.id)

    def _resubmit(self, job: Job) -> None:
        wl, _, name = job.id.partition("!")
        base, sep, n = name.rpartition("#resub")
        attempt = int(n) + 1 if sep and n.isdigit() else 1
        local = f"{base if sep and n.isdigit() else name}#resub{attempt}"
        profile = f"{job.profile}@{local}"
        self.bs.register_profiles(wl, {profile: job.profile_dict})
        new = self.bs.register_job(f"{wl}!{local}", job.requested_resources, job.requested_time, profile)
        new.json_dict = {**job.json_dict, "id": new.id, "subtime": self.bs.time(), "profile": profile}
        self.resubmitted[job.id] = new.id
        log.info("%s killed by a downtime, resubmitted as %s", job.id, new.id)
        if not self.bs.ack_of_dynamic_jobs:
            self.onJobSubmission(new)      # Batsim sends no JOB_SUBMITTED without acknowledgements

    def onNotifyEventMachineAvailable(self, machines: ProcSet) -> None:
        super().onNotifyEventMachineAvailable(machines)
        self.profile.unavailable = self.unavailable
        up = procset_intervals(machines)
        for jid, ivs in self.running.items():
            if intersect(ivs, up):
                self.profile.set_ret(jid, count(subtract(ivs, self.unavailable)))
        self._changed = self._ended = True

    def onRequestedCall(self) -> None:
        self._changed = True

    def onNoMoreEvents(self) -> None:
        if self._changed and self.wq.n:
            self.schedule()
        self._changed = False
        if self._to_start or self._to_reject:
            self.flush()
        if self.profile.windows and self.wq.n:       # wake up when a window ends (no event then)
            now = self.bs.time()
            nxt = min((w.end for w in self.profile.windows if now < w.end < float("inf")), default=None)
            if nxt is not None and nxt not in self._calls:
                self._calls.add(nxt)
                self.bs.wake_me_up_at(nxt)
        if (self._resubmit_mode and not self._registration_done
                and self.bs.dynamic_job_registration_enabled and self.bs.no_more_static_jobs
                and (self.bs.no_more_external_events or not (self.running or len(self.wq)))):
            self.bs.notify_registration_finished()
            self._registration_done = True

    def onSimulationEnds(self) -> None:
        if self.downtime_killed or self.opts["on_machine_down"] != "ignore":
            log.info("%s: %d job(s) killed by downtimes, %d resubmitted, %d dropped", type(self).__name__,
                     len(self.downtime_killed), len(self.resubmitted), len(self.dropped))
