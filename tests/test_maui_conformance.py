"""batfeed's ``maui`` scheduler against the reference Maui 3 simulator, job by job (issue 29).

Each scenario of ``tests/conformance/maui/scenarios.py`` was run by Maui 3 (TempleHPC/maui-scheduler
c486472 with the trace-time patch, ``tests/data/maui_ref/MAUI_COMMIT``; re-record with
``tests/conformance/maui/record.py``) and its start time and nodes per job are in
``tests/data/maui_ref/<name>.csv``.  batfeed runs the same jobs on the same number of nodes at the same
poll through ``run_simulation``, and every job must start at Maui's poll on Maui's nodes - except in the
scenarios of :data:`KNOWN_DIFFERENT`, whose measured difference is checked exactly instead.
"""

from __future__ import annotations

import pytest
from conformance.maui.compare import compare, recording, simulate
from conformance.maui.scenarios import SCENARIOS

# scenario -> (jobs not at Maui's poll, jobs on other nodes, batfeed's mean wait - Maui's in s): the rules
# not modelled yet that explain them are named in the comments.  A change of these numbers, better or
# worse, fails the test: update them (and the report) with the measured values.
KNOWN_DIFFERENT: dict[str, tuple[int, int, float]] = {
    # every job starts at Maui's poll, but j0083 (4 nodes at 45865, when an 8-node job ends right at that
    # poll) gets nodes 8-11 where Maui gives 2-5: which nodes LASTAVAILABLE ranks first there (MNode.c
    # MNodeSelectIdleTasks's availability times) is not explained yet
    "classmaxproc_16n_5s": (0, 1, 0.0),
    # every job starts at Maui's poll, but j0295 (8 nodes at 100560, when the 8-node j0293 ends right at that
    # poll) gets nodes 12 and not 3 where Maui does the reverse; in Maui's log (LOGLEVEL 6) a node of a job
    # that ends at the poll can still be held by that job's released reservation (printed as '\1'-named, e.g.
    # "during 0149 end") until its walltime: not modelled yet (the same effect as classmaxproc_16n_5s?)
    "fstargetcap_16n_60s": (0, 1, 0.0),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_job_starts_at_mauis_poll(tmp_path, name):
    sc = SCENARIOS[name]
    d = compare(recording(name), simulate(sc, tmp_path), sc.poll)
    if name in KNOWN_DIFFERENT:
        assert (d.differing, d.hosts_differing, d.mean_wait_diff) == KNOWN_DIFFERENT[name], d
    else:
        assert d.differing == 0 and d.hosts_differing == 0, d
        assert d.mean_wait_diff == 0.0


def test_the_recordings_are_the_scenarios():
    # every scenario has its recording and every recording its scenario, with the generator's jobs
    from pathlib import Path

    from conformance.maui.scenarios import T0, jobs
    ref = Path(__file__).resolve().parent / "data" / "maui_ref"
    assert sorted(p.stem for p in ref.glob("*.csv")) == sorted(SCENARIOS)
    for name, sc in SCENARIOS.items():
        rec = recording(name)
        assert {j.name: j.submit - T0 for j in jobs(sc)} == {j: r["submit"] for j, r in rec.items()}
