"""batfeed.api.simulate_jobs: in-memory runs equal file-based runs, cheap repeated calls, errors."""

from __future__ import annotations

import doctest
import json
import re
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest
from batfeed.adapters.swf import convert_swf

import batfeed.api
from batfeed.api import simulate_jobs
from batfeed.errors import InputError
from batfeed.runner import run_simulation

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.fixture(scope="module")
def kth(tmp_path_factory):
    out = tmp_path_factory.mktemp("kth_api")
    conv = convert_swf(KTH, out, max_jobs=600, name="kth600")
    data = json.loads(conv.workload_path.read_text())
    # every field of the converted jobs (user, swf_wait for the session models…) rides along
    rows = [{**{k: v for k, v in j.items() if k != "profile"}, "runtime": data["profiles"][j["profile"]]["delay"]}
            for j in data["jobs"]]
    return conv, pd.DataFrame(rows)


def test_docstring_example():
    assert doctest.testmod(batfeed.api).failed == 0


@pytest.mark.parametrize("scheduler,options", [("fcfs", {}), ("easy", {"policy": "SQF"}), ("conservative", {}),
                                               ("maui", {"interval": 60})])
def test_in_memory_run_equals_the_file_run(tmp_path, kth, scheduler, options):
    conv, frame = kth
    ref = run_simulation(conv.platform_path, [conv.workload_path], scheduler=scheduler, options=options,
                         export=tmp_path / "files")
    out = simulate_jobs(frame, conv.nb_res, scheduler, options, export=tmp_path / "memory")
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert (tmp_path / f"memory{suffix}").read_bytes() == (tmp_path / f"files{suffix}").read_bytes()
    info = out.attrs["batfeed"]
    assert info["messages"] == ref.messages and info["counts"] == ref.counts
    # the frame: input order, the same numbers as the file
    rows = pd.read_csv(tmp_path / "files_jobs.csv", dtype={"job_id": str}).set_index("job_id")
    assert out["job_id"].tolist() == [str(i) for i in frame["id"]]
    got = out.set_index("job_id").loc[rows.index]
    assert (got["starting_time"].round(6) == rows["starting_time"]).all()
    assert (got["final_state"] == rows["final_state"]).all()
    assert info["scheduler"] == scheduler and info["options"] == options and info["nb_machines"] == conv.nb_res


def test_user_models_and_events_in_memory(tmp_path, kth):
    conv, frame = kth
    run_simulation(conv.platform_path, [conv.workload_path], scheduler="easy", users="a60",
                         export=tmp_path / "files")
    out = simulate_jobs(frame, conv.nb_res, "easy", users="a60", export=tmp_path / "memory")
    assert (tmp_path / "memory_jobs.csv").read_bytes() == (tmp_path / "files_jobs.csv").read_bytes()
    assert out.attrs["batfeed"]["users"] == "a60"
    events = [{"timestamp": 50_000, "type": "machine_unavailable", "resources": "0-49"},
              {"timestamp": 90_000, "type": "machine_available", "resources": "0-49"}]
    ev_file = tmp_path / "ev.txt"
    ev_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    run_simulation(conv.platform_path, [conv.workload_path], scheduler="easy", events=[ev_file],
                   export=tmp_path / "ev_files")
    simulate_jobs(frame, conv.nb_res, "easy", events=events, export=tmp_path / "ev_memory")
    assert (tmp_path / "ev_memory_jobs.csv").read_bytes() == (tmp_path / "ev_files_jobs.csv").read_bytes()


def test_thousands_of_calls_are_deterministic_and_do_not_accumulate():
    jobs = {"subtime": [0, 10, 20, 25], "res": [3, 4, 1, 2], "runtime": [100, 50, 30, 7],
            "walltime": [100, 60, 40, 10]}
    first = simulate_jobs(jobs, 4, "easy")
    tracemalloc.start()
    for _ in range(200):
        simulate_jobs(jobs, 4, "easy")
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(1000):
        out = simulate_jobs(jobs, 4, "easy")
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert out.equals(first)
    # nothing kept from one call to the next, and no reference cycle left for the cyclic GC (bytes)
    assert grown < 200_000, grown


def test_records_and_swf_like_column_names():
    records = [{"job_id": "a", "submit": 0, "procs": 2, "run": 10}, {"job_id": "b", "submit": 1, "procs": 2,
                                                                    "run": 5, "req_time": 20}]
    out = simulate_jobs(records, 2, "fcfs")
    assert out["job_id"].tolist() == ["a", "b"]
    assert out["starting_time"].tolist() == [0.0, 10.0] and out["requested_time"].tolist() == [-1.0, 20.0]


def test_bad_jobs_are_one_line_errors():
    with pytest.raises(InputError, match="jobs need a 'runtime' column"):
        simulate_jobs({"subtime": [0], "res": [1]}, 2)
    with pytest.raises(InputError, match="job 2: the run time must be a number > 0"):
        simulate_jobs({"subtime": [0, 1], "res": [1, 1], "runtime": [5, -1]}, 2)
    with pytest.raises(InputError, match="job 1: 'res' must be an integer"):
        simulate_jobs({"subtime": [0], "res": [1.5], "runtime": [5]}, 2)
    with pytest.raises(InputError, match="job x: duplicate job id"):
        simulate_jobs({"id": ["x", "x"], "subtime": [0, 1], "res": [1, 1], "runtime": [5, 5]}, 2)
    out = simulate_jobs({"subtime": [0], "res": [3], "runtime": [5]}, 2)      # too large: rejected
    assert out["final_state"].tolist() == ["REJECTED"] and out["starting_time"].isna().all()


def test_readme_example_runs_and_prints_what_readme_says(capsys):
    """README's "Python API" block, executed, prints exactly the ```text block that follows it."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text[text.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    expected = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == expected


def test_readme_files_example_runs_and_prints_what_readme_says(capsys, tmp_path, monkeypatch):
    """README's second Python block (convert, simulate, metrics, report, campaign), executed in a
    directory holding the repository's data/, prints exactly the ```text block that follows it."""
    repo = Path(__file__).resolve().parent.parent
    text = (repo / "README.md").read_text()
    section = text[text.index("From files, as the commands do"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    expected = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    (tmp_path / "data").symlink_to(repo / "data")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == expected
    assert (tmp_path / "runs/api/report/index.html").is_file()
    assert (tmp_path / "runs/api/easy_SQF_manifest.json").is_file()
    assert (tmp_path / "runs/api/campaign/results.parquet").is_file()

