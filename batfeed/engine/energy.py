"""Batsim 4.2.1's energy accounting (``-E``) on SimGrid 3.32's host energy plugin.

**Per host** (SimGrid, ``src/plugins/host_energy.cpp``, class ``HostEnergy``): the energy is a double
``total`` brought up to date lazily by :meth:`EnergyModel.update` (``HostEnergy::update``): if the last update
is before now, ``total += watts * (now - last)`` where ``watts`` (``get_current_watts_value``) is computed
*now*, from the pstate saved at the previous update (``pstate_``) and the CPU load now; then the current pstate
is saved.  The load is ``min(1, Host::get_load() / speed(pstate_) / cores)`` (1 if that speed is <= 0), where
``get_load`` is the CPU constraint's usage, the sum of weight x value of its enabled lmm elements (flop/s);
the watts are ``Epsilon + load x (AllCores - Epsilon)`` when the load is > 0, else ``Idle``.  SimGrid updates
a host when (1) its pstate changes (``Host::on_speed_change``), (2) an activity that uses its CPU changes
state (``CpuAction::on_state_change``: the end or cancellation of an execution, a sleep of an actor on it, a
communication from or to it), (3) a one-host execution starts (``Exec::on_start``) and (4) its energy is asked
(``sg_host_get_consumed_energy``).  As the splitting of the time into intervals changes the float sums, the
engine updates the hosts at those same moments (:mod:`batfeed.engine.energy_sim`).

**Batsim** (``src/export.cpp``, ``src/machines.cpp``, ``src/pstate.cpp``): totals over the machines
(compute then storage) are ``long double`` sums (:mod:`batfeed.engine.longdouble`): ``total_consumed_energy``
and the minimum wattage ``total_wattmin`` (each machine's Epsilon at its pstate).  ``PREFIX_consumed_energy.csv``
(``EnergyConsumptionTracer::add_entry``) gets a row on each job start (``s``) and end (``e``), SET_RESOURCE_STATE
and completed switch (``p``); ``PREFIX_pstate_changes.csv`` (``PStateChangeTracer``) the machines' initial
pstates, each SET_RESOURCE_STATE (-1: towards a computation pstate, -2: a sleep pstate) and each completed
switch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from batfeed.engine import longdouble as ld
from batfeed.engine.intervals import format_hyphen
from batfeed.engine.power import HostPower

ENERGY_HEADER = "time,energy,event_type,wattmin,epower\n"
PSTATE_HEADER = "time,machine_id,new_pstate\n"
_MINUS_ONE = ld.from_float(-1.0)


class EnergyModel:
    """The energy of every machine (SimGrid's ``HostEnergy``) and Batsim's energy tracers.

    ``usage(machine)`` must return SimGrid's ``Host::get_load()`` of the machine now, in flop/s.
    """

    def __init__(self, powers: Sequence[HostPower], usage: Callable[[int], float]):
        self.powers = list(powers)
        self.usage = usage
        self.pstate = [p.pstate for p in powers]        # Host::get_pstate()
        self.saved = list(self.pstate)                  # HostEnergy::pstate_: the pstate of the current interval
        self.total = [0.0] * len(powers)                # HostEnergy::total_energy_
        self.last = [0.0] * len(powers)                 # HostEnergy::last_updated_
        self.updates = 0                                # updates that added energy (each a simcall in Batsim)
        self.energy_rows: list[str] = []
        self.pstate_rows: list[str] = []
        self._entry_date = ld.ZERO                      # EnergyConsumptionTracer::_last_entry_date
        self._entry_energy = ld.ZERO                    # EnergyConsumptionTracer::_last_entry_energy
        self.first_submission = _MINUS_ONE              # BatsimContext::energy_first_job_submission
        self.last_completion = _MINUS_ONE               # BatsimContext::energy_last_job_completion
        self.nb_machine_switches = self.nb_grouped_switches = 0
        groups: dict[int, list[int]] = {}
        for i, ps in enumerate(self.pstate):            # initialize_batsim_outputs: the initial pstates
            groups.setdefault(ps, []).append(i)
        for ps in sorted(groups):
            self.pstate_row(0.0, _intervals(groups[ps]), ps)

    # -- SimGrid's HostEnergy ---------------------------------------------------------------------------
    def watts(self, h: int) -> float:
        """``HostEnergy::get_current_watts_value()``: the power of host ``h`` now, at its saved pstate."""
        p = self.powers[h]
        ps = self.saved[h]
        speed = p.speeds[ps]
        if speed <= 0:
            load = 1.0
        else:
            load = self.usage(h) / speed
            load /= p.cores
            if load > 1:
                load = 1.0
        r = p.ranges[ps]
        return r.epsilon + load * r.slope if load > 0 else r.idle

    def update(self, h: int, t: float) -> None:
        """``HostEnergy::update`` of host ``h`` at time ``t``."""
        last = self.last[h]
        if last < t:
            self.total[h] = self.total[h] + self.watts(h) * (t - last)
            self.last[h] = t
            self.updates += 1
        self.saved[h] = self.pstate[h]

    def refresh(self, h: int, t: float) -> None:
        """An update only if the last one is older (``get_consumed_energy``, ``on_action_state_change``)."""
        if self.last[h] < t:
            self.update(h, t)

    def set_pstate(self, h: int, pstate: int, t: float) -> None:
        """``Host::set_pstate``: the new pstate, then ``on_speed_change`` updates the energy."""
        self.pstate[h] = pstate
        self.update(h, t)

    # -- Batsim's totals --------------------------------------------------------------------------------
    def total_energy(self, t: float) -> ld.LD:
        """``Machines::total_consumed_energy``: every machine brought up to ``t``, summed in long double."""
        s = ld.ZERO
        total, last = self.total, self.last
        for h in range(len(total)):
            if last[h] < t:
                self.update(h, t)
            if total[h]:
                s = ld.add(s, ld.from_float(total[h]))
        return s

    def energy_on(self, ivs: Sequence[tuple[int, int]], t: float) -> ld.LD:
        """``consumed_energy_on_machines``: the machines of ``ivs`` (ascending) up to ``t``, in long double."""
        s = ld.ZERO
        for a, b in ivs:
            for h in range(a, b + 1):
                self.refresh(h, t)
                if self.total[h]:
                    s = ld.add(s, ld.from_float(self.total[h]))
        return s

    def wattmin(self) -> ld.LD:
        """``Machines::total_wattmin``: the Epsilon wattage of every machine at its current pstate."""
        s = ld.ZERO
        for p, ps in zip(self.powers, self.pstate, strict=True):
            w = p.ranges[ps].epsilon
            if w:
                s = ld.add(s, ld.from_float(w))
        return s

    # -- Batsim's tracers -------------------------------------------------------------------------------
    def add_entry(self, t: float, kind: str) -> ld.LD:
        """``EnergyConsumptionTracer::add_entry``: a ``_consumed_energy.csv`` row; returns the total energy."""
        energy = self.total_energy(t)
        wattmin = self.wattmin()
        date = ld.from_float(t)
        time_diff = ld.sub(date, self._entry_date)
        epower = _MINUS_ONE
        if time_diff[0] > 0:
            epower = ld.div(ld.sub(energy, self._entry_energy), time_diff)
        tail = "NA" if epower == _MINUS_ONE else f"{ld.to_float(epower):f}"
        self.energy_rows.append(f"{t:f},{ld.fmt(energy)},{kind},{ld.fmt(wattmin)},{tail}\n")
        self._entry_date = date
        self._entry_energy = energy
        return energy

    def pstate_row(self, t: float, ivs: Sequence[tuple[int, int]], pstate: int) -> None:
        """``PStateChangeTracer::add_pstate_change``."""
        self.pstate_rows.append(f"{t:g},{format_hyphen(list(ivs))},{pstate}\n")

    def job_submitted(self, t: float) -> None:
        """A submitter takes its first job (``static_job_submitter_process``): the first one sets
        ``energy_first_job_submission``."""
        if self.first_submission[0] < 0:
            self.first_submission = self.total_energy(t)

    def job_ended(self, t: float) -> None:
        """``EnergyConsumptionTracer::add_job_end``."""
        self.last_completion = self.add_entry(t, "e")

    def consumed_joules(self) -> float:
        """``_schedule.csv``'s consumed_joules: energy at the last job end - at the first submission."""
        return ld.to_float(ld.sub(self.last_completion, self.first_submission))

    def write(self, prefix: str) -> None:
        """``PREFIX_consumed_energy.csv`` and ``PREFIX_pstate_changes.csv``."""
        with open(prefix + "_consumed_energy.csv", "w", encoding="utf-8") as fh:
            fh.write(ENERGY_HEADER)
            fh.writelines(self.energy_rows)
        with open(prefix + "_pstate_changes.csv", "w", encoding="utf-8") as fh:
            fh.write(PSTATE_HEADER)
            fh.writelines(self.pstate_rows)


def _intervals(ids: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted ids as intervals."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out
