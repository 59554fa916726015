"""SET_RESOURCE_STATE under Batsim 4.2.1's ``-E``: pstate changes and machine switches (:class:`SwitchingSimulator`).

Following ``JsonProtocolReader::handle_set_resource_state`` and ``server_on_pstate_modification``
(``src/protocol.cpp``, ``src/server.cpp``): a computation -> computation pstate change is immediate; a computation
-> sleep or sleep -> computation change is a *switch*: the machine is SWITCHING_OFF / SWITCHING_ON, and an actor on
it (``switch_off_machine_process`` / ``switch_on_machine_process``, ``src/pstate.cpp``) sets the virtual pstate,
computes one flop there (a one-host parallel task of work 1 at that pstate's speed, the engine's timer kind
``T_SWITCH``), sets the target pstate, makes the machine SLEEPING / IDLE and tells the server (``M_SWITCHED``, a
message from the machine's host, ``server_on_switched``).  A request's machines form a group
(:class:`CurrentSwitches`): RESOURCE_STATE_CHANGED is sent once all of them are done.
"""

from __future__ import annotations

import re
from typing import Any

from batfeed.engine import intervals
from batfeed.engine.energy import EnergyModel
from batfeed.engine.kinds import E_STATE_CHANGED, M_SWITCHED, T_SWITCH
from batfeed.engine.machines import IDLE, SLEEPING, SWITCHING_OFF, SWITCHING_ON, EnergyMachines
from batfeed.engine.power import COMPUTATION, SLEEP, host_power
from batfeed.engine.simulator import Simulator
from batfeed.errors import ProtocolError

_STOI = re.compile(r"[ \t\n\v\f\r]*[+-]?\d+")


class _Switch:
    """One machine's switch actor: its machine, target pstate, virtual pstate, and whether it ran its end."""

    __slots__ = ("machine", "target", "virtual", "on", "ended", "intervals")

    def __init__(self, machine: int, target: int, virtual: int, on: bool):
        self.machine, self.target, self.virtual, self.on = machine, target, virtual, on
        self.ended = False
        self.intervals = [(machine, machine)]     # the message's sender, as for a job (simulator.run)


class CurrentSwitches:
    """Batsim's ``CurrentSwitches`` (``src/pstate.cpp``): the requested groups still switching, per target."""

    def __init__(self) -> None:
        self.groups: dict[int, list[tuple[list[tuple[int, int]], set[int]]]] = {}

    def add(self, ivs: list[tuple[int, int]], target: int) -> None:
        left = {m for a, b in ivs for m in range(a, b + 1)}
        self.groups.setdefault(target, []).append((ivs, left))

    def done(self, machine: int, target: int) -> list[tuple[int, int]] | None:
        """``mark_switch_as_done``: the group's machines if ``machine`` was the last of its group to switch."""
        groups = self.groups[target]
        for k, (ivs, left) in enumerate(groups):
            if machine in left:
                left.discard(machine)
                if left:
                    return None
                del groups[k]
                if not groups:
                    del self.groups[target]
                return ivs
        raise AssertionError(f"machine {machine} was not switching to pstate {target}")


class SwitchingSimulator(Simulator):
    """The :class:`~batfeed.engine.simulator.Simulator` with the machines' power states: SET_RESOURCE_STATE, the
    switch actors and ``server_on_switched``.  The layer above (:class:`~batfeed.engine.energy_sim.EnergySimulator`)
    gives it the energy model (:attr:`energy`) and the parallel tasks on each machine (:attr:`host_tasks`)."""

    energy: EnergyModel
    host_tasks: dict[int, list[int]]

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        plat = self.platform
        self.machines: EnergyMachines = EnergyMachines([h.name for h in plat.compute])
        self.power = [host_power(h, plat.path) for h in (*plat.compute, *plat.storage)]
        self.switch_usage = [0.0] * len(self.power)     # the load of a switch's flop on its machine
        self.switches = CurrentSwitches()
        self.nb_switching = 0
        self.running_switches: list[_Switch] = []

    def _msg_set_resource_state(self, data: dict[str, Any]) -> None:
        """``JsonProtocolReader::handle_set_resource_state``."""
        res, state = data.get("resources"), data.get("state")
        if len(data) != 2 or not isinstance(res, str) or not isinstance(state, str):
            raise ProtocolError(f"SET_RESOURCE_STATE: data must be exactly {{resources: string, state: string}} "
                                f"(got {data})")
        try:
            ivs = intervals.parse(res)
        except ValueError:
            ivs = []
        if not ivs:
            raise ProtocolError(f"SET_RESOURCE_STATE: resources {res!r} is not a non-empty interval set")
        match = _STOI.match(state)
        if match is None:
            raise ProtocolError(f"SET_RESOURCE_STATE: state {state!r} is not an integer string (Batsim aborts)")
        self._do_set_resource_state(ivs, int(match.group()))

    def _do_set_resource_state(self, ivs: list[tuple[int, int]], target: int) -> None:
        """``server_on_pstate_modification``."""
        machines = [m for a, b in ivs for m in range(a, b + 1)]
        st = self.machines.st
        plan: list[tuple[int, Any]] = []
        for m in machines:                 # Batsim's checks first, so that a refused request changes nothing
            if m >= len(st):
                what = "is a storage machine (switching it is not modelled)" if m < len(self.power) else \
                    f"does not exist (compute machines are 0-{len(st) - 1})"
                raise ProtocolError(f"SET_RESOURCE_STATE: machine {m} {what}")
            p = self.power[m]
            if not 0 <= target < len(p.speeds):
                raise ProtocolError(f"SET_RESOURCE_STATE: pstate {target} does not exist on machine {m} ('{p.name}', "
                                    f"pstates 0-{len(p.speeds) - 1}) (SimGrid aborts)")
            cur = self.energy.pstate[m]
            now, new = p.types[cur], p.types[target]
            if now == COMPUTATION and new == COMPUTATION:
                if self.host_tasks.get(m) and p.speeds[target] != p.speeds[cur]:
                    raise ProtocolError(f"SET_RESOURCE_STATE: machine {m} ('{p.name}') computes a parallel task "
                                        f"(job {self.host_tasks[m][0]}): changing its speed during the task is not "
                                        "modelled by the engine; use real Batsim")
                plan.append((m, None))
            elif now == COMPUTATION and new == SLEEP:
                if self.machines.busy[m]:
                    raise ProtocolError(f"SET_RESOURCE_STATE: machine {m} ('{p.name}') computes a job and cannot be "
                                        "switched off (Batsim aborts: \"jobs are running on machine\")")
                plan.append((m, _Switch(m, target, p.sleep[target][1], False)))
            elif now == SLEEP and new == COMPUTATION:
                plan.append((m, _Switch(m, target, p.sleep[cur][0], True)))
            elif now == SLEEP:
                raise ProtocolError(f"SET_RESOURCE_STATE: machine {m} ('{p.name}') sleeps in pstate {cur} and can "
                                    f"only switch to a computation pstate, not {target} (Batsim aborts)")
            elif now == COMPUTATION:
                raise ProtocolError(f"SET_RESOURCE_STATE: pstate {target} of machine {m} ('{p.name}') is a virtual "
                                    "transition pstate, which cannot be requested (Batsim logs an error and never "
                                    "reports the change)")
            else:
                raise ProtocolError(f"SET_RESOURCE_STATE: machine {m} ('{p.name}') is switching (pstate {cur}); "
                                    "wait for its RESOURCE_STATE_CHANGED (Batsim logs an error and never reports "
                                    "the change)")
            if self.machines.unavail[m]:
                raise ProtocolError(f"SET_RESOURCE_STATE: machine {m} ('{p.name}') is unavailable: switching it is "
                                    "not modelled")
            sw = plan[-1][1]
            if sw is not None and not p.speeds[sw.virtual] > 0:
                raise ProtocolError(f"SET_RESOURCE_STATE: the virtual pstate {sw.virtual} of machine {m} "
                                    f"('{p.name}') has no positive speed: its switch would never end")
        c, energy = self.clock, self.energy
        self.switches.add(ivs, target)
        energy.add_entry(c, "p")
        first = self.power[machines[0]].types[target]
        energy.pstate_row(c, ivs, -1 if first == COMPUTATION else -2 if first == SLEEP else -42)
        energy.nb_grouped_switches += 1
        energy.nb_machine_switches += len(machines)
        for m, sw in plan:
            if sw is None:
                energy.set_pstate(m, target, c)
                self._speed_changed(m, target)
                done = self.switches.done(m, target)
                if done is not None:
                    self._switch_complete(done, target)
            else:
                self.machines.set_state(m, SWITCHING_ON if sw.on else SWITCHING_OFF, c)
                self.nb_switching += 1
                # the actor runs after the request-reply actor's next step, like a job's executor
                self.deferred.append((1.0, T_SWITCH, sw, self.power[m].speeds[sw.virtual]))
        self.machines.write_row(c)

    def _switch_complete(self, ivs: list[tuple[int, int]], target: int) -> None:
        """The rest of ``mark_switch_as_done`` once a group is done, and its RESOURCE_STATE_CHANGED."""
        c = self.clock
        self.energy.pstate_row(c, ivs, target)
        self.energy.add_entry(c, "p")
        self.out.append((E_STATE_CHANGED, c, ivs, str(target)))

    def _switches_due(self, t: float) -> None:
        """The switches whose flop ended (their timer left the timers) set their target pstate: in the first
        round, before the executors ending with them query energies."""
        if not self.running_switches:
            return
        live = {id(e[3]) for e in getattr(self.timers, "live", ())}
        for sw in self.running_switches:
            if not sw.ended and id(sw) not in live:
                sw.ended = True
                m = sw.machine
                self.energy.refresh(m, t)           # CpuAction::on_state_change, the flop still loading the CPU
                self.switch_usage[m] = 0.0
                self.energy.set_pstate(m, sw.target, t)
                if sw.on:
                    self._speed_changed(m, sw.target)

    def _switch_done(self, sw: _Switch, t: float) -> None:
        """The round after: the machine's new state, and its message to the server."""
        self._switches_due(t)
        self.running_switches.remove(sw)
        self.machines.set_state(sw.machine, IDLE if sw.on else SLEEPING, t)

    def _speed_changed(self, m: int, pstate: int) -> None:
        """The machine computes at its new computation pstate's speed (``CpuL07::on_speed_change``: the CPU
        constraint's bound is cores x that speed) from now on, for the tasks started from now on."""
        p = self.power[m]
        speed = p.speeds[pstate]
        if speed == self.speed[m]:
            return
        self.speed[m] = speed
        if self.ptasks is not None:
            self.ptasks.capacities[m] = p.cores * speed
            cnst = self.ptasks.cpu.get(m)
            if cnst is not None:
                cnst.bound = p.cores * speed
                self.ptasks.dirty = True

    def _other(self, kind: int, a: Any) -> bool:
        if kind != M_SWITCHED:
            return super()._other(kind, a)
        # server_on_switched; the message's arrival ended a communication from the machine's host
        self.energy.refresh(a.machine, self.clock)
        done = self.switches.done(a.machine, a.target)
        if done is not None:
            self.energy.pstate_row(self.clock, done, a.target)
            self.energy.add_entry(self.clock, "p")
            self.machines.write_row(self.clock)
            self.out.append((E_STATE_CHANGED, self.clock, done, str(a.target)))
        self.nb_switching -= 1
        sent = self._check()
        if self.woken:
            self._post_woken()
        return sent

    def _finished(self) -> bool:
        return self.nb_switching == 0 and super()._finished()
