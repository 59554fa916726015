"""EASY(P, Θ) backfilling (Gaussier, Lelong, Reis, Trystram, *Online Tuning of EASY-Backfilling
using Queue Reordering Policies*; models.md §A).

Options (pybatsim ``-o`` JSON, ``batfeed simulate --options``)::

    policy           primary order P, one of the 12 of models.md §A or a registered key (FCFS)
    backfill_policy  backfill order B (default: P)
    theta            starvation threshold Θ in seconds (144000 = 40 h); null disables it
    ties             "oldest" (default: equal keys by arrival), "newest" (the authors' later ocst) or
                     "obps" (the ocst their workflow pins: Θ as a criterion, B's ties reversed; jobqueue.py)
    backfill_theta   with ties "obps": Θ orders B too (true, ocst's ``threshold``) or not (``bandit``)
    reservation      "count" (default) or "machines"
    on_machine_down  "ignore" (default), "kill-resubmit", "kill-drop"   (see backfill.py)
    maintenance      planned windows, or an events file path            (see backfill.py)

At each decision (``reservation: "count"``, the pseudo-code of models.md §A, from scratch):
Q = jobs waiting longer than Θ by submission, then the others in order P; start jobs from the head
of Q while they fit; then the head gets a reservation: running jobs (including those just
started) sorted by expected end s + p̃ (ties: start order) give back their machines until q_head
are free — that end is the *shadow* time and the surplus then, ``extra``, is what the head leaves
(counted at the job that crosses q_head, as in the pseudo-code and in the authors' simulator
ocst, so jobs ending at the same instant after it are not counted); one greedy pass over the other
jobs in order B (starved ones first; with ``ties: "newest"`` as in ocst's ``easy.ml``, the rest of Q
sorted stably by B) starts every job with
``q <= free and (now + p̃ <= shadow or q <= extra)``, ``extra -= q`` for those ending after the
shadow.  A job without walltime has p̃ = inf: it only backfills on ``extra`` machines, and when
running jobs without walltime hold what the head needs, the shadow is inf and every job that fits
may start.  Shortcuts that change no decision (tests/test_backfill_properties.py compares with a
naive transcription of the pseudo-code): no pass when no machine is free (nothing could start);
the backfill pass jumps over the waiting jobs that cannot qualify (``QueueIndex.scan``) instead of
examining all of them, and is skipped when no waiting job fits in the free machines; and when
nothing changed since a pass that started nothing (same running jobs, free machines and head), only
the jobs submitted since are tried.

The count mode's decision runs as one function, :func:`passes.easy_count` (compiled by the kernel,
docs/kernel.md), unless planned windows, traced reservations or a subclass's own ``launch``,
``allocate``, ``shadow`` or ``_backfill_count`` need the methods below (tests/test_passes.py: both
take the same decisions).

``reservation: "machines"`` reproduces batsched's ``easy_bf`` (src/algo/easy_bf.cpp with
src/schedule.cpp's first-fit time slices and the basic resource selector):

- the head's reservation holds *specific* machines: the lowest-numbered q_head machines free at the
  earliest expected end where q_head machines are free (all jobs ending then count);
- a later job starts now on the lowest-numbered free machines if it ends (now + p̃) no later than
  the reservation starts, otherwise only on free machines outside the reserved ones;
- when no job ended since the previous decision (and no machine changed state), only the jobs
  submitted since then are tried, in submission order, as batsched does; otherwise the whole queue
  is traversed in order.
Batsched has no Θ and handles no downtime: use ``theta: null`` and no downtime to compare with it.

Planned maintenance (option ``maintenance``) in both modes: a job whose span [t, t + p̃) overlaps a
window never gets its machines, and the head's reservation is the earliest time at which q_head
machines outside the windows its span would overlap are free.
"""

from __future__ import annotations

from typing import Any

from batfeed.schedulers import passes
from batfeed.schedulers.backfill import BackfillScheduler
from batfeed.schedulers.jobqueue import TIES, Entry, ScanState
from batfeed.schedulers.options import Option, OptionError, specs
from batfeed.schedulers.resources import Intervals, count, intersect, lowest, subtract, union

INF = float("inf")


class Easy(BackfillScheduler):
    OPTIONS = specs(BackfillScheduler.OPTIONS.values(), [
        Option("backfill_policy", "policy", None, "backfill order B (null: the same as policy)", nullable=True),
        Option("theta", "number", 144000.0, "starvation threshold: jobs waiting longer go first, by submission "
               "(null: none)", minimum=0, nullable=True, unit="seconds"),
        Option("ties", "choice", "oldest", "order of equal keys: oldest (by arrival; starved jobs first in the "
               "backfill order), newest (the authors' simulator ocst: newest first, and B's ties follow the "
               "primary order, starved jobs ranked by B) or obps (the ocst obps pins, c0a0c57: by arrival, B's "
               "ties in reverse primary order, Θ as a criterion of 9999999 + wait)", choices=TIES),
        Option("backfill_theta", "bool", True, "with ties obps: Θ also orders the backfill pass (starved jobs "
               "first; ocst's threshold command, the fixed policies) or not (false: its bandit command, the tuned "
               "runs and their what-ifs: B ranks starved jobs like the others)"),
        Option("reservation", "choice", "count", "count: the head reserves a number of machines (the paper); "
               "machines: the lowest machines free at its reserved start (batsched easy_bf)",
               choices=("count", "machines")),
    ])

    def __init__(self, options=None):
        super().__init__(options)
        self.machines_mode = self.opts["reservation"] == "machines"
        self._idle: tuple | None = None     # (profile version, free, head, shadow, extra) of a decision
                                            # that started nothing
        cls = type(self)
        # the whole decision as one function of the core's state (passes.py; compiled by the kernel)
        # unless a subclass changes a step of it, or batsched's machine reservations, planned windows or
        # traced reservations are asked for
        self._pass = not self.machines_mode and \
            cls.launch is BackfillScheduler.launch and cls.allocate is BackfillScheduler.allocate and \
            cls.shadow is Easy.shadow and cls._backfill_count is Easy._backfill_count

    @classmethod
    def parse_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        o = super().parse_options(options)
        if not o["backfill_theta"] and o["ties"] != "obps":
            raise OptionError(f"option 'backfill_theta' for {cls.__name__}: false needs ties 'obps' (the "
                              f"authors' ocst), got ties {o['ties']!r}")
        return o

    def schedule(self) -> None:
        now = self.bs.time()
        if self._pass and not self.profile.windows and not self.trace_reservations:
            self._idle = passes.easy_count(self.wq, self.profile, self.free, self.running, self._to_start, now,
                                           self._idle)
            self._ended = False
            return
        wq = self.wq
        wq.refresh(now)
        new, ended = wq.new, self._ended
        wq.new = []
        self._ended = False
        if self.free.count == 0 and not self.trace_reservations:
            self._idle = None
            return
        self.profile.prune_windows(now)
        head = wq.head()                              # 1) start from the head while it fits
        idle = self._idle is not None
        while head is not None:
            ivs = self.allocate(head, now)
            if ivs is None:
                break
            wq.remove(head)
            self.launch(head, ivs, now)
            head = wq.head()
            idle = False
        if head is None:
            self._idle = None
        elif self.machines_mode:
            self._backfill_machines(now, head, new, ended)
        else:
            self._backfill_count(now, head, new, idle)

    # ---------------------------------------------------------------- reservation of the head
    def shadow(self, now: float, head: Entry) -> tuple[float, int]:
        """(shadow time, extra) of models.md §A step 2 (window-aware when maintenance is planned)."""
        free = self.free.count
        if not self.profile.windows:
            t, acc = self.profile.crossing(head.q - free)
            return t, max(free + acc - head.q, 0)
        t, usable, _ = self._walk(now, head, per_job=True)
        return t, max(usable - head.q, 0)

    def _walk(self, now: float, head: Entry, per_job: bool) -> tuple[float, int, Intervals]:
        """Earliest t at which head.q machines are free (expected ends) and usable for [t, t + p̃).

        Returns (t, machines usable then, their set); (inf, 0, []) if never.  ``per_job``: check
        after each job (count mode, models.md §A); otherwise after all the jobs ending at t
        (batsched's time slices).
        """
        d, q, prof = head.p, head.q, self.profile
        windows = bool(prof.windows)
        free_ivs = self.free.intervals()
        pieces: list[Intervals] = [free_ivs]
        n = self.free.count
        times = [(w.end, 1, str(i)) for i, w in enumerate(prof.windows) if w.end > now] if windows else []
        items = sorted(times + [(end, 0, jid) for end, _, jid in prof.running()]) if windows else \
            [(end, 0, jid) for end, _, jid in prof.running()]
        for k, (t, kind, jid) in enumerate(items):
            if kind == 0:
                ivs = prof.jobs[jid][1]
                ivs = subtract(ivs, self.unavailable) if self.unavailable else ivs
            else:       # planned machines still down come back at the end of their window
                ivs = intersect(prof.windows[int(jid)].machines, self.unavailable) if self.unavailable else []
            if ivs:
                pieces.append(ivs)
                n += count(ivs)
            if not per_job and k + 1 < len(items) and items[k + 1][0] == t:
                continue
            if n < q:
                continue
            t = max(t, now)
            if not windows:
                return t, n, union([iv for p in pieces for iv in p], [])
            avail = union([iv for p in pieces for iv in p], [])
            usable = subtract(avail, prof.blocked(t, t + d))
            if count(usable) >= q:
                return t, count(usable), usable
        return INF, 0, []

    # ---------------------------------------------------------------- count mode (models.md §A)
    def _backfill_count(self, now: float, head: Entry, new: list[Entry], idle: bool) -> None:
        free = self.free.count
        wq = self.wq
        if not self.trace_reservations and min(wq.main.tq[1], wq.starved.tq[1]) > free:
            # no waiting job fits in the free machines (the index roots hold the smallest q): nothing
            # can start whatever the shadow, so it is not computed (exact shortcut)
            self._idle = None
            return
        sig = (self.profile.version, free, head)
        if idle and sig == self._idle[:3] and not self.profile.windows:
            # Nothing changed since a decision that started nothing: the other waiting jobs failed
            # then with this very shadow and extra and would fail again (they only end later now);
            # only the jobs submitted since can start (in backfill order).
            shadow, extra = self._idle[3:]
            candidates = sorted((e for e in new if e.where >= 0 and e is not head), key=self.wq.backfill_key)
        else:
            shadow, extra = self.shadow(now, head)
            candidates = None
        if self.trace_reservations:
            self.record(now, head, shadow)
        if free == 0:
            self._idle = None
            return
        st = ScanState(free, shadow - now + 1e-6 * (1.0 + abs(shadow)), extra)
        started = []
        for e in self.wq.scan(st) if candidates is None else candidates:
            if e.q > st.free:
                continue
            if e is head:
                continue
            after = now + e.p > shadow
            if after and e.q > st.extra:
                continue
            ivs = self.allocate(e, now)
            if ivs is None:
                continue
            self.launch(e, ivs, now)
            started.append(e)
            st.free -= e.q
            if after:
                st.extra -= e.q
        for e in started:
            self.wq.remove(e)
        self._idle = None if started else (*sig, shadow, extra)

    # ---------------------------------------------------------------- machines mode (batsched easy_bf)
    def _backfill_machines(self, now: float, head: Entry, new: list[Entry], ended: bool) -> None:
        shadow, _, avail = self._walk(now, head, per_job=False)
        blocked = self.profile.blocked(shadow, shadow + head.p) if self.profile.windows else []
        reserved = lowest(subtract(avail, blocked), head.q)
        if self.trace_reservations:
            self.record(now, head, shadow)
        free = self.free.count
        if free == 0:
            return
        st = ScanState(free, shadow - now + 1e-6 * (1.0 + abs(shadow)), free - self.free.count_in(reserved))
        started = []
        candidates = self.wq.scan(st) if ended else (e for e in new if e.where >= 0)
        for e in candidates:
            if e is head or e.q > st.free:
                continue
            after = now + e.p > shadow
            ivs = self.allocate(e, now, reserved if after else ())
            if ivs is None:
                continue
            self.launch(e, ivs, now)
            started.append(e)
            st.free -= e.q
            st.extra -= count(subtract(ivs, reserved))
        for e in started:
            self.wq.remove(e)
