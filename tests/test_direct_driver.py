"""The direct driver (batfeed.engine.direct) against the pybatsim path.

1. The facade: pybatsim 3.2.1's ``Batsim``/``Job`` and the direct ``DirectBatsim``/engine ``Job`` both
   offer every member of ``BatsimFacade``/``JobFacade``, and batfeed's schedulers and user-model layer
   use nothing else of ``bs`` (checked on their source).
2. Equivalence: for every batfeed scheduler (FCFS, EASY with the 12 policies and both reservation
   modes, Θ and a separate backfill order, conservative, Maui event-driven, interval mode and with a
   maui.cfg, tuned EASY with each strategy), without and with downtimes (each ``on_machine_down``
   mode) and planned maintenance, and
   for the user models (rigid, a0, a60, with and without acknowledgements and profile reuse), the two
   drivers give byte-identical ``_jobs.csv`` and ``_machine_states.csv``, ``_schedule.csv`` equal but
   for its wall-clock fields, and the same number of messages; then the same on hypothesis-generated
   workloads and outages.
"""

from __future__ import annotations

import ast
import json
import tempfile
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf
from batsim.batsim import Batsim, Job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batfeed.engine import load_simulation
from batfeed.engine.direct import BatsimFacade, DirectBatsim, DirectDriver, JobFacade, rejected_job_id, supports_direct
from batfeed.engine.transport import InProcessTransport
from batfeed.engine.workload import Job as EngineJob
from batfeed.engine.workload import parse_profile
from batfeed.errors import BatfeedError, ProtocolError
from batfeed.registry import make_scheduler
from batfeed.runner import in_process_driver, run_simulation

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
MAUI_CFG = """\
CREDWEIGHT 1
USERWEIGHT 10
FSWEIGHT 100
FSUSERWEIGHT 1
SERVICEWEIGHT 1
QUEUETIMEWEIGHT 2
XFACTORWEIGHT 50
FSPOLICY DEDICATEDPS
FSINTERVAL 24:00:00
FSDEPTH 3
FSDECAY 0.5
USERCFG[DEFAULT] FSTARGET=10 MAXJOB=8
RESERVATIONDEPTH 2
BACKFILLPOLICY BESTFIT
BACKFILLDEPTH 50
"""
POLICIES = ["FCFS", "LCFS", "SPF", "LPF", "SQF", "LQF", "SEXP", "LEXP", "SRF", "LRF", "SAF", "LAF"]
WALL_CLOCK = ("scheduling_time", "simulation_time")
# pybatsim 3.2.1 calls the deprecated logger.warn on every acknowledged dynamic job; docopt's regexes
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------------------------- 1. facade
def _members(proto: type) -> set[str]:
    names = set(getattr(proto, "__annotations__", {}))
    names |= {n for n, v in vars(proto).items() if not n.startswith("__") and (callable(v) or isinstance(v, property))}
    return names


def test_pybatsim_and_the_direct_batsim_both_satisfy_the_facade(tmp_path):
    from batfeed.schedulers.fcfs import Fcfs
    from test_engine_helpers import SMALL_4, delay, job, run, write_workload

    wl = write_workload(tmp_path, [job(1, 0, 1, "d5")], {"d5": delay(5)})
    for sched, kind in ((Fcfs(), Batsim), (Fcfs(), DirectBatsim)):
        if kind is Batsim:
            run([wl], sched)
        else:
            load_simulation(SMALL_4, [wl]).run(DirectDriver(sched))
        assert isinstance(sched.bs, kind)
        missing = [m for m in _members(BatsimFacade) if not hasattr(sched.bs, m)]
        assert not missing, (kind.__name__, missing)
    pyjob = Job.from_json_dict({"id": "w0!1", "subtime": 0, "res": 1, "profile": "p"})
    # a built engine job (a class compiled by mypyc cannot be made by __new__ alone)
    prof = parse_profile("p", {"type": "delay", "delay": 1}, "test")
    engine_job = EngineJob("w0!1", "w0", 0.0, 1, -1.0, prof, {})
    for j in (pyjob, engine_job):
        missing = [m for m in _members(JobFacade) if m not in ("profile_dict", "workload")
                   and not hasattr(j, m) and not hasattr(type(j), m)
                   and m not in getattr(type(j), "__slots__", ())]
        assert not missing, (type(j).__name__, missing)
        assert hasattr(type(j), "workload") or "workload" in type(j).__slots__


def _bs_uses(path: Path) -> set[str]:
    """Attributes read on ``self.bs`` / ``self._bs`` / ``bs`` (a local bound to one of them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    decorators = {id(d) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for d in node.decorator_list}
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in decorators:
            v = node.value
            if (isinstance(v, ast.Attribute) and v.attr in ("bs", "_bs") and isinstance(v.value, ast.Name)
                    and v.value.id == "self") or (isinstance(v, ast.Name) and v.id == "bs"):
                used.add(node.attr)
    return used


def test_batfeed_schedulers_use_only_the_facade():
    allowed = _members(BatsimFacade)
    files = sorted((REPO / "schedulers").glob("*.py")) + sorted((REPO / "users").glob("*.py"))
    seen = {}
    for f in files:
        extra = _bs_uses(f) - allowed
        assert not extra, f"{f.name} uses {sorted(extra)} of pybatsim's Batsim, outside BatsimFacade"
        seen[str(f)] = _bs_uses(f)
    assert {"time", "execute_jobs", "reject_jobs", "kill_jobs", "register_job"} <= set().union(*seen.values())


def test_driver_choice(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)            # pybatsim's batsim.sched writes out_events.csv in the cwd
    assert supports_direct(make_scheduler("easy"))
    assert not supports_direct(make_scheduler("schedFcfs"))
    assert isinstance(in_process_driver(make_scheduler("fcfs")), DirectDriver)
    assert isinstance(in_process_driver(make_scheduler("fcfs"), "pybatsim"), InProcessTransport)
    assert isinstance(in_process_driver(make_scheduler("schedFcfs")), InProcessTransport)
    with pytest.raises(BatfeedError, match="--driver pybatsim"):
        in_process_driver(make_scheduler("schedFcfs"), "direct")
    with pytest.raises(BatfeedError, match="unknown driver"):
        in_process_driver(make_scheduler("fcfs"), "fast")


# ---------------------------------------------------------------------------------------- 2. equivalence
@pytest.fixture(scope="module")
def kth500(tmp_path_factory) -> tuple[Path, Path, Path, list[dict]]:
    """The first 500 jobs of KTH-SP2 on its 100 machines, an events file with outages, maintenance windows."""
    out = tmp_path_factory.mktemp("kth500")
    conv = convert_swf(KTH, out, max_jobs=500, name="kth500")
    events = out / "outages.txt"
    outs = [(3, 9, 20_000, 40_000), (40, 55, 60_000, 61_000), (90, 99, 100_000, 150_000), (0, 0, 5_000, 5_600),
            (10, 20, 200_000, 200_500)]
    lines = []
    for a, b, s, e in outs:
        lines += [{"timestamp": s, "type": "machine_unavailable", "resources": f"{a}-{b}"},
                  {"timestamp": e, "type": "machine_available", "resources": f"{a}-{b}"}]
    events.write_text("".join(json.dumps(x) + "\n" for x in lines))
    maint = [{"start": 80_000, "end": 90_000, "machines": "0-49"}, {"start": 300_000, "end": 310_000,
                                                                    "machines": "50-99"}]
    return conv.platform_path, conv.workload_path, events, maint


def _both(tmp: Path, platform: Path, workloads: list[Path], scheduler: str, options: dict, **kw) -> dict:
    """Run both drivers; assert identical outputs (and the direct one really ran direct).  A decision Batsim
    aborts on (:class:`ProtocolError`) must abort both drivers alike: then ``{}``."""
    results, aborts = {}, {}
    for drv in ("direct", "pybatsim"):
        try:
            results[drv] = run_simulation(platform, workloads, scheduler=scheduler, options=options, driver=drv,
                                          export=tmp / drv, **kw)
        except ProtocolError as err:
            aborts[drv] = str(err)
            continue
        assert results[drv].driver == drv
    if aborts:
        assert set(aborts) == {"direct", "pybatsim"} and aborts["direct"] == aborts["pybatsim"], aborts
        return {}
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        a, b = (tmp / f"direct{suffix}").read_bytes(), (tmp / f"pybatsim{suffix}").read_bytes()
        assert a == b, f"{scheduler} {options}: {suffix} differs"
    sa, sb = results["direct"].schedule, results["pybatsim"].schedule
    assert {k: v for k, v in sa.items() if k not in WALL_CLOCK} == {k: v for k, v in sb.items() if k not in WALL_CLOCK}
    assert results["direct"].messages == results["pybatsim"].messages
    assert results["direct"].counts == results["pybatsim"].counts
    return results["direct"].counts


EASY_CASES = ([{"policy": p} for p in POLICIES]
              + [{"policy": p, "reservation": "machines", "theta": None} for p in POLICIES]
              + [{"policy": "SQF", "backfill_policy": "LPF", "theta": 3600}, {"policy": "LAF", "theta": 0}])


@pytest.mark.parametrize("options", EASY_CASES, ids=lambda o: "-".join(f"{v}" for v in o.values()))
def test_easy_equivalence(tmp_path, kth500, options):
    platform, workload, _, _ = kth500
    _both(tmp_path, platform, [workload], "easy", options)


@pytest.mark.parametrize("scheduler,options", [
    ("fcfs", {}), ("conservative", {}), ("conservative", {"policy": "SPF"}),
    ("maui", {}), ("maui", {"interval": 60}), ("maui", {"config": "CFG"}),
    ("maui", {"config": "CFG", "interval": 5, "poll": True}),
    ("tuned_easy", {}), ("tuned_easy", {"strategy": "noisy", "period": 3600, "seed": 2}),
    ("tuned_easy", {"strategy": "bandit", "period": 7200, "backfill_policy": "SPF", "discount": 0.9}),
    ("tuned_easy", {"strategy": "random", "period": 3600, "policies": ["SQF", "LEXP", "FCFS"]}),
], ids=lambda x: json.dumps(x) if isinstance(x, dict) else x)
def test_other_schedulers_equivalence(tmp_path, kth500, scheduler, options):
    platform, workload, _, _ = kth500
    if options.get("config") == "CFG":
        cfg = tmp_path / "maui.cfg"
        cfg.write_text(MAUI_CFG)
        options = {**options, "config": str(cfg)}
    _both(tmp_path, platform, [workload], scheduler, options)


@pytest.mark.parametrize("scheduler,options", [
    ("fcfs", {}), ("easy", {"on_machine_down": "ignore"}), ("easy", {"on_machine_down": "kill-drop"}),
    ("easy", {"on_machine_down": "kill-resubmit"}), ("easy", {"reservation": "machines", "policy": "SAF"}),
    ("conservative", {"on_machine_down": "kill-resubmit"}), ("maui", {"on_machine_down": "kill-drop"}),
    ("maui", {"interval": 60, "on_machine_down": "kill-resubmit"}),
    ("tuned_easy", {"period": 3600, "on_machine_down": "kill-resubmit"}),
], ids=lambda x: json.dumps(x) if isinstance(x, dict) else x)
def test_equivalence_with_downtimes(tmp_path, kth500, scheduler, options):
    platform, workload, events, _ = kth500
    mode = options.get("on_machine_down", "ignore")
    counts = _both(tmp_path, platform, [workload], scheduler, options, events=[events],
                   dynamic=mode == "kill-resubmit")
    assert (counts["completed_killed"] > 0) == (mode != "ignore")     # the outages hit running jobs
    assert (counts["submitted"] > 500) == (mode == "kill-resubmit")


@pytest.mark.parametrize("scheduler,options", [
    ("easy", {}), ("easy", {"reservation": "machines"}), ("conservative", {}), ("maui", {}),
    ("maui", {"interval": 60}),
], ids=lambda x: json.dumps(x) if isinstance(x, dict) else x)
def test_equivalence_with_maintenance(tmp_path, kth500, scheduler, options):
    platform, workload, events, maint = kth500
    _both(tmp_path, platform, [workload], scheduler, {**options, "maintenance": maint})
    _both(tmp_path, platform, [workload], scheduler, {**options, "maintenance": str(events)}, events=[events])


@pytest.mark.parametrize("users", ["rigid", "a0", "a60"])
@pytest.mark.parametrize("ack,reuse", [(False, False), (True, False), (False, True), (True, True)])
def test_user_models_equivalence(tmp_path, kth500, users, ack, reuse):
    platform, workload, _, _ = kth500
    _both(tmp_path, platform, [workload], "easy", {"policy": "SQF"}, users=users, ack=ack, profile_reuse=reuse)


def test_user_models_on_fcfs_and_maui_equivalence(tmp_path, kth500):
    platform, workload, _, _ = kth500
    _both(tmp_path / "f", platform, [workload], "fcfs", {}, users="a60", user_options={"speed_factor": 0.5})
    _both(tmp_path / "m", platform, [workload], "maui", {"interval": 60}, users="a0")


def test_two_workloads_equivalence(tmp_path, kth500):
    platform, workload, _, _ = kth500
    _both(tmp_path, platform, [workload, workload], "easy", {"policy": "SPF"})


def test_a_job_started_at_time_0_on_a_machine_going_down_at_0_aborts_as_in_batsim(tmp_path):
    """The user layer submits a time-0 job in its reply to SIMULATION_BEGINS, before Batsim has told the
    scheduler of an outage starting at 0: FCFS starts it on machine 0, which is unavailable by then.  Real
    Batsim 4.2.1 aborts on it (measured: server.cpp ``server_on_execute_job``, "machine 0 ... cannot compute
    jobs now ... its state is 'unavailable'"), and so do both drivers, with the same error (hypothesis found
    the case in test_random_workloads_equivalence)."""
    from batfeed.platforms.generate import write_homogeneous_platform
    from test_engine_helpers import write_events, write_workload

    wl = write_workload(tmp_path, [{"id": 1, "subtime": 0, "res": 1, "profile": "d1"}],
                        {"d1": {"type": "delay", "delay": 1}}, nb_res=8)
    ev = write_events(tmp_path, [{"timestamp": 0, "type": "machine_unavailable", "resources": "0"},
                                 {"timestamp": 1, "type": "machine_available", "resources": "0"}])
    platform = write_homogeneous_platform(tmp_path / "p.xml", 8)
    assert _both(tmp_path, platform, [wl], "fcfs", {}, events=[ev], users="rigid") == {}
    with pytest.raises(ProtocolError, match=r"machine 0 \('node_0000'\) is unavailable"):
        run_simulation(platform, [wl], scheduler="fcfs", events=[ev], users="rigid")
    assert _both(tmp_path / "static", platform, [wl], "fcfs", {}, events=[ev])["completed_successfully"] == 1   # told


# ---------------------------------------------------------------------------------------- hypothesis
job_st = st.tuples(st.integers(0, 400), st.integers(1, 6), st.integers(1, 300), st.sampled_from([None, 0.5, 1, 2]))
outage_st = st.tuples(st.integers(0, 7), st.integers(0, 3), st.integers(0, 400), st.integers(1, 200))
sched_st = st.sampled_from([("fcfs", {}), ("easy", {}), ("easy", {"policy": "SPF", "theta": 100}),
                            ("easy", {"reservation": "machines", "policy": "LQF", "theta": None}),
                            ("easy", {"policy": "SEXP", "on_machine_down": "kill-drop"}),
                            ("easy", {"on_machine_down": "kill-resubmit"}), ("conservative", {}),
                            ("conservative", {"on_machine_down": "kill-resubmit"}),
                            ("maui", {}), ("maui", {"interval": 30}),
                            ("tuned_easy", {"period": 60, "strategy": "noisy", "seed": 1}),
                            ("tuned_easy", {"period": 50, "strategy": "bandit", "on_machine_down": "kill-drop"})])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_st, min_size=1, max_size=40), st.lists(outage_st, max_size=3), sched_st,
       st.sampled_from([None, "rigid", "a0"]))
def test_random_workloads_equivalence(jobs, outages, sched, users):
    from test_engine_helpers import write_events, write_workload

    name, options = sched
    profiles, specs = {}, []
    for i, (sub, q, run, wall) in enumerate(jobs, 1):
        profiles[f"d{run}"] = {"type": "delay", "delay": run}
        spec = {"id": i, "subtime": sub, "res": q, "profile": f"d{run}", "user": i % 3}
        if wall is not None:
            spec["walltime"] = max(1, int(run * wall))
        specs.append(spec)
    events, busy = [], set()
    for a, n, s, d in outages:
        ms = set(range(a, min(a + n, 8))) - busy
        if ms:
            busy |= ms
            res = " ".join(map(str, sorted(ms)))
            events += [{"timestamp": s, "type": "machine_unavailable", "resources": res},
                       {"timestamp": s + d, "type": "machine_available", "resources": res}]
    resubmit = options.get("on_machine_down") == "kill-resubmit"
    if users and resubmit:
        users = None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wl = write_workload(tmp, specs, profiles, nb_res=8)
        from batfeed.platforms.generate import write_homogeneous_platform

        platform = Path(write_homogeneous_platform(tmp / "p.xml", 8))
        evs = [write_events(tmp, events)] if events else []
        _both(tmp, platform, [wl], name, options, events=evs, dynamic=resubmit, users=users)


def test_rejected_job_id_reads_the_engine_s_bound_methods(tmp_path):
    """The user-model layer finds its rejected jobs among the direct driver's buffered decisions by the
    handler's name: a compiled (mypyc) bound method has no ``__func__`` (a run with rejections once
    deadlocked on the compiled path only)."""
    from test_engine_helpers import SMALL_4

    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"}],
                              "profiles": {"p": {"type": "delay", "delay": 5}}}))
    sim = load_simulation(SMALL_4, [wl])
    (job,) = sim.workloads["w0"].jobs
    assert rejected_job_id((0.0, sim._do_reject, (job,))) == "w0!1"
    assert rejected_job_id((0.0, sim._do_change_state, (job, "REJECTED"))) == "w0!1"
    assert rejected_job_id((0.0, sim._do_change_state, (job, "COMPLETED_KILLED"))) is None
    assert rejected_job_id((0.0, sim._do_kill, ([job],))) is None
