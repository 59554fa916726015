"""Compute-machine states and Batsim's time-in-state accounting.

A machine is IDLE, COMPUTING (a job holds it; no compute sharing) or UNAVAILABLE (external
event; a job already running on it continues).  As in Batsim's ``Machine::update_machine_state``
the time spent in a state is added when the machine leaves it, so the period after a machine's
last change is not counted in ``_schedule.csv``.  Python lists with slice operations keep the
per-job cost at C speed even for allocations of thousands of machines.
"""

from __future__ import annotations

from typing import Any

IDLE, COMPUTING, UNAVAILABLE = "idle", "computing", "unavailable"


class Machines:
    def __init__(self, names: list[str]):
        n = len(names)
        self.names = names
        self.owner: list[Any] = [None] * n      # job computing on the machine, or None
        self.unavail: list[bool] = [False] * n
        self.last: list[float] = [0.0] * n      # date of the last state change
        self.nb_unavailable = 0
        self.nb_computing = 0          # machines in the COMPUTING state (not unavailable)
        self.time = {IDLE: 0.0, COMPUTING: 0.0, UNAVAILABLE: 0.0}
        # _machine_states.csv rows (time, nb_idle, nb_computing), one after each change
        self.trace: list[tuple[float, int, int]] = [(0.0, n, 0)]

    def _trace(self, t: float) -> None:
        n = len(self.owner)
        self.trace.append((t, n - self.nb_unavailable - self.nb_computing, self.nb_computing))

    def __len__(self) -> int:
        return len(self.owner)

    def state(self, m: int) -> str:
        if self.unavail[m]:
            return UNAVAILABLE
        return IDLE if self.owner[m] is None else COMPUTING

    def first_busy(self, a: int, b: int) -> int | None:
        """Id of the first machine of [a, b] that computes a job, or None."""
        seg = self.owner[a:b + 1]
        if seg.count(None) == len(seg):
            return None
        return a + next(i for i, o in enumerate(seg) if o is not None)

    def first_unavailable(self, a: int, b: int) -> int | None:
        if not self.nb_unavailable:
            return None
        seg = self.unavail[a:b + 1]
        return a + seg.index(True) if True in seg else None

    def start(self, job: Any, ivs: list[tuple[int, int]], t: float) -> None:
        """Machines of ``ivs`` (checked idle and available) start computing ``job``."""
        owner, last = self.owner, self.last
        spent = 0.0
        for a, b in ivs:
            n = b - a + 1
            spent += t * n - sum(last[a:b + 1])
            owner[a:b + 1] = [job] * n
            last[a:b + 1] = [t] * n
            self.nb_computing += n
        self.time[IDLE] += spent
        self._trace(t)

    def end(self, ivs: list[tuple[int, int]], t: float) -> None:
        """The job on ``ivs`` ends: its machines become idle (unavailable ones stay so)."""
        owner, last = self.owner, self.last
        spent = 0.0
        for a, b in ivs:
            n = b - a + 1
            owner[a:b + 1] = [None] * n
            if self.first_unavailable(a, b) is None:
                spent += t * n - sum(last[a:b + 1])
                last[a:b + 1] = [t] * n
                self.nb_computing -= n
            else:
                for m in range(a, b + 1):
                    if not self.unavail[m]:
                        spent += t - last[m]
                        last[m] = t
                        self.nb_computing -= 1
        self.time[COMPUTING] += spent
        self._trace(t)

    def set_unavailable(self, ivs: list[tuple[int, int]], t: float) -> None:
        for a, b in ivs:
            for m in range(a, b + 1):
                state = self.state(m)
                self.time[state] += t - self.last[m]
                self.last[m] = t
                self.unavail[m] = True
                self.nb_unavailable += 1
                self.nb_computing -= state == COMPUTING
        self._trace(t)

    def set_available(self, ivs: list[tuple[int, int]], t: float) -> None:
        for a, b in ivs:
            for m in range(a, b + 1):
                self.time[UNAVAILABLE] += t - self.last[m]
                self.last[m] = t
                self.unavail[m] = False
                self.nb_unavailable -= 1
                self.nb_computing += self.owner[m] is not None
        self._trace(t)

    def write_states_csv(self, path: str) -> None:
        """``PREFIX_machine_states.csv``; times printed with ``%g`` like Batsim."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n")
            fh.writelines(f"{t:g},0,0,0,{idle},{comp}\n" for t, idle, comp in self.trace)
