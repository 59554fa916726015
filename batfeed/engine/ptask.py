"""SimGrid 3.32's parallel tasks under Batsim (host model ``ptask_L07``, solver ``fairbottleneck``).

A job of a ``parallel``, ``parallel_homogeneous`` or ``parallel_homogeneous_total`` profile is one
``L07Action`` (``src/surf/ptask_L07.cpp``): a single lmm variable whose value is the rate at which its
work (1 at the start) decreases.  It is expanded on the CPU constraint of every host it runs on (weight:
the host's flops; capacity: cores x the speed of the host's first pstate, ``CpuImpl::seal``) and on the
constraint of every link that a route between two of its hosts with bytes to send crosses (weight: the sum
of those bytes; a FATPIPE link takes their maximum; ``System::expand``).  Its latency is the largest route
latency among those pairs; while it is paid the variable is disabled (penalty 0), and its bound is set
once it is paid: min(TCP-gamma / (2 x max(latency x bytes)), min over hosts of speed / flops)
(``L07Action::update_bound``).

:class:`System` solves the variables' values as ``FairBottleneck::do_solve`` (``kernel/lmm/
fair_bottleneck.cpp``) does, in its order: each round shares every constraint's remaining capacity equally
among its unfixed variables (one share for a FATPIPE link), raises each variable by its smallest share over
its weight (or up to its bound), and subtracts every enabled element's weight x last increment from the
constraint (``double_update`` at ``maxmin/precision``, 1e-5); a constraint left with nothing fixes its
variables.  A constraint's enabled elements are kept newest first (``push_front``), which sets the order
of those subtractions.

A task without communication whose hosts are all distinct shares nothing (no compute sharing): its
value is always min(speed / flops), so :func:`make` returns no action and the engine uses that constant
rate (the fast path of the engine's timers).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from batfeed.engine.routing import TCP_GAMMA, Network

MAXMIN_PRECISION = 1e-5     # maxmin/precision (sg_maxmin_precision)
SURF_PRECISION = 1e-9       # surf/precision
DBL_MAX = sys.float_info.max


class Constraint:
    """A resource of the lmm system: a host's CPU or a link."""

    __slots__ = ("bound", "fatpipe", "enabled", "remaining", "usage", "users")

    def __init__(self, bound: float, fatpipe: bool):
        self.bound = bound
        self.fatpipe = fatpipe
        self.enabled: list[list[Any]] = []     # elements [constraint, weight, action], newest first
        self.remaining = 0.0
        self.usage = 0.0
        self.users = 0                         # started actions expanded on it (enabled or not)


class Action:
    """One ``L07Action``: its elements (``cnsts_``, in expand order), latency, bound and value."""

    __slots__ = ("elems", "latency", "net_bound", "cpu_bound", "bound", "penalty", "value", "mu", "saturated")

    def __init__(self, elems: list[list[Any]], latency: float, net_bound: float, cpu_bound: float):
        for e in elems:               # each element [constraint, weight, action] names its action
            e[2] = self
        self.elems = elems
        self.latency = latency
        self.net_bound = net_bound
        self.cpu_bound = cpu_bound
        self.bound = -1.0
        self.penalty = 0.0
        self.value = 0.0
        self.mu = 0.0
        self.saturated = False

    def update_bound(self) -> None:
        """``L07Action::update_bound``: set once the latency is paid."""
        bound = min(self.net_bound, self.cpu_bound)
        if bound < DBL_MAX and self.latency <= 0.0:
            self.bound = bound


class System:
    """The lmm system of the L07 model, restricted to the actions that can share a resource."""

    def __init__(self, network: Network | None, names: Sequence[str], speeds: Sequence[float],
                 capacities: Sequence[float]):
        self.network = network
        self.names = names
        self.speeds = speeds
        self.capacities: Any = capacities          # per machine: cores x speed of the first pstate
        self.cpu: dict[int, Constraint] = {}
        self.links: dict[str, Constraint] = {}
        self.actions: list[Action] = []
        self.dirty = False
        self._routes: dict[tuple[str, str], tuple[Any, float]] = {}

    # -- building -------------------------------------------------------------------------------------
    def make(self, hosts: Sequence[int], flops: Sequence[float], com: Sequence[float] | None,
             shared: bool = False) -> Action | None:
        """The ``L07Action`` of a task on machines ``hosts`` (one per rank, repeats allowed), with
        ``flops[i]`` on rank i and ``com[i*n+j]`` bytes from rank i to rank j; None when it shares no
        resource (no bytes, distinct hosts on which no task of the system computes, and not ``shared``):
        then its rate is the constant :func:`constant_rate`."""
        n = len(hosts)
        pairs: list[tuple[Any, float, float]] = []     # (route's links, bytes, route's latency)
        latency = 0.0
        if com and self.network is not None:
            names = self.names
            for k, b in enumerate(com):
                if b > 0:
                    links, lat = self._route(names[hosts[k // n]], names[hosts[k % n]])
                    latency = max(latency, lat)
                    pairs.append((links, b, lat))
        if (not shared and not any(links for links, _, _ in pairs) and len(set(hosts)) == n and not latency
                and not any(self.cpu[h].enabled for h in hosts if h in self.cpu)):
            return None
        elems: list[list[Any]] = []
        for i in range(n):       # force_creation: one element per rank, even on a repeated host
            cnst = self.cpu.get(hosts[i])
            if cnst is None:
                cnst = self.cpu[hosts[i]] = Constraint(self.capacities[hosts[i]], False)
            elems.append([cnst, flops[i], None])
        lat_bound = 0.0                        # calculate_network_bound: max(latency x bytes)
        for links, b, lat in pairs:
            lat_bound = max(lat_bound, lat * b)
            self._expand(elems, links, b)
        net_bound = TCP_GAMMA / (2.0 * lat_bound) if lat_bound > 0 else DBL_MAX
        cpu_bound = DBL_MAX
        for i in range(n):
            if flops[i] > 0:
                cpu_bound = min(cpu_bound, self.speeds[hosts[i]] / flops[i])
        return Action(elems, latency, net_bound, cpu_bound)

    def _route(self, src: str, dst: str) -> tuple[Any, float]:
        got = self._routes.get((src, dst))
        if got is None:
            net: Any = self.network             # set whenever a route is asked for
            got = self._routes[(src, dst)] = net.route(src, dst)
        return got

    def _expand(self, elems: list[list[Any]], links: Any, b: float) -> None:
        """``System::expand`` of ``b`` bytes on each link of a route: one element per link constraint, the
        bytes added (a FATPIPE link keeps the largest)."""
        for link in links:
            cnst = self.links.get(link.name)
            if cnst is None:
                cnst = self.links[link.name] = Constraint(link.bandwidth, link.fatpipe)
            for e in elems:
                if e[0] is cnst:
                    e[1] = max(e[1], b) if cnst.fatpipe else e[1] + b
                    break
            else:
                elems.append([cnst, b, None])

    def message(self, src: str, dst: str) -> Action | None:
        """The 1-byte message from host ``src`` to ``dst`` as an ``L07Action`` (``NetworkL07Model::communicate``)
        when its route crosses a link that a started action uses, else None (it then shares nothing and its
        rate is a constant: ``Network.message_delay``)."""
        net = self.network
        if net is None or not self.actions:
            return None
        links, lat = self._route(src, dst)
        if not any((c := self.links.get(link.name)) is not None and c.users for link in links):
            return None
        elems: list[list[Any]] = []
        self._expand(elems, links, 1.0)
        return Action(elems, lat, TCP_GAMMA / (2.0 * lat) if lat > 0 else DBL_MAX, DBL_MAX)

    def start(self, act: Action) -> None:
        """The action enters the system (its latency first, disabled)."""
        self.actions.append(act)
        for e in act.elems:
            e[0].users += 1
        if act.latency > 0:
            return
        act.update_bound()
        self._enable(act)

    def _enable(self, act: Action) -> None:
        act.penalty = 1.0
        for e in act.elems:
            e[0].enabled.insert(0, e)
        self.dirty = True

    def latency_paid(self, act: Action) -> None:
        """``update_actions_state``: the latency is paid, the bound is set and the variable enabled."""
        act.latency = 0.0
        act.update_bound()
        self._enable(act)

    def remove(self, act: Action) -> None:
        """The action ended or was cancelled: its elements leave their constraints (its last value is kept, as
        SimGrid's signals at the action's end still see it)."""
        if act in self.actions:
            self.actions.remove(act)
            for e in act.elems:
                e[0].users -= 1
            if act.penalty > 0:
                for e in act.elems:
                    e[0].enabled.remove(e)
            act.penalty = 0.0         # its value stays: what its hosts delivered until now (energy reads it)
            self.dirty = True

    # -- solving --------------------------------------------------------------------------------------
    def solve(self) -> None:
        """``FairBottleneck::do_solve``: every action's value."""
        self.dirty = False
        var_list: list[Action] = []
        for act in self.actions:
            act.value = 0.0
            if act.penalty > 0 and any(e[1] != 0.0 for e in act.elems):
                act.saturated = True
                var_list.append(act)
            else:
                act.saturated = False
                if act.penalty > 0:
                    act.value = 1.0
        cnst_list = [c for c in (*self.cpu.values(), *self.links.values()) if c.enabled]
        for c in cnst_list:
            c.remaining = c.bound
            c.usage = 0.0
        while var_list:
            keep = []
            for c in cnst_list:
                nb = 0
                for e in c.enabled:
                    if e[1] > 0 and e[2].saturated:
                        nb += 1
                if nb > 0 and c.fatpipe:
                    nb = 1
                if nb == 0:
                    c.remaining = c.usage = 0.0
                else:
                    c.usage = c.remaining / nb
                    keep.append(c)
            cnst_list = keep
            still = []
            for act in var_list:
                min_inc = DBL_MAX
                for e in act.elems:
                    if e[1] > 0:
                        min_inc = min(min_inc, e[0].usage / e[1])
                if act.bound > 0:
                    min_inc = min(min_inc, act.bound - act.value)
                act.mu = min_inc
                act.value += min_inc
                if act.value == act.bound:
                    act.saturated = False
                else:
                    still.append(act)
            keep = []
            for c in cnst_list:
                if not c.fatpipe:
                    for e in c.enabled:
                        c.remaining -= e[1] * e[2].mu
                        if c.remaining < MAXMIN_PRECISION:
                            c.remaining = 0.0
                else:
                    for e in c.enabled:
                        c.usage = min(c.usage, e[1] * e[2].mu)
                    c.remaining -= c.usage
                    if c.remaining < MAXMIN_PRECISION:
                        c.remaining = 0.0
                if c.remaining <= 0.0:
                    for e in c.enabled:
                        if e[1] > 0 and e[2].saturated:
                            e[2].saturated = False
                else:
                    keep.append(c)
            cnst_list = keep
            var_list = [a for a in still if a.saturated]

    def usage(self, machine: int) -> float:
        """``Constraint::get_usage`` of the machine's CPU: the flops/s its tasks get (``Host::get_load``)."""
        c = self.cpu.get(machine)
        if c is None:
            return 0.0
        return sum(e[1] * e[2].value for e in c.enabled if e[1] > 0)


def constant_rate(hosts: Sequence[int], flops: Sequence[float], speeds: Sequence[float]) -> float:
    """The value of a task that shares nothing: min over its hosts of speed / flops (its bound), 0 when it
    computes nothing (it then ends at once)."""
    rate = DBL_MAX
    for h, f in zip(hosts, flops, strict=True):
        if f > 0:
            rate = min(rate, speeds[h] / f)
    return 0.0 if rate == DBL_MAX else rate
