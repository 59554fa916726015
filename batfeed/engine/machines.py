"""Compute-machine states and Batsim's time-in-state accounting.

A machine is IDLE, COMPUTING (a job holds it; no compute sharing) or UNAVAILABLE (external
event; a job already running on it continues).  As in Batsim, a ``_machine_states.csv`` row is
written when a job starts or ends (``update_machines_on_job_run/end``), not on availability
events.  As in Batsim's ``Machine::update_machine_state`` the time spent in a state is added when
the machine leaves it, so the period after a machine's last change is not counted in
``_schedule.csv``.

Per-machine flags live in ``bytearray``s, so starting or ending a job on thousands of machines is
a few C-level slice copies.  Time in each state is accumulated as an area (machines in the state x
elapsed time) between changes; at the end the still-open period of every machine (from its last
change to the last change of the platform) is taken back out, which gives exactly the sum of the
closed periods, from each machine's last change (one float per machine, :meth:`Machines.time_in_states`).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from typing import Any

from batfeed.engine import longdouble as ld

IDLE, COMPUTING, UNAVAILABLE = "idle", "computing", "unavailable"
_DOUBLE = struct.Struct("d")             # a machine's last change, as stored in Machines.last
_STATES_ROW = "%g,0,0,0,%d,%d\n"       # a _machine_states.csv row: time (%g, as Batsim), nb_idle, nb_computing


class Machines:
    def __init__(self, names: list[str]):
        n = len(names)
        self.names = names
        self.n = n
        self.busy = bytearray(n)            # 1 while a job computes on the machine
        self.unavail = bytearray(n)         # 1 while the machine is unavailable
        self.nb_unavailable = 0
        self.nb_computing = 0               # machines in the COMPUTING state (not unavailable)
        self._t = 0.0                       # date of the last change of any machine
        self.area_idle = self.area_computing = self.area_unavailable = 0.0
        # each machine's last change (a job's end or an availability event; a job's start never is one,
        # its end comes later), -1 while it has none: n doubles, whatever the trace's length, set by one
        # byte copy per interval when a job ends (as a list of floats: a reference count per machine)
        self.last: Any = array("d", [-1.0]) * n
        self._last_bytes: Any = memoryview(self.last).cast("B")     # the same doubles, for slice copies
        # _machine_states.csv rows (time, nb_idle, nb_computing), one per job start or end; Batsim
        # writes no initial row
        self.row_t = array("d")
        self.row_idle = array("q")
        self.row_comp = array("q")

    def __len__(self) -> int:
        return self.n

    def _advance(self, t: float) -> None:
        dt = t - self._t
        if dt:
            comp, unav = self.nb_computing, self.nb_unavailable
            self.area_idle += (self.n - comp - unav) * dt
            self.area_computing += comp * dt
            self.area_unavailable += unav * dt
            self._t = t

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

    def start(self, ivs: Sequence[tuple[int, int]], t: float) -> None:
        """Machines of ``ivs`` (checked idle and available) start computing a job."""
        if t != self._t:
            self._advance(t)
        busy = self.busy
        comp = self.nb_computing
        for a, b in ivs:
            if a == b:
                busy[a] = 1
                comp += 1
            else:
                busy[a:b + 1] = b"\x01" * (b - a + 1)
                comp += b - a + 1
        self.nb_computing = comp
        self.row_t.append(t)
        self.row_idle.append(self.n - self.nb_unavailable - comp)
        self.row_comp.append(comp)

    def end(self, ivs: Sequence[tuple[int, int]], t: float) -> None:
        """The job on ``ivs`` ends: its machines become idle (unavailable ones stay so)."""
        if t != self._t:
            self._advance(t)
        busy = self.busy
        comp = self.nb_computing
        if not self.nb_unavailable:
            last = self.last
            for a, b in ivs:
                if a == b:
                    busy[a] = 0
                    last[a] = t
                    comp -= 1
                else:
                    busy[a:b + 1] = bytes(b - a + 1)
                    # t's 8 bytes repeated (bytes repeat by doubling copies) into the machines' slots
                    self._last_bytes[8 * a:8 * b + 8] = _DOUBLE.pack(t) * (b - a + 1)
                    comp -= b - a + 1
        else:   # machines down stay UNAVAILABLE: for them the job's end is no state change
            unavail, last = self.unavail, self.last
            for a, b in ivs:
                busy[a:b + 1] = bytes(b - a + 1)
                for m in range(a, b + 1):
                    if not unavail[m]:
                        comp -= 1
                        last[m] = t
        self.nb_computing = comp
        self.row_t.append(t)
        self.row_idle.append(self.n - self.nb_unavailable - comp)
        self.row_comp.append(comp)

    def set_unavailable(self, ivs: list[tuple[int, int]], t: float) -> None:
        self._advance(t)
        for a, b in ivs:
            for m in range(a, b + 1):
                self.nb_computing -= self.busy[m]
                self.unavail[m] = 1
                self.nb_unavailable += 1
                self.last[m] = t

    def set_available(self, ivs: list[tuple[int, int]], t: float) -> None:
        self._advance(t)
        for a, b in ivs:
            for m in range(a, b + 1):
                self.unavail[m] = 0
                self.nb_unavailable -= 1
                self.nb_computing += self.busy[m]
                self.last[m] = t

    def time_in_states(self) -> dict[str, float]:
        """Seconds spent in each state, closed periods only (Batsim's accounting).

        The open period of a machine runs from its last change to the platform's last change; it is
        taken out of the area of the machine's final state, latest changes first (machines that never
        changed last, in index order: open since time 0), the order that fixes the float sums.
        """
        t_end, last = self._t, self.last
        open_len = {IDLE: 0.0, COMPUTING: 0.0, UNAVAILABLE: 0.0}
        unavail, busy = self.unavail, self.busy
        for m in sorted(range(self.n), key=last.__getitem__, reverse=True):
            t = last[m]
            state = UNAVAILABLE if unavail[m] else COMPUTING if busy[m] else IDLE
            open_len[state] += t_end - t if t >= 0 else t_end
        out = {}
        for state, area in ((IDLE, self.area_idle), (COMPUTING, self.area_computing),
                            (UNAVAILABLE, self.area_unavailable)):
            value = area - open_len[state]
            # the two sums are rounded differently: an exact zero must stay zero
            out[state] = 0.0 if abs(value) <= 1e-12 * max(area, 1.0) else value
        return out

    @property
    def trace(self) -> list[tuple[float, int, int]]:
        """_machine_states.csv rows (time, nb_idle, nb_computing)."""
        return list(zip(self.row_t, self.row_idle, self.row_comp, strict=True))

    def write_states_csv(self, path: str) -> None:
        """``PREFIX_machine_states.csv``; times printed with ``%g`` like Batsim."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n")
            fh.writelines(_STATES_ROW % row for row in zip(self.row_t, self.row_idle, self.row_comp, strict=True))


# ---------------------------------------------------------------------------------------------- energy (-E)
SLEEPING, SWITCHING_ON, SWITCHING_OFF = "sleeping", "switching_on", "switching_off"
ALL_STATES = (SLEEPING, IDLE, COMPUTING, SWITCHING_ON, SWITCHING_OFF, UNAVAILABLE)


class EnergyMachines(Machines):
    """The machines of a run with Batsim's ``-E``: also SLEEPING, SWITCHING_ON and SWITCHING_OFF.

    Follows Batsim 4.2.1 per machine: ``Machine::update_machine_state`` adds ``now - last change`` to the
    time of the state left, in ``long double`` (:mod:`batfeed.engine.longdouble`); a ``_machine_states.csv``
    row (``MachineStateTracer::write_machine_states``) is written on a job's start and end
    (``update_machines_on_job_run/end``), on a SET_RESOURCE_STATE (``server_on_pstate_modification``) and
    when a switch of a group of machines is complete (``server_on_switched``), not on availability events.
    The base class's ``busy``/``unavail`` flags are kept for the engine's checks.
    """

    def __init__(self, names: list[str]):
        super().__init__(names)
        n = len(names)
        self.st: list[str] = [IDLE] * n
        self.count = dict.fromkeys(ALL_STATES, 0)
        self.count[IDLE] = n
        self.last = [(0, 0)] * n                 # long double date of the last change
        self.spent: dict[str, list[tuple[int, int]]] = {s: [(0, 0)] * n for s in ALL_STATES}
        self.rows: list[tuple[float, int, int, int, int, int]] = []

    def set_state(self, m: int, new: str, t: float) -> None:
        """``Machine::update_machine_state``."""
        old = self.st[m]
        now = ld.from_float(t)
        spent = self.spent[old]
        spent[m] = ld.add(spent[m], ld.sub(now, self.last[m]))
        self.count[old] -= 1
        self.count[new] += 1
        self.st[m] = new
        self.last[m] = now

    def write_row(self, t: float) -> None:
        c = self.count
        self.rows.append((t, c[SLEEPING], c[SWITCHING_ON], c[SWITCHING_OFF], c[IDLE], c[COMPUTING]))

    def start(self, ivs: Sequence[tuple[int, int]], t: float) -> None:
        busy = self.busy
        for a, b in ivs:
            busy[a:b + 1] = b"\x01" * (b - a + 1)
            for m in range(a, b + 1):
                self.set_state(m, COMPUTING, t)
        self.write_row(t)

    def end(self, ivs: Sequence[tuple[int, int]], t: float) -> None:
        busy, st = self.busy, self.st
        for a, b in ivs:
            busy[a:b + 1] = bytes(b - a + 1)
            for m in range(a, b + 1):
                if st[m] != UNAVAILABLE:
                    self.set_state(m, IDLE, t)
        self.write_row(t)

    def set_unavailable(self, ivs: list[tuple[int, int]], t: float) -> None:
        for a, b in ivs:
            for m in range(a, b + 1):
                self.unavail[m] = 1
                self.nb_unavailable += 1
                self.set_state(m, UNAVAILABLE, t)

    def set_available(self, ivs: list[tuple[int, int]], t: float) -> None:
        for a, b in ivs:      # server_on_event_machine_available: COMPUTING if it runs a job, else IDLE
            for m in range(a, b + 1):
                self.unavail[m] = 0
                self.nb_unavailable -= 1
                self.set_state(m, COMPUTING if self.busy[m] else IDLE, t)

    def time_in_states(self) -> dict[str, float]:
        """``JobsTracer::finalize``: each state's closed periods, summed over the machines in long double."""
        out = {}
        for state in ALL_STATES:
            total = ld.ZERO
            for v in self.spent[state]:
                total = ld.add(total, v)
            out[state] = ld.to_float(total)
        return out

    @property
    def trace(self) -> list[tuple[float, int, int]]:
        return [(t, idle, comp) for t, _, _, _, idle, comp in self.rows]

    def write_states_csv(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n")
            fh.writelines(f"{t:g},{s},{on},{off},{idle},{comp}\n" for t, s, on, off, idle, comp in self.rows)
