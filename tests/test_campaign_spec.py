"""Campaign files: checks with one-line errors, expansion and run keys, input shaking, failed runs,
leftovers, the lock, metrics options, user models and platforms (``batfeed.campaign``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from batfeed.campaign import CampaignError, load_spec, run_campaign
from batfeed.campaign.expand import expand
from batfeed.campaign.inputs import shake_jobs
from batfeed.campaign.spec import metric_names
from batfeed.campaign.store import locked
from batfeed.errors import BatfeedError
from batfeed.metrics import compute_metrics

DATA = Path(__file__).resolve().parent / "data"
KTH200 = str(DATA / "batsim_golden" / "kth200.json")
REPO = Path(__file__).resolve().parent.parent


def write(tmp: Path, text: str, name: str = "campaign.toml") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


BASE = f'traces = ["{KTH200}"]\n'


@pytest.mark.parametrize(("text", "message"), [
    (BASE + 'schedulers = [{name = "easy", options = {policy = "SQX"}}]',
     r'schedulers\[0\]\.options\.policy: must be a queue policy \(FCFS, .*\), got "SQX" \(did you mean "SQF"\?\)'),
    (BASE + '[[schedulers]]\nname = "fcfs"\n[[schedulers]]\nname = "easy"\noptions = {policy = ["FCFS", "SQX"]}',
     r'schedulers\[1\]\.options\.policy\[1\]: must be a queue policy .* \(did you mean "SQF"\?\)'),
    (BASE + 'schedulers = [{name = "easy", options = {polcy = "SQF"}}]',
     r"schedulers\[0\]\.options\.polcy: unknown option for easy \(did you mean 'policy'\?; known: .*\)"),
    (BASE + 'schedulers = [{name = "easy", options = {theta = -1}}]',
     r"schedulers\[0\]\.options\.theta: must be a number of seconds >= 0 or null, got -1"),
    (BASE + 'schedulers = ["esay"]', r"schedulers\[0\].name: unknown scheduler 'esay' \(did you mean 'easy'\?\); .*"),
    (BASE + 'scheduler = ["easy"]', r"scheduler: unknown key \(did you mean 'schedulers'\?\); known: .*"),
    (BASE, r"no 'schedulers' given \(a campaign needs traces and schedulers\)"),
    ('traces = ["nope.swf"]\nschedulers = ["fcfs"]', r"traces\[0\]\.path: no such file: .*nope\.swf"),
    (f'traces = [{{path = "{KTH200}", walltime_fallback = "max"}}]\nschedulers = ["fcfs"]',
     r"traces\[0\]\.walltime_fallback: unknown key for a JSON workload; known: name, path, format, shake, max_jobs, "
     r"load, resample_weeks, resample, resample_load, resample_rb_npw"),
    ('traces = [{path = "KTH-SP2", speed = 0}]\nschedulers = ["fcfs"]',
     r"traces\[0\]\.speed: must be a number > 0, got 0"),
    ('traces = [{path = "KTH-SP2", filter = "tun"}]\nschedulers = ["fcfs"]',
     r"traces\[0\]\.filter: unknown filter \"tun\" \(did you mean 'tune'\?\); known: tune"),
    ('traces = [{path = "KTH-SP2", over_request = "trim"}]\nschedulers = ["fcfs"]',
     r"traces\[0\]\.over_request: must be one of .*, not 'trim'"),
    ('traces = [{path = "KTH-SP2", max_jobs = 0}]\nschedulers = ["fcfs"]',
     r"traces\[0\]\.max_jobs: must be an integer >= 1, got 0"),
    (BASE + 'schedulers = ["fcfs"]\nusers = ["a6"]',
     r'users\[0\]\.model: unknown user model "a6" \(did you mean \'a60\'\?\); known: none, rigid, .*'),
    (BASE + 'schedulers = ["fcfs"]\nusers = [{model = "a60", options = {threshold_min = 30}}]',
     r"users\[0\]\.options\.threshold_min: unknown option for user model 'a60' .*"),
    (BASE + 'schedulers = ["fcfs"]\nusers = [{model = "a60", options = {speed_factor = 0}}]',
     r"users\[0\]\.options\.speed_factor: must be a number > 0, got 0"),
    (BASE + 'schedulers = ["fcfs"]\nplatforms = [{scale = 2, nb_machines = 3}]',
     r"platforms\[0\]: give one of from, scale, nb_machines, xml \(got scale, nb_machines\)"),
    (BASE + 'schedulers = ["fcfs"]\nseeds = [1, 1]', r"seeds: a seed is listed twice: \[1, 1\]"),
    (BASE + 'schedulers = ["fcfs"]\nmetrics = ["wait.mean", "wait.avg"]',
     r'metrics\[1\]: unknown metric "wait.avg" \(did you mean \'wait.max\'\?\) .*'),
    (BASE + 'schedulers = ["fcfs"]\n[[exclude]]\nschedular = "fcfs"',
     r"exclude\[0\]\.schedular: unknown column \(did you mean 'scheduler'\?\); the spec's columns: .*"),
    (BASE + 'schedulers = ["fcfs"]\n[[exclude]]\nscheduler = "fcfs"', r"exclude removes every run"),
    (BASE + 'schedulers = ["fcfs"\n', r"not valid TOML: .*"),
])
def test_bad_spec_is_one_line_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    spec = write(tmp_path, text)
    with pytest.raises(CampaignError) as err:
        run_campaign(spec, tmp_path / "out", dry_run=True)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{spec}: "), line
    assert re.fullmatch(message, line.removeprefix(f"{spec}: ")), line
    assert not (tmp_path / "out").exists()


def test_bad_spec_from_the_cli_exits_1_before_any_run(tmp_path: Path) -> None:
    spec = write(tmp_path, BASE + 'schedulers = [{name = "easy", options = {policy = "SQX"}}]')
    proc = subprocess.run([sys.executable, "-P", "-m", "batfeed", "campaign", str(spec), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f'batfeed campaign: error: {spec}: schedulers[0].options.policy: must be a '
                                        f'queue policy ({proc.stderr.split("queue policy (")[1].split(")")[0]}), '
                                        'got "SQX" (did you mean "SQF"?)']
    assert not (tmp_path / "o").exists()


def test_yaml_spec_and_bad_yaml(tmp_path: Path) -> None:
    toml = write(tmp_path, BASE + 'seeds = [3]\n[[schedulers]]\nname = "easy"\noptions = {policy = ["SQF", "LQF"]}')
    yaml = write(tmp_path, f"traces: [{KTH200}]\nseeds: [3]\nschedulers:\n  - name: easy\n    options:\n"
                           "      policy: [SQF, LQF]\n", "campaign.yaml")
    assert [r.key for r in expand(load_spec(toml))] == [r.key for r in expand(load_spec(yaml))]
    bad = write(tmp_path, "traces: [a\nschedulers: fcfs\n", "bad.yml")
    with pytest.raises(CampaignError, match=rf"^{bad}:2: not valid YAML: expected .*"):
        load_spec(bad)
    with pytest.raises(CampaignError, match=r"unknown campaign file type '\.json' \(\.toml, \.yaml or \.yml\)"):
        load_spec(write(tmp_path, "{}", "c.json"))


def test_expansion_order_keys_exclude_and_defaults() -> None:
    spec = {"traces": [KTH200], "seeds": [1, 2],
            "platforms": ["trace", {"name": "big", "nb_machines": 128}],
            "schedulers": ["fcfs", {"name": "easy", "options": {"policy": ["FCFS", "SQF"], "theta": [144000]}},
                           {"name": "easy", "options": {"theta": 144000.0}}],
            "exclude": [{"platform": "big", "options": {"policy": ["SQF"]}}, {"platform": "big", "scheduler": "fcfs"}]}
    runs = expand(load_spec(spec))
    rows = [(r.row["platform"], r.row["scheduler"], r.row.get("options.policy"), r.row["seed"]) for r in runs]
    assert rows == [("trace", "fcfs", None, 1), ("trace", "fcfs", None, 2),
                    ("trace", "easy", "FCFS", 1), ("trace", "easy", "FCFS", 2),
                    ("trace", "easy", "SQF", 1), ("trace", "easy", "SQF", 2),
                    ("trace", "easy", None, 1), ("trace", "easy", None, 2),
                    ("big", "easy", "FCFS", 1), ("big", "easy", "FCFS", 2), ("big", "easy", None, 1),
                    ("big", "easy", None, 2)]
    keys = [r.key for r in runs]
    assert keys[2] == keys[3] == keys[6]       # no shaking: seeds share a run; default policy FCFS = given FCFS
    assert len(set(keys)) == 4 and not any(r.seeded for r in runs)
    shaken = expand(load_spec({**spec, "traces": [{"path": KTH200, "shake": 60}]}))
    assert len({r.key for r in shaken}) == 8 and all(r.seeded for r in shaken)


def test_shaking_is_seeded_bounded_and_keeps_whole_seconds() -> None:
    def shaken(seed: int, shake: float = 100.0, subs: tuple[float, ...] = (0.0, 50.0, 1000.0, 5000.0)) -> list:
        jobs = [{"id": str(i), "subtime": s} for i, s in enumerate(subs)]
        shake_jobs(jobs, shake, seed)
        return [j["subtime"] for j in jobs]

    assert shaken(1) == shaken(1) and shaken(1) != shaken(2)
    moved = np.array(shaken(7)) - np.array([0.0, 50.0, 1000.0, 5000.0])
    assert (np.abs(moved) <= 100.0).all() and min(shaken(7)) >= 0 and all(float(t).is_integer() for t in shaken(7))
    frac = shaken(3, 0.5, (10.25, 20.5))
    assert all(abs(a - b) <= 0.5 for a, b in zip(frac, (10.25, 20.5), strict=True))
    many = [{"id": str(i), "subtime": 1e6} for i in range(20000)]
    shake_jobs(many, 600, 0)
    deltas = np.array([j["subtime"] for j in many]) - 1e6
    assert abs(deltas.mean()) < 10 and deltas.min() >= -600 and deltas.max() <= 600   # uniform on [-600, 600]


def test_resampled_traces_one_per_seed(tmp_path: Path) -> None:
    """``resample_weeks``: each seed's run simulates the weekly user resample of the converted trace
    (adapters/resample.py) with that seed; the seed is in the key; a seed's resample is made once."""
    from batfeed.adapters.resample import resample_weekly

    from batfeed.campaign.inputs import read_workload

    spec = {"traces": [{"name": "kth3k", "path": "KTH-SP2", "max_jobs": 3000, "resample_weeks": 3}],
            "schedulers": ["fcfs", "easy"], "seeds": [1, 2]}
    out = run_campaign(spec, tmp_path, workers=2, progress=False)
    assert (out["status"] == "ok").all() and out["seed_used"].all() and out["key"].nunique() == 4
    derived = sorted((tmp_path / "inputs" / "derived").glob("*.json.gz"))
    assert len(derived) == 2                                    # one per seed, shared by both schedulers
    (conv,) = [p for p in (tmp_path / "inputs").glob("*/workload.json")]
    for seed in (1, 2):
        expected = resample_weekly(read_workload(conv), 3, seed)
        (path,) = [p for p in derived if p.name.endswith(f"-seed{seed}.json.gz")]
        got = read_workload(path)
        assert got["jobs"] == expected["jobs"] and got["batfeed_resample"]["seed"] == seed
        rows = out[out["seed"] == seed]
        assert (rows["nb_jobs"] == len(expected["jobs"])).all()
    assert out.loc[out["seed"] == 1, "wait.mean"].tolist() != out.loc[out["seed"] == 2, "wait.mean"].tolist()
    with pytest.raises(CampaignError, match=r"traces\[0\]\.resample_weeks: must be an integer >= 0"):
        load_spec({**spec, "traces": [{"path": "KTH-SP2", "resample_weeks": 1.5}]})


def test_user_based_resampling_with_feedback(tmp_path: Path) -> None:
    """``resample = "users"``: each seed's runs simulate Zakay & Feitelson's resample (users/zf_resample.py)
    with load factor ``resample_load``; a user model then replays it with feedback (issue 16 item 5)."""
    from batfeed.users.zf_resample import resample_users

    from batfeed.campaign.inputs import read_workload

    traces = [{"name": f"kth-f{f}", "path": "KTH-SP2", "max_jobs": 4000, "resample_weeks": 4, "resample": "users",
               "resample_load": f} for f in (1, 1.5)]
    spec = {"traces": traces, "schedulers": ["easy"], "users": ["rigid", "a60"], "seeds": [5]}
    out = run_campaign(spec, tmp_path, workers=2, progress=False)
    assert (out["status"] == "ok").all() and out["key"].nunique() == 4
    (conv,) = [p for p in (tmp_path / "inputs").glob("*/workload.json")]
    for f in (1, 1.5):
        expected = resample_users(read_workload(conv), 4, 5, load=f)
        (path,) = (tmp_path / "inputs" / "derived").glob(f"*-w4-users-f{f:g}-0s-seed5.json.gz")
        assert read_workload(path)["jobs"] == expected["jobs"]
        rows = out[out["trace"] == f"kth-f{f}"]
        assert (rows["nb_jobs"] == len(expected["jobs"])).all()
    assert out.loc[out["trace"] == "kth-f1.5", "nb_jobs"].iloc[0] > out.loc[out["trace"] == "kth-f1", "nb_jobs"].iloc[0]
    a60 = out[out["users"] == "a60"]
    assert a60["lateness.mean_s"].notna().all()
    with pytest.raises(CampaignError, match=r"traces\[0\]\.resample_load: only the \"users\" resampling"):
        load_spec({**spec, "traces": [{"path": "KTH-SP2", "resample_weeks": 4, "resample_load": 2}]})
    with pytest.raises(CampaignError, match=r"traces\[0\]\.resample: needs resample_weeks"):
        load_spec({**spec, "traces": [{"path": "KTH-SP2", "resample": "users"}]})
    with pytest.raises(CampaignError, match=r"did you mean 'users'"):
        load_spec({**spec, "traces": [{"path": "KTH-SP2", "resample_weeks": 4, "resample": "user"}]})


def test_failed_runs_are_rows_kept_until_retried(tmp_path: Path) -> None:
    spec = {"traces": [KTH200], "schedulers": ["fcfs", {"name": "maui", "options": {"config": "/nonexistent.cfg"}}]}
    out = run_campaign(spec, tmp_path, workers=2, progress=False)
    assert list(out["status"]) == ["ok", "failed"]
    assert out["error"][1] == "/nonexistent.cfg: cannot read Maui configuration: No such file or directory"
    assert pd.isna(out["error"][0]) and pd.isna(out["wait.mean"][1]) and out["wait.mean"][0] > 0
    log = (tmp_path / "runs" / out["key"][1] / "log.txt").read_text()
    assert "Traceback" in log                       # the details stay in the run's log
    first = json.loads((tmp_path / "runs" / out["key"][1] / "result.json").read_text())["started"]
    lines: list[str] = []
    again = run_campaign(spec, tmp_path, workers=2, progress=False, log=lines.append)
    assert "2 runs reused" in lines[0] and list(again["status"]) == ["ok", "failed"]
    retry = run_campaign(spec, tmp_path, workers=2, progress=False, retry_failed=True, log=lines.append)
    assert "1 runs reused" in lines[-2] and list(retry["status"]) == ["ok", "failed"]
    assert json.loads((tmp_path / "runs" / out["key"][1] / "result.json").read_text())["started"] != first


def test_leftovers_lock_dry_run_and_metrics_options(tmp_path: Path) -> None:
    spec = {"traces": [KTH200], "schedulers": ["easy"], "metrics": ["bounded_slowdown.mean", "nb_jobs"]}
    dry = run_campaign(spec, tmp_path / "c", dry_run=True)
    assert list(dry["status"]) == ["pending"] and not (tmp_path / "c").exists()
    root = tmp_path / "c"
    key = dry["key"][0]
    (root / "runs" / ".tmp-junk").mkdir(parents=True)         # an interrupted run
    (root / "runs" / key).mkdir()                              # a run directory without result.json
    (root / "runs" / key / "run_jobs.csv").write_text("half written")
    with locked(root), pytest.raises(BatfeedError, match=r"another batfeed campaign is running in .* \(pid \d+\)"):
        run_campaign(spec, root, workers=1)
    out = run_campaign(spec, root, workers=1, progress=False)
    assert list(out["status"]) == ["ok"] and not (root / "runs" / ".tmp-junk").exists()
    jobs = root / out["jobs_csv"][0]
    assert out["bounded_slowdown.mean"][0] == pytest.approx(compute_metrics(jobs)["bounded_slowdown"]["mean"])
    lines: list[str] = []
    wide = run_campaign({**spec, "tau": 3600}, root, workers=1, progress=False, log=lines.append)
    assert "1 runs reused" in lines[0] and wide["key"][0] == key       # tau is not part of the run
    assert wide["bounded_slowdown.mean"][0] == pytest.approx(
        compute_metrics(jobs, tau=3600)["bounded_slowdown"]["mean"])
    assert wide["bounded_slowdown.mean"][0] < out["bounded_slowdown.mean"][0]


def test_user_models_and_platforms_as_in_replay_with_feedback(tmp_path: Path) -> None:
    spec = {"traces": [{"path": "KTH-SP2", "max_jobs": 300}],
            "platforms": ["trace", {"name": "half", "scale": 0.5}],
            "schedulers": [{"name": "easy", "options": {"policy": "FCFS", "theta": "null"}}],
            "users": ["rigid", {"model": "a60", "options": {"speed_factor": [1, 2], "kill_at_walltime": False}}],
            "exclude": [{"platform": "half", "user_options.speed_factor": 2}]}
    out = run_campaign(spec, tmp_path, workers=2, progress=False)
    got = [(p, u, None if pd.isna(s) else s)
           for p, u, s in zip(out["platform"], out["users"], out["user_options.speed_factor"], strict=True)]
    assert got == [("trace", "rigid", None), ("trace", "a60", 1), ("trace", "a60", 2), ("half", "rigid", None),
                   ("half", "a60", 1)]
    assert len(out) == 5 and (out["status"] == "ok").all(), out["error"].tolist()
    assert {"lateness.mean_s", "lateness.relative", "lateness.delta_s"} <= set(out.columns)
    assert out["lateness.mean_s"].notna().all()
    schedule = pd.read_csv(tmp_path / Path(out["jobs_csv"][3]).parent / "run_schedule.csv")
    assert int(schedule["nb_computing_machines"][0]) == 50
    manifest = json.loads((tmp_path / out["manifest"][1]).read_text())
    assert "a60" in json.dumps(manifest)


def test_metric_names_and_example_campaigns_load(monkeypatch: pytest.MonkeyPatch) -> None:
    names = metric_names()
    assert {"wait.mean", "bounded_slowdown.p99", "utilisation", "lateness.delta_s", "by_state.REJECTED"} <= set(names)
    examples = sorted((REPO / "campaigns").glob("*.toml")) + sorted((REPO / "campaigns").glob("*.yaml"))
    assert examples
    shared = Path(os.environ.get("BATFEED_SHARED") or REPO.parent / "shared")      # as tests/conftest.py
    monkeypatch.setenv("BATFEED_SHARED", str(shared))
    for path in examples:
        uses_shared = re.search(r"^[^#\n]*\$\{BATFEED_SHARED\}", path.read_text(encoding="utf-8"), re.M)
        if uses_shared and not (shared / "data").is_dir():      # the shared traces are not on this machine
            with pytest.raises(CampaignError, match=r"no such file: .*"):
                load_spec(path)
            continue
        assert expand(load_spec(path)), path


def test_relative_option_files_are_read_from_the_spec_directory(tmp_path: Path) -> None:
    cfg = REPO / "schedulers" / "examples" / "hpc2n-seth-maui.cfg"
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "maui.cfg").write_text(cfg.read_text())
        write(tmp_path / folder, f'traces = ["{KTH200}"]\nschedulers = [{{name = "maui", options = {{config = '
                                 '"maui.cfg"}}]\n')
    a, b = (expand(load_spec(tmp_path / f / "campaign.toml"))[0] for f in ("a", "b"))
    assert a.options["config"] == str(tmp_path / "a" / "maui.cfg") and a.row["options.config"] == "maui.cfg"
    assert a.key == b.key                        # the file's content is hashed, not its place
    out = run_campaign(tmp_path / "a" / "campaign.toml", tmp_path / "out", workers=1, progress=False)
    assert list(out["status"]) == ["ok"], out["error"].tolist()


def test_overrun_trace_option_feeds_maui(tmp_path: Path) -> None:
    """``overrun`` (as ``convert --overrun``): the converted workload keeps each request in
    ``requested_walltime`` and gives Batsim the request + overrun; Maui plans with the request."""
    from batfeed.campaign.inputs import read_workload

    spec = {"traces": [{"path": "KTH-SP2", "max_jobs": 300, "overrun": 600}],
            "schedulers": [{"name": "maui", "options": {"interval": 5}}]}
    out = run_campaign(spec, tmp_path, workers=1, progress=False)
    assert (out["status"] == "ok").all(), out["error"].tolist()
    (conv,) = [p for p in (tmp_path / "inputs").glob("*/workload.json")]
    jobs = read_workload(conv)["jobs"]
    assert all(j["walltime"] == j["requested_walltime"] + 600 for j in jobs if j["walltime"] > 0)
    with pytest.raises(CampaignError, match=r"traces\[0\]\.overrun: must be a number >= 0, got -1"):
        load_spec({**spec, "traces": [{"path": "KTH-SP2", "overrun": -1}]})
