"""Compute-machine states and Batsim's time-in-state accounting.

A machine is IDLE, COMPUTING (a job holds it; no compute sharing) or UNAVAILABLE (external
event; a job already running on it continues).  As in Batsim, a ``_machine_states.csv`` row is
written when a job starts or ends (``update_machines_on_job_run/end``), not on availability
events.  As in Batsim's ``Machine::update_machine_state`` the time spent in a state is added when
the machine leaves it, so the period after a machine's last change is not counted in
``_schedule.csv``.

Per-machine flags live in ``bytearray``s and change dates in an ``array('d')``, so starting or
ending a job on thousands of machines is a few C-level slice copies.  Time in each state is
accumulated as an area (machines in the state x elapsed time) between changes; at the end the
still-open period of every machine (from its last change to the last change of the platform) is
taken back out, which gives exactly the sum of the closed periods.
"""

from __future__ import annotations

from array import array

IDLE, COMPUTING, UNAVAILABLE = "idle", "computing", "unavailable"


class Machines:
    def __init__(self, names: list[str]):
        n = len(names)
        self.names = names
        self.n = n
        self.busy = bytearray(n)            # 1 while a job computes on the machine
        self.unavail = bytearray(n)         # 1 while the machine is unavailable
        self.last = array("d", bytes(8 * n))   # date of the machine's last state change
        self.nb_unavailable = 0
        self.nb_computing = 0               # machines in the COMPUTING state (not unavailable)
        self._t = 0.0                       # date of the last change of any machine
        self._area = {IDLE: 0.0, COMPUTING: 0.0, UNAVAILABLE: 0.0}
        # _machine_states.csv rows (time, nb_idle, nb_computing), one after each change
        self.trace: list[tuple[float, int, int]] = []   # Batsim writes no initial row

    def __len__(self) -> int:
        return self.n

    def _advance(self, t: float) -> None:
        dt = t - self._t
        if dt:
            area, comp, unav = self._area, self.nb_computing, self.nb_unavailable
            area[IDLE] += (self.n - comp - unav) * dt
            area[COMPUTING] += comp * dt
            area[UNAVAILABLE] += unav * dt
            self._t = t

    def _trace(self, t: float) -> None:
        self.trace.append((t, self.n - self.nb_unavailable - self.nb_computing, self.nb_computing))

    def state(self, m: int) -> str:
        if self.unavail[m]:
            return UNAVAILABLE
        return COMPUTING if self.busy[m] else IDLE

    def first_busy(self, a: int, b: int) -> int | None:
        """Id of the first machine of [a, b] that computes a job, or None."""
        i = self.busy.find(1, a, b + 1)
        return None if i < 0 else i

    def first_unavailable(self, a: int, b: int) -> int | None:
        if not self.nb_unavailable:
            return None
        i = self.unavail.find(1, a, b + 1)
        return None if i < 0 else i

    def start(self, ivs: list[tuple[int, int]], t: float) -> None:
        """Machines of ``ivs`` (checked idle and available) start computing a job."""
        self._advance(t)
        busy, last, stamp = self.busy, self.last, array("d", (t,))
        for a, b in ivs:
            n = b - a + 1
            busy[a:b + 1] = b"\x01" * n
            last[a:b + 1] = stamp * n
            self.nb_computing += n
        self._trace(t)

    def end(self, ivs: list[tuple[int, int]], t: float) -> None:
        """The job on ``ivs`` ends: its machines become idle (unavailable ones stay so)."""
        self._advance(t)
        busy, last, unavail, stamp = self.busy, self.last, self.unavail, array("d", (t,))
        for a, b in ivs:
            n = b - a + 1
            busy[a:b + 1] = bytes(n)
            if not self.nb_unavailable or unavail.find(1, a, b + 1) < 0:
                last[a:b + 1] = stamp * n
                self.nb_computing -= n
            else:
                for m in range(a, b + 1):
                    if not unavail[m]:
                        last[m] = t
                        self.nb_computing -= 1
        self._trace(t)

    def set_unavailable(self, ivs: list[tuple[int, int]], t: float) -> None:
        self._advance(t)
        for a, b in ivs:
            for m in range(a, b + 1):
                self.nb_computing -= self.busy[m]
                self.last[m] = t
                self.unavail[m] = 1
                self.nb_unavailable += 1

    def set_available(self, ivs: list[tuple[int, int]], t: float) -> None:
        self._advance(t)
        for a, b in ivs:
            for m in range(a, b + 1):
                self.last[m] = t
                self.unavail[m] = 0
                self.nb_unavailable -= 1
                self.nb_computing += self.busy[m]

    @property
    def time(self) -> dict[str, float]:
        """Seconds spent in each state, closed periods only (Batsim's accounting)."""
        import numpy as np

        t = self._t
        open_len = t - np.frombuffer(self.last, dtype=np.float64)
        unav = np.frombuffer(self.unavail, dtype=np.uint8).astype(bool)
        comp = np.frombuffer(self.busy, dtype=np.uint8).astype(bool) & ~unav
        idle = ~unav & ~comp
        out = {}
        for state, mask in ((IDLE, idle), (COMPUTING, comp), (UNAVAILABLE, unav)):
            area = self._area[state]
            value = area - float(open_len[mask].sum())
            # the two sums are rounded differently: an exact zero must stay zero
            out[state] = 0.0 if abs(value) <= 1e-12 * max(area, 1.0) else value
        return out

    def write_states_csv(self, path: str) -> None:
        """``PREFIX_machine_states.csv``; times printed with ``%g`` like Batsim."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n")
            fh.writelines(f"{t:g},0,0,0,{idle},{comp}\n" for t, idle, comp in self.trace)
