"""EASY(P_t, Θ) with online policy tuning: the queue policy changes every period (Gaussier, Lelong,
Reis, Trystram, *Online Tuning of EASY-Backfilling using Queue Reordering Policies*; models.md §A,
"Online selection").

Time is cut into periods of length Δ (option ``period``: ``"day"``, ``"week"`` or seconds) aligned
on multiples of Δ from t = 0.  The policy of period 0 is ``policy`` (FCFS); the policy of every
later period is chosen among ``policies`` (the 12 of models.md §A by default) at the first Batsim
message at or after the period's start (lazily: a period without any event has no decision and no
choice; the choices of a gap of empty periods collapse into one) by ``strategy``:

- ``full``: the cost of policy P_i for a period is the total wait of the jobs submitted in it,
  replayed alone under EASY(P_i, Θ) from an empty machine until drained with their actual run
  times (:mod:`whatif`, in-process on batfeed's engine, so this file also runs behind a real
  Batsim); cumulative cost w(→T; P_i) = Σ_{t<T} λ^{T−1−t} w(t; P_i) (λ: ``discount``), and P_T =
  argmin (lowest index in ``policies`` on ties).  Empty periods cost 0.  That is the paper's text
  (``whatif_jobs: "submitted"``).  The authors' code replays another set (``whatif_jobs: "started"``;
  ocst, branch obps-article, ``bandit.ml`` ``MakeSimulationSelector``, run by obps's ``bandit-onpolicy
  --clairvoyant``): the jobs *started* since the last choice, resubmitted at their submission times,
  plus the jobs *waiting* at the choice, already queued when the replay's first job is submitted (so one
  may start before its own submission: its wait counts negative), from an empty machine until drained;
  the cost is all their waits, and nothing is replayed (cost 0) when no job started.  The choice is then
  made after the message's events (ocst chooses in its reordering, after the instant's submissions).
- ``noisy``: the same, each period's cost of each policy multiplied by ρ ~ U[0.8, 1.2] (one draw
  per evaluated period and policy, in the order of ``policies``).
- ``bandit``: ε-greedy on the waits observed under the policy actually used: jobs started
  (``bandit_jobs: "started"``, the authors' code) or finished in the period; estimate_i =
  Σ_t 1(i,t) λ^{T−1−t} w(t) / (1 + Σ_t 1(i,t) n(t)) (every arm starts at sum 0, count 1, i.e.
  optimistic, as in the authors' code; λ in the numerator only); with probability ε
  (``epsilon``) a uniform policy, else the argmin (lowest index on ties).
- ``random``: a uniform policy per period.

Random draws come from ``numpy.random.default_rng(seed)`` (option ``seed``; the runner's and
campaigns' seed sets it), at each switch: noisy draws ρ for every policy, bandit draws u ~ U[0, 1)
then, if u < ε, the explored index; random draws the index.  The order is only re-keyed when the policy
changes (:meth:`WaitQueue.set_policies`) and that message then gets a decision; otherwise EASY's
code (:class:`~batfeed.schedulers.easy.Easy`, subclassed) decides exactly as ``easy`` does.
``backfill_policy``: a fixed backfill order B (default: the period's P_t); ``theta``,
``reservation``, ``on_machine_down``, ``maintenance`` as in ``easy``.

Actual run times are read from the jobs' delay profiles (``job.profile_dict``): batfeed's runner
enables Batsim's ``--forward-profiles-on-submission`` for this scheduler (``NEEDS_PROFILES``);
Batsim 4.2 also lists the static workloads' profiles in SIMULATION_BEGINS, which pybatsim keeps.
A job without a delay profile stops a ``full``/``noisy`` run with a one-line error.

``log``: a CSV file with one row per choice (period 0 included): ``period``, ``start`` (kΔ),
``time`` (the message that switched), ``policy``, ``evaluated`` (the period whose outcome was
used), ``jobs`` (its jobs: replayed for full/noisy, observed for bandit), ``explored`` (bandit),
then per policy P: ``cost_P``, ``rho_P`` (noisy), ``cum_P`` (full/noisy) or ``sum_P``, ``n_P``,
``est_P`` (bandit, after the update).  Rows are buffered (written every 1024 rows and at the end).
When batfeed exports a run to PREFIX and ``log`` is not given, it is ``PREFIX_tuning.csv``.
"""

from __future__ import annotations

import csv
import logging
import math
import time
from typing import Any

import numpy as np
from batfeed.schedulers.backfill import OptionError
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.options import Option, specs
from batfeed.schedulers.whatif import PastJob, WhatIf
from batsim.batsim import Job

from batfeed.errors import InputError

log = logging.getLogger("batfeed.schedulers")

PERIODS = {"day": 86400.0, "week": 604800.0}
STRATEGIES = ("full", "noisy", "bandit", "random")
TUNE_POLICIES = ("FCFS", "LCFS", "SPF", "LPF", "LQF", "SQF", "LEXP", "SEXP", "LRF", "SRF", "LAF", "SAF")
FLUSH_ROWS = 1024
WHATIF_JOBS = ("submitted", "started")
LOG_COLUMNS = ("period", "start", "time", "policy", "evaluated", "jobs", "explored")
LOG_GROUPS = {"full": ("cost", "cum"), "noisy": ("cost", "rho", "cum"), "bandit": ("sum", "n", "est"), "random": ()}


class TunedEasy(Easy):
    """EASY(P_t, Θ): each period's policy P_t is chosen by full/noisy feedback, an ε-greedy bandit or at random."""

    OPTIONS = specs(Easy.OPTIONS.values(), [
        Option("policy", "policy", "FCFS", "policy of period 0 (before any feedback)"),
        Option("backfill_policy", "policy", None, "fixed backfill order B (null: the period's policy P_t)",
               nullable=True),
        Option("strategy", "choice", "full", "how P_t is chosen: full (what-if replays of the past period under "
               "each policy), noisy (the same, costs x U[0.8, 1.2]), bandit (epsilon-greedy on observed waits), "
               "random", choices=STRATEGIES),
        Option("period", "duration", "day", "period length, periods aligned on multiples of it from t = 0",
               choices=tuple(PERIODS)),
        Option("policies", "policies", None, "the candidate policies, in tie-break order (null: the 12 of models.md "
               "§A: " + ", ".join(TUNE_POLICIES) + ")", nullable=True),
        Option("discount", "number", 1.0, "lambda: weight of a period's cost T - 1 - t periods later",
               minimum=0, maximum=1),
        Option("epsilon", "number", 0.1, "bandit: probability of exploring (a uniform policy)", minimum=0,
               maximum=1),
        Option("bandit_jobs", "choice", "started", "bandit: the jobs whose waits are observed in a period",
               choices=("started", "finished")),
        Option("whatif_jobs", "choice", "submitted", "full/noisy: the jobs a what-if replays: submitted (the paper: "
               "those submitted in the past period, alone) or started (the authors' code: those started since the "
               "last choice, plus the jobs waiting at the choice, queued from the replay's first instant)",
               choices=WHATIF_JOBS),
        Option("seed", "number", 0, "seed of numpy.random.default_rng (noisy, bandit, random)", minimum=0,
               integer=True),
        Option("log", "string", None, "CSV file, one row per period: the choice and its costs or estimates "
               "(exported runs: PREFIX_tuning.csv)", nullable=True, expect="a file path"),
    ])
    NEEDS_PROFILES = True        # batfeed's runner forwards profiles on submission (actual run times)
    LOG_SUFFIX = "_tuning.csv"   # batfeed's runner sets log = PREFIX + LOG_SUFFIX for exported runs

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        o = self.opts
        self.strategy: str = o["strategy"]
        p = o["period"]
        self.delta = PERIODS[p] if isinstance(p, str) else float(p)
        self.candidates: list[str] = list(o["policies"] or TUNE_POLICIES)
        self.lam: float = o["discount"]
        self.rng = np.random.default_rng(o["seed"])
        self.policy: str = o["policy"].upper()          # P_t
        self.period = 0
        self.boundary = self.delta                       # start of the next period
        n = len(self.candidates)
        self.cum = [0.0] * n                             # full/noisy: w(→T; P_i)
        self.sums, self.counts = [0.0] * n, [1.0] * n    # bandit: discounted waits, jobs (+1)
        self.past: list[PastJob] = []                    # full/noisy: jobs submitted this period
        self.seen_wait, self.seen_jobs = 0.0, 0          # bandit: observed this period
        self.waits: dict[str, float] = {}                # bandit "finished": wait of each running job
        self.feedback = self.strategy in ("full", "noisy")
        self.from_queue = self.feedback and o["whatif_jobs"] == "started"   # the authors' what-if (docstring)
        self.observe = "" if self.strategy != "bandit" else o["bandit_jobs"]
        self.whatif: WhatIf | None = None
        self.whatif_s = 0.0                              # wall time spent in what-if replays
        self.choices: list[tuple[int, float, str]] = []  # (period, time, policy)
        self.log_path: str | None = o["log"]
        self._rows: list[list[Any]] = []
        if self.log_path is not None:
            self._write_log("w", [self._header()])       # fails now, not at the end, if unwritable

    # ---------------------------------------------------------------- pybatsim callbacks
    def onSimulationBegins(self) -> None:
        super().onSimulationBegins()
        if self.feedback:
            o = self.opts
            self.whatif = WhatIf(self.nb_machines, {"theta": o["theta"], "reservation": o["reservation"],
                                                    "backfill_policy": o["backfill_policy"], "ties": o["ties"],
                                                    "backfill_theta": o["backfill_theta"]})
            if self.from_queue and not self.whatif.lean:
                raise OptionError(f"option 'whatif_jobs' for {type(self).__name__}: 'started' replays a queue, "
                                  "which needs EASY's count reservations (reservation 'count')")
        self._record_choice(0, 0.0, None, {})

    def onBeforeEvents(self) -> None:
        if not self.from_queue and self.bs.time() >= self.boundary:
            self.switch(self.bs.time())

    def onNoMoreEvents(self) -> None:
        """whatif_jobs "started" chooses here, after the message's events (ocst chooses in its reordering,
        once the instant's submissions are queued), before EASY's decision."""
        if self.from_queue and self.bs.time() >= self.boundary:
            self.switch(self.bs.time())
        super().onNoMoreEvents()

    def on_submit(self, job: Job) -> None:
        super().on_submit(job)
        if self.feedback and not self.from_queue:
            self.past.append(self._past(job))

    def schedule(self) -> None:
        """EASY's decision (its compiled pass, :mod:`passes`); then bandit observes the waits of the jobs it
        started, and whatif_jobs "started" keeps them for the next what-if."""
        if not self.observe and not self.from_queue:
            super().schedule()
            return
        n0 = len(self._to_start)
        super().schedule()
        if self.from_queue:
            self.past += [self._past(job) for job in self._to_start[n0:]]
            return
        now = self.bs.time()
        for job in self._to_start[n0:]:          # in start order, as EASY launched them
            wait = now - float(job.submit_time)   # Entry.r
            if self.observe == "started":
                self.seen_wait += wait
                self.seen_jobs += 1
            else:
                self.waits[job.id] = wait

    def onJobCompletion(self, job: Job) -> None:
        super().onJobCompletion(job)
        if self.observe == "finished":
            w = self.waits.pop(job.id, None)
            if w is not None:
                self.seen_wait += w
                self.seen_jobs += 1

    def onSimulationEnds(self) -> None:
        super().onSimulationEnds()
        self._flush()
        if self.whatif is not None:
            log.info("%s: %d periods chosen, %d what-if replays (%d on the engine, %d avoided), %.2f s",
                     type(self).__name__, len(self.choices), self.whatif.replays, self.whatif.on_engine,
                     self.whatif.skipped, self.whatif_s)

    # ---------------------------------------------------------------- the choice of P_t
    def switch(self, now: float) -> None:
        """First message of a later period: evaluate the periods since the last switch, choose P_t."""
        k = int(now // self.delta)
        if k <= self.period:           # float edge: now reached the boundary but k rounds below it
            k = self.period + 1
        gap, evaluated = k - self.period, self.period
        decay = self.lam ** (gap - 1)  # the empty periods in between cost 0 and only discount
        n = len(self.candidates)
        info: dict[str, list[float]] = {}
        explored = None
        if self.feedback:
            assert self.whatif is not None
            t0 = time.perf_counter()
            queued = self._queued() if self.from_queue else []
            costs = self.whatif.costs(self.past, self.candidates, queued)
            self.whatif_s += time.perf_counter() - t0
            info["cost"] = costs
            if self.strategy == "noisy":
                rho = self.rng.uniform(0.8, 1.2, size=n).tolist()
                info["rho"] = rho
                costs = [c * r for c, r in zip(costs, rho, strict=True)]
            self.cum = [decay * (self.lam * s + c) for s, c in zip(self.cum, costs, strict=True)]
            info["cum"] = self.cum
            choice = _argmin(self.cum)
            jobs = len(self.past) + len(queued)
        elif self.strategy == "bandit":
            used = self.candidates.index(self.policy) if self.policy in self.candidates else -1
            self.sums = [decay * (self.lam * s + (self.seen_wait if i == used else 0.0))
                         for i, s in enumerate(self.sums)]
            if used >= 0:
                self.counts[used] += self.seen_jobs
            est = [s / c for s, c in zip(self.sums, self.counts, strict=True)]
            info.update({"sum": self.sums, "n": self.counts, "est": est})
            explored = bool(self.rng.random() < self.opts["epsilon"])
            choice = int(self.rng.integers(n)) if explored else _argmin(est)
            jobs = self.seen_jobs
        else:
            choice = int(self.rng.integers(n))
            jobs = 0
        self.period, self.boundary = k, (k + 1) * self.delta
        self.past, self.seen_wait, self.seen_jobs = [], 0.0, 0
        new = self.candidates[choice]
        if new != self.policy:
            self.policy = new
            self.wq.set_policies(new, self.opts["backfill_policy"], now)
            self._idle = None
            self._changed = True       # the order changed: this message gets a decision under P_t
        self._record_choice(k, now, evaluated, info, jobs, explored)

    def _past(self, job: Job) -> PastJob:
        return PastJob(job.id, job.submit_time, job.requested_resources, self._runtime(job), job.requested_time,
                       job.json_dict)

    def _queued(self) -> list[PastJob]:
        """The waiting jobs, in the order they were queued (ocst's waiting list, whose ties the replay keeps)."""
        return [self._past(e.job) for e in sorted(self.wq.ordered(), key=lambda e: e.seq)]

    def _runtime(self, job: Job) -> float:
        prof = getattr(job, "profile_dict", None)
        if isinstance(prof, dict) and prof.get("type") == "delay" and isinstance(prof.get("delay"), int | float):
            return float(prof["delay"])
        what = "no profile was sent with it" if not isinstance(prof, dict) else \
            f"its profile '{job.profile}' has type {prof.get('type')!r}"
        raise InputError(f"job {job.id}: {what}; {type(self).__name__} (strategy {self.strategy}) replays past jobs "
                         "with their actual run times, read from delay profiles (run Batsim with "
                         "--forward-profiles-on-submission and delay profiles, or use strategy bandit or random)")

    # ---------------------------------------------------------------- log
    def _header(self) -> list[str]:
        return [*LOG_COLUMNS, *(f"{what}_{p}" for what in LOG_GROUPS[self.strategy] for p in self.candidates)]

    def _record_choice(self, k: int, now: float, evaluated: int | None, info: dict[str, list[float]],
                       jobs: int = 0, explored: bool | None = None) -> None:
        self.choices.append((k, now, self.policy))
        if self.log_path is None:
            return
        row: list[Any] = [k, _num(k * self.delta), _num(now), self.policy, "" if evaluated is None else evaluated,
                          "" if evaluated is None else jobs, "" if explored is None else int(explored)]
        for what in LOG_GROUPS[self.strategy]:
            values = info.get(what)
            row += [_num(v) for v in values] if values is not None else [""] * len(self.candidates)
        self._rows.append(row)
        if len(self._rows) >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self.log_path is not None and self._rows:
            self._write_log("a", self._rows)
            self._rows = []

    def _write_log(self, mode: str, rows: list[list[Any]]) -> None:
        assert self.log_path is not None
        try:
            with open(self.log_path, mode, newline="", encoding="utf-8") as fh:
                csv.writer(fh).writerows(rows)
        except OSError as err:
            raise OptionError(f"option 'log' for {type(self).__name__}: cannot write {self.log_path}: "
                              f"{err.strerror}") from None


def _argmin(values: list[float]) -> int:
    """Index of the smallest value, the lowest index on ties."""
    best = 0
    for i, v in enumerate(values):
        if v < values[best]:
            best = i
    return best


def _num(x: Any) -> Any:
    """Numbers for the CSV: integral floats as ints, others as Python's shortest repr."""
    if isinstance(x, float) and math.isfinite(x) and x.is_integer() and abs(x) < 2 ** 53:
        return int(x)
    return x


Tuned_easy = TunedEasy     # pybatsim's launcher loads schedulers/tuned_easy.py as class "Tuned_easy"
