"""Parallel tasks (ptask.py), composed profiles (executor.py) and their input checks, on small cases worked by hand.

The recorded real-Batsim runs (test_engine_suite_replay.py) check the whole; these pin the rules one by one:
SimGrid 3.32's fair-bottleneck sharing, bounds and latencies of an L07 action, the walltime budget of a
sequence, and the one-line refusals of inputs Batsim aborts on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batfeed.engine.executor import Executor
from batfeed.engine.ptask import DBL_MAX, Action, Constraint, System
from batfeed.engine.workload import parse_profile
from batfeed.engine.workload_file import load_workload
from batfeed.errors import InputError


def _action(system: System, *elems: tuple[Constraint, float], latency: float = 0.0,
            cpu_bound: float = DBL_MAX) -> Action:
    act = Action([[c, w, None] for c, w in elems], latency, DBL_MAX, cpu_bound)
    system.start(act)
    return act


def _system() -> System:
    return System(None, [], [], [])


def test_two_tasks_on_one_link_share_it_equally() -> None:
    s = _system()
    link = s.links["l"] = Constraint(100.0, False)
    a, b = _action(s, (link, 10.0)), _action(s, (link, 10.0))
    s.solve()
    assert (a.value, b.value) == (5.0, 5.0)


def test_a_task_fixed_by_its_bottleneck_leaves_the_rest_to_the_other() -> None:
    s = _system()
    l1 = s.links["l1"] = Constraint(100.0, False)
    l2 = s.links["l2"] = Constraint(30.0, False)
    a = _action(s, (l1, 10.0), (l2, 10.0))
    b = _action(s, (l1, 10.0))
    s.solve()
    assert (a.value, b.value) == (3.0, 7.0)        # l2 saturates first; b gets (100 - 30) / 10


def test_a_fatpipe_link_gives_each_task_its_whole_bandwidth() -> None:
    s = _system()
    pipe = s.links["p"] = Constraint(100.0, True)
    a, b = _action(s, (pipe, 10.0)), _action(s, (pipe, 20.0))
    s.solve()
    assert (a.value, b.value) == (10.0, 5.0)


def test_the_cpu_bound_caps_a_task_and_latency_disables_it_until_paid() -> None:
    s = _system()
    cpu = s.cpu[0] = Constraint(4e9, False)        # 4 cores of 1 Gflop/s
    a = _action(s, (cpu, 1e9), cpu_bound=1.0)       # speed / flops: one core
    s.solve()
    assert a.value == 1.0 and s.usage(0) == 1e9
    late = _action(s, (cpu, 1e9), latency=0.5, cpu_bound=1.0)
    s.solve()
    assert late.value == 0.0 and late.bound == -1.0
    s.latency_paid(late)
    s.solve()
    assert late.bound == 1.0 and late.value == 1.0 and s.usage(0) == 2e9


def test_a_task_with_nothing_to_do_gets_value_one_and_a_removed_task_frees_its_share() -> None:
    s = _system()
    link = s.links["l"] = Constraint(100.0, False)
    idle = _action(s, (link, 0.0))
    a, b = _action(s, (link, 10.0)), _action(s, (link, 10.0))
    s.solve()
    assert idle.value == 1.0 and a.value == 5.0
    s.remove(b)
    assert s.dirty
    s.solve()
    assert a.value == 10.0 and link.users == 2


def test_make_shares_only_when_it_must() -> None:
    s = System(None, ["h0", "h1"], [1e9, 2e9], [1e9, 2e9])
    assert s.make([0, 1], [1e9, 1e9], None) is None                 # distinct hosts, no bytes: constant rate
    act = s.make([0, 0], [1e9, 1e9], None)                          # two ranks on one host (a mapping)
    assert act is not None and len(act.elems) == 2 and act.cpu_bound == 1.0
    s.start(act)
    s.solve()
    assert act.value == 0.5                                          # each rank gets half the host
    assert s.make([0, 1], [1e9, 1e9], None) is not None              # host 0 now computes a task


def _profiles(**profiles: dict) -> dict:
    out = {name: parse_profile(name, p, "w.json") for name, p in profiles.items()}
    from batfeed.engine.workload import resolve_composed
    resolve_composed(out, "w.json")
    return out


def test_a_sequence_spends_one_walltime_budget_like_do_delay_task() -> None:
    profs = _profiles(d10={"type": "delay", "delay": 10}, seq={"type": "composed", "repeat": 2, "seq": ["d10"]})
    clock = [0.0]
    ex = Executor(profs["seq"], 15.0, lambda: clock[0], [0])
    assert next(ex.gen) == ("sleep", 10.0)
    clock[0] = 10.0
    assert ex.gen.send("done") == ("sleep", 5.0)                   # 10 < 5 is false: sleep until the walltime
    assert ex.progress(0.5) == {"profile_name": "seq", "current_task_index": 1,
                                "current_task": {"profile_name": "d10", "progress": 0.5}}
    clock[0] = 15.0
    with pytest.raises(StopIteration) as stop:
        ex.gen.send("done")
    assert stop.value.value == -1


def test_a_sequence_stops_at_the_first_failing_task_and_returns_its_code() -> None:
    profs = _profiles(ok={"type": "delay", "delay": 1}, bad={"type": "delay", "delay": 1, "ret": 3},
                      seq={"type": "composed", "seq": ["ok", "bad", "ok"], "ret": 7})
    ex = Executor(profs["seq"], -1.0, lambda: 0.0, [0])
    assert next(ex.gen) == ("sleep", 1.0)
    assert ex.gen.send("done") == ("sleep", 1.0)
    with pytest.raises(StopIteration) as stop:
        ex.gen.send("done")
    assert stop.value.value == 3


def _write(tmp_path: Path, jobs: list, profiles: dict) -> Path:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


@pytest.mark.parametrize("profiles,match", [
    ({"s": {"type": "composed", "seq": ["nope"]}}, r"invalid composed profile 's': the used profile 'nope'"),
    ({"s": {"type": "composed", "seq": ["t"]}, "t": {"type": "composed", "seq": ["s"]}},
     r"contains itself \((s -> t -> s|t -> s -> t)\)"),
    ({"s": {"type": "composed", "seq": ["s"]}}, r"contains itself \(s -> s\)"),
    ({"s": {"type": "composed", "repeat": 0, "seq": ["d"]}, "d": {"type": "delay", "delay": 1}}, r"'repeat'"),
    ({"s": {"type": "composed", "seq": []}}, r"'seq' must be a non-empty array"),
    ({"s": {"type": "parallel", "cpu": [1, 2], "com": [0, 0, 0]}}, r"2x2"),
    ({"s": {"type": "parallel", "cpu": [], "com": []}}, r"'cpu' must be a non-empty array"),
])
def test_bad_profiles_are_one_line_errors_naming_the_file(tmp_path: Path, profiles: dict, match: str) -> None:
    path = _write(tmp_path, [{"id": 1, "subtime": 0, "res": 2, "profile": "s"}], profiles)
    with pytest.raises(InputError, match=match) as info:
        load_workload(path, "w0")
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_a_parallel_job_must_request_as_many_resources_as_its_matrix_has_ranks(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"id": 1, "subtime": 0, "res": 3, "profile": "p"}],
                  {"p": {"type": "parallel", "cpu": [1, 1], "com": [0, 1, 1, 0]}})
    with pytest.raises(InputError, match=r"job w0!1: requests 3 resources but its parallel profile 'p' has 2"):
        load_workload(path, "w0")


def test_a_composed_profile_keeps_its_sub_profiles_loaded(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"id": 1, "subtime": 0, "res": 2, "profile": "s"}],
                  {"s": {"type": "composed", "seq": ["h"], "repeat": 2},
                   "h": {"type": "parallel_homogeneous", "cpu": 1e6, "com": 1e3},
                   "unused": {"type": "delay", "delay": 1}})
    wl = load_workload(path, "w0")
    assert set(wl.profiles) == {"s", "h"} and wl.profiles["s"].subs == (wl.profiles["h"],)
    flops, com = wl.profiles["h"].matrices(2)
    assert flops == [1e6, 1e6] and com == [0.0, 1e3, 1e3, 0.0]
