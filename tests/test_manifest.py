"""Run manifests (issue 14, item 3): PREFIX_manifest.json next to every exported simulation."""

from __future__ import annotations

import datetime
import hashlib
import json
import shlex
from pathlib import Path

import pandas as pd
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.fcfs import Fcfs
from batfeed.schedulers.options import Option, specs
from cli_helpers import run_cli, write_inputs

import batfeed.runner
from batfeed import manifest as mf
from batfeed.api import simulate_jobs
from batfeed.runner import run_simulation

JOBS = [(1, 0, 2, 10), (2, 1, 4, 10), (3, 2, 1, 5), (4, 3, 1, 100)]
FIELDS = {"schema", "call", "scheduler", "users", "seed", "inputs", "engine", "kernel", "jobs", "outputs", "versions",
          "git", "host", "started_utc", "wall_time_s", "engine_wall_time_s", "peak_rss_bytes", "peak_rss_scope"}


class SeededFcfs(Fcfs):
    """FCFS declaring a ``seed`` option (as a randomised scheduler would)."""

    OPTIONS = specs(Fcfs.OPTIONS.values(), [Option("seed", "number", None, "random seed", nullable=True)])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_run_manifest_has_every_field(tmp_path):
    platform, workload = write_inputs(tmp_path, JOBS)
    events = tmp_path / "ev.txt"
    events.write_text(json.dumps({"timestamp": 50, "type": "machine_unavailable", "resources": "3"}) + "\n"
                      + json.dumps({"timestamp": 60, "type": "machine_available", "resources": "3"}) + "\n")
    argv = ["simulate", platform.name, workload.name, "--scheduler", "easy", "--options", '{"policy": "SQF"}',
            "--events", events.name, "-o", "out/run"]
    proc = run_cli(argv, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(manifest out/run_manifest.json)" in proc.stdout
    m = json.loads((tmp_path / "out" / "run_manifest.json").read_text())
    assert set(m) == FIELDS and m["schema"] == mf.SCHEMA == 1
    assert m["call"] == shlex.join(["batfeed", *argv])
    # the scheduler's options with every default filled in from its spec
    assert m["scheduler"]["name"] == "easy" and m["scheduler"]["class"] == "batfeed.schedulers.easy:Easy"
    assert m["scheduler"]["options"] == {**{k: o.default for k, o in Easy.OPTIONS.items()}, "policy": "SQF"}
    assert m["scheduler"]["options_given"] == {"policy": "SQF"} and m["scheduler"]["checked"] is True
    assert m["users"] is None and m["seed"] is None
    # inputs as given, with their hashes
    assert m["inputs"]["platform"] == {"path": platform.name, "sha256": sha(platform), "bytes": platform.stat().st_size}
    assert [w["sha256"] for w in m["inputs"]["workloads"]] == [sha(workload)]
    assert [(e["path"], e["sha256"]) for e in m["inputs"]["events"]] == [(events.name, sha(events))]
    for key, suffix in (("jobs_csv", "_jobs.csv"), ("schedule_csv", "_schedule.csv"),
                        ("machine_states_csv", "_machine_states.csv")):
        out = tmp_path / "out" / f"run{suffix}"
        assert m["outputs"][key] == {"path": out.name, "sha256": sha(out), "bytes": out.stat().st_size}
    # counts equal the _jobs.csv
    states = pd.read_csv(tmp_path / "out" / "run_jobs.csv")["final_state"].value_counts()
    assert m["jobs"]["submitted"] == len(JOBS) == states.sum()
    assert m["jobs"]["completed"] == states.get("COMPLETED_SUCCESSFULLY", 0)
    assert m["jobs"]["rejected"] == states.get("REJECTED", 0)
    assert m["jobs"]["killed"] == states.sum() - m["jobs"]["completed"] - m["jobs"]["rejected"]
    assert m["engine"]["driver"] == "direct" and m["engine"]["transport"] == "inprocess"
    assert m["engine"]["batsim_switches"] == {
        "enable_dynamic_jobs": False, "acknowledge_dynamic_jobs": False, "enable_profile_reuse": False,
        "forward_profiles_on_submission": False, "forward_unknown_events": False, "sched_config": "",
        "disable_machine_state_tracing": False, "energy": False, "master_host": "master_host", "mmax": None}
    assert m["versions"]["batfeed"] == "0.1.0" and m["versions"]["pybatsim"] == "3.2.1" and m["versions"]["python"]
    assert m["git"] is None or (len(m["git"]["commit"]) == 40 and m["git"]["dirty"] in (True, False, None))
    started = datetime.datetime.fromisoformat(m["started_utc"])
    assert started.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.UTC) - started).total_seconds()) < 300
    assert 0 < m["engine_wall_time_s"] <= m["wall_time_s"] and m["peak_rss_bytes"] > 10 * 2**20


def test_user_model_run_records_the_models_options(tmp_path):
    platform, workload = write_inputs(tmp_path, JOBS)
    data = json.loads(workload.read_text())
    for j in data["jobs"]:
        j["user"] = j["id"] % 2
    workload.write_text(json.dumps(data))
    run_simulation(platform, [workload], scheduler="fcfs", users="feedback", user_options={"threshold_min": 30},
                   export=tmp_path / "u")
    m = json.loads((tmp_path / "u_manifest.json").read_text())
    assert m["users"]["name"] == "feedback" and m["users"]["class"] == "batfeed.users.feedback:FeedbackReplay"
    assert m["users"]["options"] == {"threshold_min": 30.0, "graph": "reduced"}
    assert m["users"]["layer_options"] == {"workload_name": "replay", "speed_factor": 1.0, "kill_at_walltime": True}
    assert m["users"]["replays"] == str(workload)
    assert m["inputs"]["workloads"][0]["sha256"] == sha(workload)
    assert m["engine"]["batsim_switches"]["enable_dynamic_jobs"] is True
    # the default call: this Python call, with the arguments that differ from the defaults
    assert m["call"].startswith(f"batfeed.runner.run_simulation({str(platform)!r}, [{str(workload)!r}], "
                                "scheduler='fcfs', export=")
    assert "users='feedback'" in m["call"]


def test_seed_is_recorded_and_given_to_a_scheduler_that_declares_it(tmp_path):
    platform, workload = write_inputs(tmp_path, JOBS)
    seen = {}
    original = batfeed.runner.make_scheduler

    def spy(name, options=None):
        seen[name] = dict(options or {})
        return original(name, options)

    batfeed.runner.make_scheduler = spy
    try:
        run_simulation(platform, [workload], scheduler="test_manifest:SeededFcfs", seed=7, export=tmp_path / "s",
                       call="campaign demo, run 3")
        run_simulation(platform, [workload], scheduler="fcfs", seed=7, export=tmp_path / "f")
    finally:
        batfeed.runner.make_scheduler = original
    assert seen == {"test_manifest:SeededFcfs": {"seed": 7}, "fcfs": {}}    # FCFS declares no seed
    s = json.loads((tmp_path / "s_manifest.json").read_text())
    assert s["seed"] == 7 and s["call"] == "campaign demo, run 3"
    assert s["scheduler"]["options"]["seed"] == 7.0 and s["scheduler"]["checked"] is True
    assert json.loads((tmp_path / "f_manifest.json").read_text())["seed"] == 7


def test_a_failing_manifest_never_fails_the_run(tmp_path, monkeypatch, capsys):
    platform, workload = write_inputs(tmp_path, JOBS)
    stale = tmp_path / "r_manifest.json"
    stale.write_text("{}")                       # an older run's: must not describe the new outputs

    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(batfeed.runner, "build_manifest", broken)
    result = run_simulation(platform, [workload], scheduler="fcfs", export=tmp_path / "r")
    assert result.counts["submitted"] == len(JOBS) and (tmp_path / "r_jobs.csv").is_file()
    assert not stale.exists() and not list(tmp_path.glob(".r_manifest*"))
    assert "warning: no run manifest written" in capsys.readouterr().err


def test_git_absent_or_not_a_checkout_gives_null(tmp_path, monkeypatch):
    assert mf.git_info(tmp_path) is None                    # not a checkout
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))     # no git program
    assert mf.git_info(tmp_path) is None


def test_api_export_writes_a_manifest(tmp_path):
    jobs = pd.DataFrame({"subtime": [0, 10, 20], "res": [3, 4, 1], "runtime": [100, 50, 30],
                         "walltime": [100, 60, 40]})
    simulate_jobs(jobs, nb_machines=4, scheduler="easy", options={"policy": "SQF"}, export=tmp_path / "api")
    m = json.loads((tmp_path / "api_manifest.json").read_text())
    assert set(m) == FIELDS
    assert m["call"].startswith("batfeed.api.simulate_jobs(<DataFrame 3 rows: subtime, res, runtime, walltime>, 4, ")
    assert m["inputs"]["platform"] == {"path": None, "in_memory": True, "nb_machines": 4, "speed": 1e9}
    assert m["inputs"]["workloads"][0]["in_memory"] and m["inputs"]["workloads"][0]["nb_jobs"] == 3
    assert m["scheduler"]["options"]["policy"] == "SQF" and "theta" in m["scheduler"]["options"]
    assert m["jobs"]["submitted"] == 3 and m["outputs"]["jobs_csv"]["path"] == "api_jobs.csv"
    simulate_jobs(jobs, nb_machines=4, scheduler="easy")                        # no export, no manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api_jobs.csv", "api_machine_states.csv",
                                                          "api_manifest.json", "api_schedule.csv"]
