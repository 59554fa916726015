"""Embedded Batsim-4.2-compatible engine.

>>> from batfeed.engine import simulate
>>> result = simulate("platforms/small_4.xml", ["w.json"], scheduler, export="out/run")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from batfeed.engine.config import EngineConfig, SimulationResult
from batfeed.engine.events import load_event_lists
from batfeed.engine.platform import load_platform
from batfeed.engine.simulator import Simulator
from batfeed.engine.transport import InProcessTransport, ZmqTransport
from batfeed.engine.workload_file import load_workload

__all__ = ["EngineConfig", "SimulationResult", "Simulator", "simulate", "load_simulation"]


def load_simulation(platform: str | Path, workloads: Sequence[str | Path], events: Sequence[str | Path] = (),
                    config: EngineConfig | None = None, master_host: str = "master_host",
                    mmax: int | None = None) -> Simulator:
    """Read Batsim inputs (platform XML, workloads ``w0, w1, …``, events files) into a Simulator."""
    config = config or EngineConfig()
    plat = load_platform(platform, master_host=master_host, mmax=mmax, energy=config.energy)
    wls = [load_workload(path, f"w{i}") for i, path in enumerate(workloads)]
    evs = load_event_lists(list(events), len(plat.compute), config.forward_unknown_events)
    if config.energy:                   # -E: the energy model, in a subclass so that other runs skip it
        from batfeed.engine.energy_sim import EnergySimulator

        return EnergySimulator(plat, wls, evs, config, has_events_files=bool(events))
    return Simulator(plat, wls, evs, config, has_events_files=bool(events))


def simulate(platform: str | Path, workloads: Sequence[str | Path], scheduler: Any = None, *,
             events: Sequence[str | Path] = (), export: str | Path | None = None,
             config: EngineConfig | None = None, socket: str | None = None, timeout_s: float | None = None,
             on_progress: Callable[[int, int], None] | None = None, master_host: str = "master_host",
             mmax: int | None = None) -> SimulationResult:
    """Simulate with a pybatsim scheduler object in-process, or with the scheduler at ``socket``."""
    sim = load_simulation(platform, workloads, events, config, master_host, mmax)
    sim.on_progress = on_progress
    if socket is not None:
        transport: Any = ZmqTransport(socket, timeout_s)
    elif scheduler is not None:
        transport = InProcessTransport(scheduler)
    else:
        raise ValueError("simulate() needs a scheduler object or a socket endpoint")
    return sim.run(transport, export)
