"""The engine on platforms with link latencies and realistic bandwidths equals real Batsim 4.2.1.

Recorded by tests/conformance/record_latency.py (real Batsim 4.2.1, the scheduler served by ``batfeed
schedule``) on the platforms of tests/data/platforms/routing/ (Full routes with a split-duplex link and a
FATPIPE loopback, clusters joined by a zoneRoute with limiters and loopbacks, nested zones with the model's
loopback and Vivaldi coordinates) and a 60-job workload of same-second bursts, fractional run times and
walltime kills.  Messages there take tens of µs to ms, so the times of every start and end, and the
order of events at equal times, depend on the routes (batfeed/engine/routing.py) and on the message steps
(SimGridTimers.message_step): byte-identical ``_jobs.csv`` and ``_machine_states.csv``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batfeed.runner import run_simulation

DATA = Path(__file__).resolve().parent / "data"
REC = DATA / "engine" / "latency"
SCENARIOS = [(p, s) for p in ("full_routes", "clusters", "nested") for s in ("fcfs", "easy", "conservative")]


@pytest.mark.parametrize("platform,scheduler", SCENARIOS, ids=lambda x: x)
def test_equals_real_batsim_with_latencies(tmp_path: Path, platform: str, scheduler: str) -> None:
    result = run_simulation(DATA / "platforms" / "routing" / f"{platform}.xml", [REC / "workload.json"],
                            scheduler=scheduler, export=tmp_path / "engine")
    assert result.driver == "direct" and result.counts["submitted"] == 60
    for out in ("jobs", "machine_states"):
        got = (tmp_path / f"engine_{out}.csv").read_bytes()
        assert got == (REC / f"{platform}-{scheduler}_{out}.csv").read_bytes(), out


def test_the_recordings_show_the_delays() -> None:
    """The recordings are not the link-less schedule: starts lag submissions by the message delays."""
    jobs = (REC / "clusters-easy_jobs.csv").read_text().splitlines()
    assert jobs[1].split(",")[8] == "0.003000"   # job 1 submitted at 0 starts after 0.003 s of messages
