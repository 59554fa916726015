"""Site-level users (Shmueli's thesis, models.md §C): closed-loop Phase-1 and Phase-2 users that
*generate* their jobs from a behaviour model (``batfeed fit-users``, :mod:`batfeed.users.site_fit`); by default
the thesis's workload of the user's phase (``thesis-phase1``/``thesis-phase2``, :mod:`batfeed.users.site_thesis`).

Each user runs batches: W ~ ``batch_width`` jobs submitted ``intra_batch_gap_s`` apart; the user then
waits for the end of the batch's **last submitted** job (end − submit = response R) and

- ``site-phase1`` (N always-on sessions): thinks ~ ``short_think_s`` and submits the next batch;
- ``site-phase2``: continues with probability p_cont(R) = a / (b·R + 1) (R in minutes) → think ~
  ``short_think_s``, else takes a break ~ ``break_s`` (a new session).  Activity windows: day user (p
  ``day_p``) 07:30–17:30, else night 17:30–07:30 (next day); weekday user (p ``weekday_p``) Mon–Fri, else
  Sat–Sun; the window is shifted by a per-user jitter ~ U[−``jitter_min``, +``jitter_min``] minutes.  A
  completion, think end or break end outside the window suspends the user until its next window start,
  where it submits at once (a new session).

How generated jobs fit the trace-based layer (:mod:`batfeed.users.base`): the model starts with an empty
trace, appends a :class:`TraceJob` per generated job (``submitted_at``/``ended_at`` grow with it) and
``release``-s it at its submit time, so ``pop_due``/``mark_submitted``/``job_ended`` work unchanged; a
batch is generated when it starts.  ``exhausted`` (→ ``registration_finished``) = every user has stopped
and every generated job has been submitted; the run then ends when the last job completes.

Choices where the thesis is silent (models.md "UNDEF → REC" where it has one):

- time 0 = Monday 00:00; all times are whole seconds (samples rounded, ≥ 0; run times ≥ 1 s);
- first batch: Phase-1 users at t = 0; Phase-2 users at t = 0 if inside their window, else at their
  first window start; a window belongs to the day it starts (a weekday night user works Mon–Fri
  evenings into the next morning); boundary instants are inside; windows are checked only between
  batches (never inside one);
- ``duration_s``: no session starts after it (Phase-1: no batch starts after it, its users having one
  session each); a Phase-2 session already running continues (think times) until it ends; the start
  instant ``duration_s`` itself is inside;
- a completion outside the window suspends the user even if it would have continued; p_cont and the
  think/break are drawn at every batch end anyway (the random stream does not depend on the window);
- sizes: the model's pmf in absolute processors (no rescaling to the platform); a size larger than the
  platform is redrawn; locality of sampling: a drawn size is used for ``size_repeat`` consecutive jobs
  of the user, all with the same run time (repetitions run across batch and session boundaries);
- estimates: ``exact`` → walltime = run time + 1 s (Batsim kills a delay job whose walltime ≤ its
  delay, so walltime = run time exactly would kill every job); ``model`` → run time × a factor drawn
  from the model's ``estimate_factor`` quantiles (floored at run time + 1 s; the model must have it);
- per-user RNG ``numpy.random.default_rng([seed, user])``; one stream per user for everything;
- SWF output (``swf``): jobs by submit time (ties: generation order), numbered from 1 (the Batsim job ids
  are the generation order); fields 17/18 link every job of batch k+1 to the last job of batch k of the same
  user (also across breaks and suspensions), 18 = its submit − that job's end; status 1 = completed,
  5 = rejected (ended before its run time could elapse, wait/run −1), 0 = never ended.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from batfeed.schedulers.options import Option
from batfeed.users.base import UserModel, UserModelError
from batfeed.users.site_fit import load_model, sample
from batfeed.users.trace import Trace, TraceJob

DAY = 86400
HOUR = 3600
WINDOWS = {True: (7 * HOUR + 1800, 10 * HOUR), False: (17 * HOUR + 1800, 14 * HOUR)}   # day?: (start, length)

SITE_OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("nb_users", "number", 50, "number of users", minimum=1, integer=True),
    Option("duration_s", "number", 182 * DAY, "user activity: no session starts after it (the run ends when "
           "the last job completes)", minimum=0, unit="seconds"),
    Option("seed", "number", 0, "RNG seed (user u draws from numpy default_rng([seed, u]))", minimum=0,
           integer=True),
    Option("model", "path", None, "behaviour model: a JSON from 'batfeed fit-users' or a built-in name: "
           "'thesis-phase1', 'thesis-phase2' (the thesis's workloads, users/site_thesis.py; null: the one of the "
           "user's phase) or 'default' (fitted on KTH-SP2 + SDSC-BLUE)", nullable=True),
    Option("p_cont_a", "number", None, "p_cont(R) = a/(b·R+1): a (null: the model's)", minimum=0, maximum=1,
           nullable=True),
    Option("p_cont_b", "number", None, "p_cont(R) = a/(b·R+1): b per minute (null: the model's)", minimum=0,
           nullable=True),
    Option("runtime_scale", "number", 1.0, "run times drawn from the model are multiplied by this (a what-if "
           "knob: the thesis's workpool is lighter than the logs', models.md §C)", minimum=0, above=True),
    Option("day_p", "number", 0.7, "probability that a user is a day user (07:30-17:30)", minimum=0, maximum=1),
    Option("weekday_p", "number", 0.8, "probability that a user is a weekday user (Mon-Fri)", minimum=0,
           maximum=1),
    Option("jitter_min", "number", 60.0, "window shift ~ U[-jitter, +jitter]", minimum=0, unit="minutes"),
    Option("estimate", "choice", "exact", "walltime: exact (run time + 1 s) or model (estimate_factor)",
           choices=("exact", "model")),
    Option("swf", "string", None, "write the submitted jobs as SWF here (fields 17/18: dependencies)",
           nullable=True),
)}


PHASE2_ONLY = ("p_cont_a", "p_cont_b", "day_p", "weekday_p", "jitter_min")
PHASE1_OPTIONS = {k: o for k, o in SITE_OPTIONS.items() if k not in PHASE2_ONLY}


class _User:
    __slots__ = ("index", "rng", "day", "weekday", "offset", "length", "size", "runtime", "repeat_left",
                 "last_job", "done", "sessions", "jobs")

    def __init__(self, index: int, rng: np.random.Generator):
        self.index, self.rng = index, rng
        self.day = self.weekday = True
        self.offset, self.length = 0, DAY
        self.size = self.runtime = self.repeat_left = 0
        self.last_job = -1          # trace index of the last job of the user's previous batch
        self.done = False
        self.sessions = self.jobs = 0


class SitePhase1(UserModel):
    """Shmueli's Phase-1 site-level users: N always-on sessions of batches (module docstring)."""

    name = "site-phase1"
    GENERATES = True
    PHASE: ClassVar[int] = 1
    OPTIONS: ClassVar[dict[str, Option]] = PHASE1_OPTIONS

    def __init__(self, trace: Trace | None = None, options: dict[str, Any] | None = None):

        trace = trace if trace is not None else Trace("(generated)", 0, [])
        if trace.jobs:
            raise UserModelError(f"user model '{self.name}' generates its jobs: give no trace")
        super().__init__(trace, options)
        o = self.opts
        self.model = load_model(o["model"] if o["model"] is not None else f"thesis-phase{self.PHASE}")
        for key in ("batch_width", "intra_batch_gap_s", "short_think_s", "size", "size_repeat", "runtime_s",
                    *(("break_s",) if self.PHASE == 2 else ()), *(("estimate_factor",) if o["estimate"] ==
                                                                     "model" else ())):
            if key not in self.model or self.model[key] in ({"quantiles": []}, {}):
                raise UserModelError(f"user model '{self.name}': the behaviour model has no '{key}' distribution")
        pc = self.model["p_cont"]
        self.a = float(pc["a"] if o.get("p_cont_a") is None else o["p_cont_a"])
        self.b = float(pc["b"] if o.get("p_cont_b") is None else o["p_cont_b"])
        self.duration = float(o["duration_s"])
        self.users = [_User(u, np.random.default_rng([int(o["seed"]), u])) for u in range(int(o["nb_users"]))]
        self.job_user: list[int] = []         # trace index -> user
        self.job_last: list[bool] = []        # last submitted job of its batch?
        self.job_dep: list[int] = []          # trace index of the job it depends on (-1: none)
        self.sessions = 0
        self.machine = 0

    # ------------------------------------------------------------------ behaviour
    def p_cont(self, r_min: float) -> float:
        """Probability to continue the session after a batch whose last job had response r_min minutes."""
        return self.a / (self.b * max(0.0, r_min) + 1.0)

    def _draw(self, u: _User, key: str) -> float:
        return sample(self.model[key], u.rng)

    def _secs(self, u: _User, key: str) -> int:
        return max(0, int(round(self._draw(u, key))))

    def start(self) -> None:
        self.machine = int(self.nb_resources or self.model["machine_procs"])
        if not any(v <= self.machine and p > 0 for v, p in zip(self.model["size"]["values"],
                                                                self.model["size"]["probs"], strict=True)):
            raise UserModelError(f"user model '{self.name}': no job size of the behaviour model fits the "
                                 f"{self.machine} processors of the platform")
        for u in self.users:
            self._begin(u)

    def _begin(self, u: _User) -> None:
        self._batch(u, 0, True)

    def on_end(self, index: int, t: float) -> None:
        if not self.job_last[index]:
            return
        u = self.users[self.job_user[index]]
        sub = self.submitted_at[index]
        self._batch_ended(u, float(t), (float(t) - float(sub if sub is not None else t)) / 60.0)

    def _batch_ended(self, u: _User, t: float, r_min: float) -> None:
        nxt = t + self._secs(u, "short_think_s")
        if nxt > self.duration:
            u.done = True
        else:
            self._batch(u, nxt, False)

    # ------------------------------------------------------------------ job generation
    def _shape(self, u: _User) -> tuple[int, int]:
        """(size, run time) of the user's next job: locality of sampling (size_repeat equal jobs)."""
        if u.repeat_left <= 0:
            size = int(sample(self.model["size"], u.rng))
            while size > self.machine or size < 1:
                size = int(sample(self.model["size"], u.rng))
            u.size = size
            u.runtime = max(1, int(round(self._draw(u, "runtime_s") * self.opts["runtime_scale"])))
            u.repeat_left = max(1, int(sample(self.model["size_repeat"], u.rng)))
        u.repeat_left -= 1
        return u.size, u.runtime

    def _batch(self, u: _User, t: float, new_session: bool) -> None:
        width = max(1, int(self._draw(u, "batch_width")))
        if new_session:
            u.sessions += 1
            self.sessions += 1
        dep = u.last_job
        for k in range(width):
            if k:
                t += self._secs(u, "intra_batch_gap_s")
            size, run = self._shape(u)
            wall = float(run + 1)
            if self.opts["estimate"] == "model":
                wall = max(wall, float(round(run * self._draw(u, "estimate_factor"))))
            idx = len(self.trace.jobs)
            name = str(idx + 1)
            self.trace.jobs.append(TraceJob(idx, name, f"u{u.index}", float(t), 0.0, float(run), size, wall,
                                            f"g{name}", {"type": "delay", "delay": float(run)}))
            self.submitted_at.append(None)
            self.ended_at.append(None)
            self.job_user.append(u.index)
            self.job_last.append(k == width - 1)
            self.job_dep.append(dep)
            u.last_job = idx
            u.jobs += 1
            self.release(float(t), idx)

    @property
    def exhausted(self) -> bool:
        return self.nb_submitted == len(self.trace.jobs) and all(u.done for u in self.users)

    # ------------------------------------------------------------------ results
    def stats(self) -> dict[str, Any]:
        jobs = len(self.trace.jobs)
        return {"users": len(self.users), "jobs": jobs, "sessions": self.sessions,
                "jobs_per_session": jobs / self.sessions if self.sessions else 0.0}

    def finish(self) -> None:
        if self.opts["swf"]:
            write_swf(self, self.opts["swf"])


class SitePhase2(SitePhase1):
    """Shmueli's Phase-2 site-level users: sessions ended by p_cont(R), breaks, activity windows."""

    name = "site-phase2"
    PHASE = 2
    OPTIONS = SITE_OPTIONS

    def start(self) -> None:
        o = self.opts
        for u in self.users:
            u.day = bool(u.rng.random() < o["day_p"])
            u.weekday = bool(u.rng.random() < o["weekday_p"])
            jitter = int(round(u.rng.uniform(-1.0, 1.0) * float(o["jitter_min"]) * 60.0))
            start, u.length = WINDOWS[u.day]
            u.offset = start + jitter
        super().start()

    def in_window(self, u: _User, t: float) -> bool:
        d0 = math.floor((t - u.offset) / DAY)
        return any(self._works(u, d) and d * DAY + u.offset <= t <= d * DAY + u.offset + u.length
                   for d in (d0 - 1, d0))

    def next_window_start(self, u: _User, t: float) -> float:
        d = math.ceil((t - u.offset) / DAY)
        while not self._works(u, d):
            d += 1
        return float(d * DAY + u.offset)

    @staticmethod
    def _works(u: _User, d: int) -> bool:
        return (d % 7 < 5) == u.weekday

    def _begin(self, u: _User) -> None:
        t = 0.0 if self.in_window(u, 0.0) else self.next_window_start(u, 0.0)
        if t > self.duration:
            u.done = True
        else:
            self._batch(u, t, True)

    def _batch_ended(self, u: _User, t: float, r_min: float) -> None:
        cont = bool(u.rng.random() < self.p_cont(r_min))
        gap = self._secs(u, "short_think_s" if cont else "break_s")
        if not self.in_window(u, t):
            nxt, new = self.next_window_start(u, t), True
        else:
            nxt, new = t + gap, not cont
            if not self.in_window(u, nxt):
                nxt, new = self.next_window_start(u, nxt), True
        if new and nxt > self.duration:
            u.done = True
        else:
            self._batch(u, nxt, new)


def write_swf(m: SitePhase1, path: str | Path) -> None:
    """The submitted jobs as SWF (18 fields; 17/18 = dependency on the previous batch's last job)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    s = m.stats()
    lines = [f"; batfeed site-level users: {m.name}", f"; MaxProcs: {m.machine}", f"; MaxJobs: {s['jobs']}",
             f"; Note: users={s['users']} seed={m.opts['seed']} duration_s={m.duration:g} "
             f"sessions={s['sessions']} jobs_per_session={s['jobs_per_session']:.4f}",
             "; Note: time 0 = Monday 00:00; fields 17/18 = last job of the user's previous batch, "
             "think time from its end"]

    def num(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:.3f}"

    jobs = m.trace.jobs
    subs = [j.subtime if m.submitted_at[j.index] is None else m.submitted_at[j.index] for j in jobs]
    order = sorted(range(len(jobs)), key=lambda i: (subs[i], i))     # SWF: by submit time, numbered 1..n
    number = [0] * len(jobs)
    for k, i in enumerate(order):
        number[i] = k + 1
    for i in order:
        j = jobs[i]
        sub, end, subtime = m.submitted_at[i], m.ended_at[i], subs[i]
        if sub is None or end is None:
            status, wait, run = 0, -1.0, -1.0
        elif end - sub + 1e-6 >= j.runtime:
            status, wait, run = 1, end - sub - j.runtime, j.runtime
        else:
            status, wait, run = 5, -1.0, -1.0
        dep = m.job_dep[i]
        dep_end = m.ended_at[dep] if dep >= 0 else None
        think = subtime - dep_end if dep_end is not None else -1.0
        procs = j.res if status == 1 else -1
        fields = [number[i], subtime, wait, run, procs, -1, -1, j.res, j.walltime, -1, status,
                  m.job_user[i] + 1, -1, -1, -1, -1, number[dep] if dep >= 0 else -1, think]
        lines.append(" ".join(num(float(f)) for f in fields))
    p.write_text("\n".join(lines) + "\n")
