"""The user-model layer itself (batfeed.users.base): Batsim switches, scaling options, the wrapped
scheduler's own calls, errors, the CLI and the ZeroMQ transport.  Fixture: six_jobs.json (see
test_users_models.py), FCFS on small_4.xml unless stated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batfeed.schedulers.fcfs import Fcfs
from batfeed.users import UserModelError, UserModelScheduler
from test_users_helpers import SIX, SMALL_4, read_rows, replay, starts, submits

from batfeed.cli import main
from batfeed.engine import EngineConfig, simulate
from batfeed.errors import BatfeedError
from batfeed.runner import run_simulation

pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning"),  # pybatsim ACK path
    pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning"),  # docopt 0.6.2
]


@pytest.mark.parametrize("model", ["rigid", "a0", "a60"])
def test_acknowledgements_and_profile_reuse_do_not_change_the_schedule(tmp_path: Path, model: str) -> None:
    base, rows, _ = replay(tmp_path, SIX, model, name="plain")
    text = base.jobs_csv.read_text()
    ack, _, _ = replay(tmp_path, SIX, model, ack=True, name="ack")
    assert ack.jobs_csv.read_text() == text            # byte-identical _jobs.csv
    assert ack.messages > base.messages                # one ACK message per submission instant
    reuse, rrows, _ = replay(tmp_path, SIX, model, reuse=True, name="reuse")
    # with profile reuse each trace profile is registered once under its own name; without, one per job
    assert {j: r["profile"] for j, r in rrows.items()} == {"1": "d2000", "2": "d100", "3": "d100", "4": "d200",
                                                           "5": "d100", "6": "d50"}
    assert {r["profile"] for r in rows.values()} == {f"p{j}" for j in rows}
    drop = ("profile",)
    assert ({j: {k: v for k, v in r.items() if k not in drop} for j, r in rrows.items()}
            == {j: {k: v for k, v in r.items() if k not in drop} for j, r in rows.items()})


def test_speed_factor_scales_run_times_and_keeps_walltimes(tmp_path: Path) -> None:
    # speed x2: d / 2, walltime unchanged.  Rigid: job 1 runs 0-1000; jobs 2, 3, 4 wait until 1000
    # and run 50, 50, 100 s.
    _, rows, _ = replay(tmp_path, SIX, "rigid", speed_factor=2, name="x2")
    assert {j: float(r["execution_time"]) for j, r in rows.items()} == {"1": 1000, "2": 50, "3": 50, "4": 100,
                                                                       "5": 50, "6": 25}
    assert float(rows["1"]["requested_time"]) == 4000
    assert starts(rows) == {"1": 0, "2": 1000, "3": 1000, "4": 1000, "5": 10000, "6": 20000}
    # speed / 2: d x 2 = the walltime (2 x d in the fixture) -> every job reaches its walltime and
    # Batsim kills it there (delay >= walltime counts as reached)
    _, slow, _ = replay(tmp_path, SIX, "rigid", speed_factor=0.5, name="d2")
    assert {r["final_state"] for r in slow.values()} == {"COMPLETED_WALLTIME_REACHED"}
    assert float(slow["1"]["execution_time"]) == 4000
    # kill_at_walltime false: the walltime is raised to d^ + 1 s for exactly those jobs
    _, nokill, _ = replay(tmp_path, SIX, "rigid", speed_factor=0.5, kill_at_walltime=False, name="nk")
    assert {r["final_state"] for r in nokill.values()} == {"COMPLETED_SUCCESSFULLY"}
    assert (float(nokill["1"]["execution_time"]), float(nokill["1"]["requested_time"])) == (4000, 4001)


def test_node_count_is_the_platform(tmp_path: Path) -> None:
    # 2 machines: job 1 (4 machines) is rejected at 0 and releases its session at once; user 9's
    # only session {1, 3} then ends when job 3 ends (100-200).
    from batfeed.platforms.generate import write_homogeneous_platform

    p2 = write_homogeneous_platform(tmp_path / "p2.xml", 2)
    result, rows, _ = replay(tmp_path, SIX, "a60", platform=p2)
    assert rows["1"]["final_state"] == "REJECTED"
    assert result.counts["submitted"] == 6
    # nothing waits any more: every other job starts at its recorded submission
    assert starts(rows) == {"2": 50, "3": 100, "4": 1000, "5": 10000, "6": 20000}


class CallingFcfs(Fcfs):
    """FCFS that asks Batsim for its own wake-ups and records the REQUESTED_CALLs it receives."""

    def __init__(self, at: list[float]):
        super().__init__({})
        self.at, self.calls = at, []

    def onSimulationBegins(self) -> None:
        super().onSimulationBegins()
        for t in self.at:
            self.bs.wake_me_up_at(t)

    def onRequestedCall(self) -> None:
        self.calls.append(self.bs.time())


def test_the_wrapped_schedulers_own_calls_are_forwarded(tmp_path: Path) -> None:
    # The layer wakes up at 50, 100, 1000 (and later for sessions); the inner scheduler asks for
    # 777 and for 1000, which coincides with one of the layer's: it gets exactly its two calls.
    inner = CallingFcfs([777.0, 1000.0])
    _, rows, layer = replay(tmp_path, SIX, "a60", inner=inner)
    assert layer.inner is inner and inner.bs is layer.bs
    assert inner.calls == [777.0, 1000.0]
    assert submits(rows)["4"] == 1000


def test_empty_trace_ends_at_once(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"nb_res": 1, "jobs": [], "profiles": {}}')
    result, rows, _ = replay(tmp_path, empty, "a60")
    assert rows == {} and result.simulated_time == 0 and result.counts["submitted"] == 0


def test_errors(tmp_path: Path) -> None:
    layer = UserModelScheduler({"users": "a60", "trace": str(SIX)})
    with pytest.raises(UserModelError, match="--enable-dynamic-jobs"):
        simulate(SMALL_4, [], layer, config=EngineConfig())
    with pytest.raises(UserModelError, match="unknown option.*speed_facter"):
        UserModelScheduler({"users": "a60", "trace": str(SIX), "speed_facter": 2})
    with pytest.raises(UserModelError, match="unknown option.*threshold_min"):
        UserModelScheduler({"users": "a0", "trace": str(SIX), "threshold_min": 5})   # a0 fixes it
    with pytest.raises(UserModelError, match="unknown user model 'bogus'"):
        UserModelScheduler({"users": "bogus", "trace": str(SIX)})
    with pytest.raises(UserModelError, match="needs option 'trace'"):
        UserModelScheduler({"users": "rigid"})
    with pytest.raises(UserModelError, match="option .graph. for user model .a60. must be one of"):
        UserModelScheduler({"users": "a60", "trace": str(SIX), "graph": "dense"})
    with pytest.raises(BatfeedError, match="exactly one recorded trace"):
        run_simulation(SMALL_4, [SIX, SIX], scheduler="fcfs", users="rigid")


def test_cli_simulate_with_users_and_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = tmp_path / "cli"
    assert main(["simulate", str(SMALL_4), str(SIX), "--scheduler", "fcfs", "--users", "a60",
                 "--export", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert "submitted=6" in out and "user model 'a60'" in out
    assert submits(read_rows(Path(f"{prefix}_jobs.csv")))["5"] == 11000     # as in test_users_models.py
    assert main(["metrics", f"{prefix}_jobs.csv"]) == 0
    out = capsys.readouterr().out
    assert "lateness (user-model replay, 6 jobs incl. rejected)" in out
    assert "333.333" in out                                                 # mean lateness 2000/6 s
    assert main(["metrics", f"{prefix}_jobs.csv", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lateness"]["delta_s"] == pytest.approx(400 / 3)
    # --user-options reaches the layer
    assert main(["simulate", str(SMALL_4), str(SIX), "--scheduler", "fcfs", "--users", "rigid",
                 "--user-options", '{"speed_factor": 2}', "--export", str(tmp_path / "x2")]) == 0
    capsys.readouterr()
    assert float(read_rows(tmp_path / "x2_jobs.csv")["1"]["execution_time"]) == 1000
    assert main(["simulate", str(SMALL_4), str(SIX), "--scheduler", "fcfs", "--user-options", "{}",
                 "--export", str(tmp_path / "y")]) == 0   # empty options without --users: fine
    assert main(["simulate", str(SMALL_4), str(SIX), "--scheduler", "fcfs", "--user-options", '{"a": 1}',
                 "--export", str(tmp_path / "z")]) == 1
    assert "--user-options needs --users" in capsys.readouterr().err


def test_zmq_transport_gives_the_same_replay(tmp_path: Path) -> None:
    # the layer runs in a `batfeed schedule batfeed.users:UserModelScheduler` subprocess, as
    # against a real Batsim
    inproc = run_simulation(SMALL_4, [SIX], scheduler="fcfs", users="a0", export=tmp_path / "in")
    zmq = run_simulation(SMALL_4, [SIX], scheduler="fcfs", users="a0", export=tmp_path / "zmq", transport="zmq")
    assert zmq.jobs_csv.read_text() == inproc.jobs_csv.read_text()
