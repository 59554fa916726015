"""The availability profile of conservative backfilling: a :class:`Profile` over a :class:`Steps`.

:class:`StepProfile` keeps :class:`Profile`'s running jobs, windows and down machines, but its step
function (reservations, windows and, ``ends_in_steps``, the running jobs' expected ends) lives in a
:class:`~batfeed.schedulers.steps.Steps` tree; :meth:`StepProfile.levels` and
:meth:`StepProfile.earliest` answer exactly as :class:`Profile`'s walks over the flat lists do
(same levels, same tie rules, ``tests/test_conservative_fast.py``), in O(log n) searches for
``earliest``.  Only conservative backfilling uses it: :class:`Profile` itself is unchanged, and so
are the schedules of EASY, Maui, CREASY and LOS.
"""

from __future__ import annotations

from collections.abc import Iterator

from batfeed.schedulers.profile import Profile
from batfeed.schedulers.resources import Intervals, count, intersect
from batfeed.schedulers.steps import Steps

INF = float("inf")


class StepProfile(Profile):
    """A :class:`Profile` (``ends_in_steps``) whose step function is a :class:`Steps`.

    ``times``/``deltas`` stay empty: :meth:`levels` and :meth:`earliest` read the tree instead, with
    the same results as :class:`Profile`'s walk over the flat lists."""

    def __init__(self) -> None:
        super().__init__(ends_in_steps=True)
        self.steps = Steps()

    def _step(self, t: float, delta: int) -> None:
        self.version += 1
        self.steps.add(t, delta)

    def reserve(self, t: float, d: float, q: int) -> None:
        self.version += 1
        if t + d < INF:
            self.steps.add2(t, -q, t + d, q)
        else:
            self.steps.add(t, -q)

    def unreserve(self, t: float, d: float, q: int) -> None:
        self.reserve(t, d, -q)

    def ret(self, jid: str) -> int:
        """Machines running job ``jid`` gives back at its expected end."""
        b, i = self._locate(jid)
        return self._rets[b][i]

    def take_over(self, jid: str, t: float, end: float, ivs: Intervals, ret: int) -> None:
        """A job reserved at ``t`` (= now) starts now, its q machines out of the free count: its
        reservation's end step is the running job's (``end`` = t + p̃); only the start step goes.
        The same levels as :meth:`unreserve` then :meth:`add`, with one change of the steps."""
        self.steps.add(t, ret)
        self.ends_in_steps = False              # Profile.add: the running job, without its step
        try:
            self.add(jid, end, ivs, ret)
        finally:
            self.ends_in_steps = True

    def base(self, now: float, free: int) -> int:
        """The level before the first change point, as :meth:`Profile.levels` starts it: free
        machines, plus the down machines of an ongoing window (they come back at its end)."""
        if self.unavailable:
            free += sum(count(intersect(w.machines, self.unavailable)) for w in self.windows
                        if w.start <= now < w.end)
        return free

    def levels(self, now: float, free: int, skip: tuple[float, float, int] | None = None
               ) -> Iterator[tuple[float, int]]:
        level, cur = self.base(now, free), now
        steps: Iterator[tuple[float, int]] = iter(self.steps)
        if skip is not None:
            st, sd, sq = skip
            adjust = {st: sq, st + sd: -sq} if st + sd < INF else {st: sq}
            steps = ((t, dl + adjust.get(t, 0)) for t, dl in steps)
        for t, dl in steps:
            if t > cur:
                yield cur, level
                cur = t
            level += dl
        yield cur, level

    def earliest(self, q: int, d: float, now: float, free: int, before: float = INF,
                 skip: tuple[float, float, int] | None = None, start: float | None = None) -> float:
        """:meth:`Profile.earliest` by tree searches: the first run of levels >= q (from ``now`` or
        a change point) that lasts d seconds, or that reaches past ``before`` (inf if it starts
        after ``before``); the run's last level is not checked then, as in the walk.

        ``start``: the caller knows that no run ending before ``start`` qualifies; the search
        begins with the run holding ``start`` (or the next one)."""
        if skip is not None:
            return super().earliest(q, d, now, free, before, skip)
        st = self.steps
        base = self.base(now, free)
        if start is not None and start > now:
            c = st.run_start(start, q, base, now) if base + st.prefix(start) >= q else st.next_ge(start, q, base)
        else:
            c = now if base + st.prefix(now) >= q else st.next_ge(now, q, base)
        while c is not None:
            if c > before:
                return INF
            e = st.next_lt(c, q, base)
            if e is None or e >= c + d or e > before:
                return c
            c = st.next_ge(e, q, base)
        return INF
