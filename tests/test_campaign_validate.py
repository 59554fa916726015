"""Validate runs in campaigns (``batfeed.campaign.weekly``): a ``validate`` table makes each run a weekly
Maui validation; the runs give what :func:`batfeed.validate.validate` gives on the same inputs, are
resumable, and the spec checks are one line.

Fixture tests/data/maui/three_weeks.swf (tests/test_validate.py's docstring): event-driven errors
-50, -210 (week 1), -10, 0, 29 (week 2); at Δ = 60 s -50, -190, 45, 55, 94 (test_interval_60_s_grows_the_error).
"""

from __future__ import annotations

import filecmp
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from batfeed.campaign import WALL_CLOCK_COLUMNS, CampaignError, load_spec, run_campaign
from batfeed.campaign.expand import expand
from batfeed.campaign.weekly import DEFAULT_METRICS, summary
from batfeed.validate import validate

DATA = Path(__file__).resolve().parent / "data"
TRACE = DATA / "maui" / "three_weeks.swf"
KTH200 = DATA / "batsim_golden" / "kth200.json"
SPEC = f'[validate]\n[[traces]]\nname = "fx"\npath = "{TRACE}"\n[[schedulers]]\nname = "maui"\n' \
       'options = {interval = [0, 60]}\n'


def write(tmp: Path, text: str, name: str = "campaign.toml") -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def quiet(_line: str) -> None:
    pass


def test_validate_runs_equal_direct_validate_and_resume(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC)
    root = tmp_path / "c"
    lines: list[str] = []
    table = run_campaign(spec, root, workers=2, progress=False, log=lines.append)
    assert "2 runs (2 simulations); 0 runs reused" in lines[0]
    assert list(table["status"]) == ["ok", "ok"] and list(table["options.interval"]) == [0, 60]
    assert list(table.columns[-3:]) == ["jobs_csv", "manifest", "errors_csv"]
    assert table["jobs_csv"].isna().all() and table["manifest"].isna().all()
    assert [m for m in DEFAULT_METRICS if m not in table.columns] == []
    assert "wall.sum_s" not in table.columns                  # wall-clock metrics only when asked
    assert len(list((root / "inputs").iterdir())) == 1         # one conversion, shared by both steps
    for step, (_, row) in zip((0, 60), table.iterrows(), strict=True):
        direct = tmp_path / f"direct{step}"
        results = validate(TRACE, direct, interval=step, plots=False, log=quiet)
        want = {m: summary(results)[m] for m in DEFAULT_METRICS}
        got = {m: row[m] for m in DEFAULT_METRICS}
        assert got == pytest.approx(want, nan_ok=True), step
        run = root / row.errors_csv
        assert run == root / "runs" / row.key / "errors.csv"
        old, new = pd.read_csv(direct / "errors.csv"), pd.read_csv(run)
        pd.testing.assert_frame_equal(old.drop(columns="wall_s"), new.drop(columns="wall_s"))
        for name in ("errors_contention.csv", "weeks/wk001_errors.csv", "weeks/wk002_errors.csv",
                     "weeks/wk002_jobs.csv"):
            assert filecmp.cmp(direct / name, run.parent / name, shallow=False), name
        manifest = (run.parent / "weeks" / "wk002_manifest.json").read_text()
        assert ".tmp-" not in manifest and str(run.parent) in manifest
        record = json.loads((run.parent / "result.json").read_text())
        assert record["metrics"]["wall.sum_s"] == pytest.approx(new["wall_s"].sum(), abs=2e-3)   # the run's weeks
        assert record["metrics"]["wall.max_week_s"] == pytest.approx(new["wall_s"].max(), abs=1e-3)
    # hand numbers (module docstring): e = -50, -210, -10, 0, 29; contention-bound 3, 5, 6
    ev = table.iloc[0]
    assert (ev["weeks"], ev["jobs"], ev["unscored"], ev["room.jobs"], ev["contention.jobs"]) == (2, 5, 0, 2, 3)
    assert ev["error.mean"] == pytest.approx(-48.2) and ev["error.median"] == -10 and ev["error.mean_abs"] == 59.8
    assert ev["contention.mean"] == pytest.approx(-181 / 3) and ev["room.wait_share"] == pytest.approx(60 / 380)
    assert table.iloc[1]["error.mean"] == pytest.approx((-50 - 190 + 45 + 55 + 94) / 5)   # Δ = 60 s
    again = run_campaign(spec, root, workers=2, progress=False, log=lines.append)
    assert "2 runs reused (2 simulations done before); 0 to run" in lines[-2]
    pd.testing.assert_frame_equal(again.drop(columns=list(WALL_CLOCK_COLUMNS)),
                                  table.drop(columns=list(WALL_CLOCK_COLUMNS)))


def test_weeks_plots_metrics_and_keys(tmp_path: Path) -> None:
    text = 'metrics = ["jobs", "error.mean", "wall.max_week_s"]\n' \
        + SPEC.replace("[validate]\n", '[validate]\nweeks = "2"\nplots = true\n')
    spec = write(tmp_path, text)
    table = run_campaign(spec, tmp_path / "c", workers=1, progress=False)
    assert list(table.columns[table.columns.get_loc("wall_s") + 1:]) == ["jobs", "error.mean", "wall.max_week_s",
                                                                        "jobs_csv", "manifest", "errors_csv"]
    assert list(table["jobs"]) == [3, 3] and table["error.mean"][0] == pytest.approx(19 / 3)
    run = tmp_path / "c" / Path(table["errors_csv"][0]).parent
    assert (run / "plots" / "wk002_wait_cdf.png").is_file() and (run / "errors_by_week.png").is_file()
    # a validate run's key differs from a simulation's and from another validate table's
    plain = expand(load_spec(write(tmp_path, SPEC.replace("[validate]\n", ""), "plain.toml")))
    weekly = expand(load_spec(write(tmp_path, SPEC, "weekly.toml")))
    assert {r.key for r in plain}.isdisjoint({r.key for r in weekly})
    assert [r.key for r in weekly] != [r.key for r in expand(load_spec(spec))]


def test_kth_slice_equals_validate_on_the_whole_trace(tmp_path: Path) -> None:
    """KTH-SP2's first 2,000 jobs (weeks 0-2) at Δ = 60 s, week 1 only: the same errors as ``batfeed
    validate`` on the whole trace (a week's window holds only its own and the previous week's jobs)."""
    text = ('[validate]\nweeks = "1"\n[[traces]]\nname = "kth"\npath = "KTH-SP2"\nmax_jobs = 2000\n'
            '[[schedulers]]\nname = "maui"\noptions = {interval = 60}\n')
    table = run_campaign(write(tmp_path, text), tmp_path / "c", workers=1, progress=False)
    results = validate(Path(load_spec(write(tmp_path, text)).traces[0].path), tmp_path / "d", interval=60,
                       weeks="1", plots=False, log=quiet)
    assert results[0].jobs > 300
    got = {m: table[m][0] for m in DEFAULT_METRICS}
    assert got == pytest.approx({m: summary(results)[m] for m in DEFAULT_METRICS}, nan_ok=True)
    run = tmp_path / "c" / Path(table["errors_csv"][0]).parent
    assert filecmp.cmp(tmp_path / "d" / "weeks" / "wk001_errors.csv", run / "weeks" / "wk001_errors.csv",
                       shallow=False)


def test_platform_events_are_the_validation_outages(tmp_path: Path) -> None:
    """As tests/test_validate.py::test_validate_with_outages: machines 0-1 down during [604800, 604850); Maui's
    default DEFERTIME holds the two wide jobs for an hour (mean error 3470 s)."""
    ev = tmp_path / "down.txt"
    ev.write_text('{"timestamp": 604800, "type": "machine_unavailable", "resources": "0-1"}\n'
                  '{"timestamp": 604850, "type": "machine_available", "resources": "0-1"}\n')
    text = 'platforms = [{from = "trace", events = ["down.txt"]}]\n' \
        + SPEC.replace("[validate]\n", '[validate]\nweeks = "1"\n').replace("[0, 60]", "0")
    table = run_campaign(write(tmp_path, text), tmp_path / "c", workers=1, progress=False)
    assert list(table["status"]) == ["ok"] and table["error.mean"][0] == 3470 and table["jobs"][0] == 2


def test_load_divides_submit_times_in_any_campaign(tmp_path: Path) -> None:
    spec = {"traces": [{"path": str(KTH200), "name": "x2", "load": 2}, {"path": str(KTH200), "name": "x1", "load": 1}],
            "schedulers": ["fcfs"], "metrics": ["nb_jobs", "makespan"]}
    runs = expand(load_spec(spec))
    assert runs[0].trace.convert == {"load": 2.0} and runs[1].trace.convert == {}    # load 1: the trace itself
    table = run_campaign(spec, tmp_path, workers=1, progress=False)
    assert list(table["nb_jobs"]) == [200, 200] and table["makespan"][0] < table["makespan"][1]
    src = json.loads(KTH200.read_text())["jobs"]
    record = json.loads((tmp_path / "runs" / table["key"][0] / "result.json").read_text())
    conv = json.loads(Path(record["workload"]).read_text())["jobs"]
    assert [j["subtime"] for j in conv] == [float(j["subtime"]) / 2 for j in src]


@pytest.mark.parametrize(("text", "message"), [
    (SPEC.replace('name = "maui"', 'name = "easy"'),
     r'schedulers\[0\]\.name: validate runs are Maui\'s: the scheduler must be maui, got "easy"'),
    (SPEC.replace("[validate]\n", "[validate]\nweek = \"1\"\n"),
     r"validate\.week: unknown key \(did you mean 'weeks'\?\); known: weeks, plots"),
    (SPEC.replace("[validate]\n", "[validate]\nweeks = \"0-2\"\n"),
     r"validate\.weeks: bad week range '0-2' \(weeks start at 1: week 0 is only a warm-up\)"),
    (SPEC.replace("[validate]\n", "[validate]\nplots = 1\n"), r"validate\.plots: must be true or false, got 1"),
    ('metrics = ["error.mean", "eror.median"]\n' + SPEC,
     r'metrics\[1\]: unknown metric for validate runs "eror.median" \(did you mean \'error.median\'\?\); known: .*'),
    ('metrics = ["wait.mean"]\n' + SPEC, r'metrics\[0\]: unknown metric for validate runs "wait.mean".*'),
    (SPEC.replace("interval = [0, 60]", "interval = 0, maintenance = \"m.txt\""),
     r"schedulers\[0\]\.options\.maintenance: not an option of validate runs \(they take config, interval, poll, "
     r"on_machine_down, mechanics\)"),
    (SPEC.replace("interval = [0, 60]", "interval = -5"),
     r"schedulers\[0\]\.options\.interval: must be a number of seconds >= 0 or null, got -5"),
    ('platforms = [{nb_machines = 8}]\n' + SPEC,
     r'platforms\[0\]: validate runs use the trace\'s own platform \("trace"\)'),
    ('users = ["a60"]\n' + SPEC, r'users\[0\]\.model: validate runs replay the trace: no user model, got "a60"'),
    (SPEC.replace('name = "fx"', 'name = "fx"\nshake = 60'),
     r"traces\[0\]\.shake: no input shaking in validate runs .*"),
    ("tau = 60\n" + SPEC, r"tau: does not apply to validate runs \(their metrics are wait errors\)"),
    ("validate = 1\n" + SPEC.replace("[validate]\n", ""), r"validate: must be a table \(mapping\), got 1"),
    (SPEC.replace(f'"{TRACE}"', '"${BATFEED_NOPE}/x.swf"'),
     r"traces\[0\]\.path: no such file: .*/\$\{BATFEED_NOPE\}/x\.swf \(environment variable BATFEED_NOPE not set\)"),
    (SPEC.replace('name = "fx"', 'name = "fx"\nload = 0'), r"traces\[0\]\.load: must be a number > 0, got 0"),
])
def test_bad_validate_spec_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    spec = write(tmp_path, text)
    with pytest.raises(CampaignError) as err:
        run_campaign(spec, tmp_path / "out", dry_run=True)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{spec}: "), line
    assert re.fullmatch(message, line.removeprefix(f"{spec}: ")), line
    assert not (tmp_path / "out").exists()
