"""What a run of the engine is given (:class:`EngineConfig`) and what it returns (:class:`SimulationResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batfeed import __version__
from batfeed.engine.outputs import JobsTracer
from batfeed.errors import BatfeedError

BATSIM_VERSION = f"4.2.1+batfeed-{__version__}"


@dataclass
class EngineConfig:
    """Batsim command-line switches the engine emulates (names as in ``batsim --help``)."""

    enable_dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    enable_profile_reuse: bool = False
    forward_profiles_on_submission: bool = False
    forward_unknown_events: bool = False
    sched_config: str = ""
    disable_machine_state_tracing: bool = False     # no PREFIX_machine_states.csv (export.cpp)
    energy: bool = False                            # -E: the energy model (batfeed/engine/energy_sim.py)

    def protocol_config(self) -> dict[str, Any]:
        """The ``config`` object of SIMULATION_BEGINS (pybatsim's ``batconf``), keys in Batsim's order."""
        return {
            "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379, "redis-prefix": "default",
            "profiles-forwarded-on-submission": self.forward_profiles_on_submission,
            "dynamic-jobs-enabled": self.enable_dynamic_jobs,
            "dynamic-jobs-acknowledged": self.acknowledge_dynamic_jobs,
            "profile-reuse-enabled": self.enable_profile_reuse,
            "sched-config": self.sched_config,
            "forward-unknown-events": self.forward_unknown_events,
        }


@dataclass
class SimulationResult:
    jobs_csv: Path | None
    schedule_csv: Path | None
    counts: dict[str, int]
    schedule: dict[str, str]
    simulated_time: float
    wall_time: float
    messages: int
    tracer: JobsTracer = field(repr=False)
    driver: str = "pybatsim"
    user_stats: dict[str, Any] | None = None     # a generating user model's stats() (sessions, jobs/session)


class AccountingError(BatfeedError):
    """A run that does not account for every job (a bug, never expected)."""
