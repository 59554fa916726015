"""Outputs stay parseable (issue 13, item 5).

Batsim 4.2.1 writes ``job_id``, ``workload_name`` and ``profile`` unquoted into ``_jobs.csv``
(src/export.cpp, ``JobsTracer::write_job``) and accepts any job name without ``!`` (src/jobs.cpp), so
a comma, a double quote or a line break in one of them gives a file no CSV reader parses.  batfeed
refuses such names when it loads the workload (or when a scheduler registers them) with a one-line
error naming the file and the job; every other name is written like Batsim does and reads back
unchanged with ``batfeed metrics`` and pandas (which evalys uses).  Metadata with a double quote is
refused by Batsim itself (protocol.cpp) and by the engine alike.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from cli_helpers import error_line, run_cli


def workload(tmp: Path, ids: list, profile: str = "d5", name: str = "w.json") -> Path:
    data = {"nb_res": 4, "jobs": [{"id": i, "subtime": k, "res": 1, "walltime": 100, "profile": profile}
                                  for k, i in enumerate(ids)],
            "profiles": {profile: {"type": "delay", "delay": 5}}}
    path = tmp / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            json.dump(data, fh)
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


BAD = [("a,b", ","), ('say "hi"', '"'), ("two\nlines", "\n"), ("cr\rlf", "\r")]


@pytest.mark.parametrize("jid,char", BAD, ids=["comma", "quote", "newline", "cr"])
def test_unparseable_job_ids_are_refused_at_load(tmp_path, jid, char):
    platform = write_homogeneous_platform(tmp_path / "p.xml", 4)
    wl = workload(tmp_path, [1, jid])
    proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", "fcfs", "-o", str(tmp_path / "o")], tmp_path)
    error_line(proc, "simulate", re.escape(f"{wl}: job id {json.dumps(jid)} contains {json.dumps(char)}: Batsim 4.2 "
                                           "writes it unquoted into _jobs.csv, which then cannot be parsed; rename it"))
    assert not list(tmp_path.glob("o_*"))


def test_unparseable_profile_names_are_refused_at_load(tmp_path):
    platform = write_homogeneous_platform(tmp_path / "p.xml", 4)
    wl = workload(tmp_path, [1, 2], profile="delay,5", name="w.json.gz")
    proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", "easy", "-o", str(tmp_path / "o")], tmp_path)
    error_line(proc, "simulate", re.escape(f"{wl}: job \"w0!1\": profile name \"delay,5\" contains \",\": Batsim 4.2 "
                                           "writes it unquoted into _jobs.csv, which then cannot be parsed; rename it"))


REGISTER_BAD = '''
from batsim.batsim import BatsimScheduler


class RegisterBad(BatsimScheduler):
    def onSimulationBegins(self):
        self.bs.register_profiles("dyn", {"p": {"type": "delay", "delay": 1}})
        self.bs.register_job("dyn!a,b", 1, 10, "p")
        self.bs.notify_registration_finished()
'''


def test_unparseable_dynamic_job_ids_are_refused_at_registration(tmp_path):
    platform = write_homogeneous_platform(tmp_path / "p.xml", 4)
    sched = tmp_path / "registerBad.py"
    sched.write_text(REGISTER_BAD)
    proc = run_cli(["simulate", str(platform), "--enable-dynamic-jobs", "--scheduler", str(sched),
                    "-o", str(tmp_path / "o")], tmp_path)
    error_line(proc, "simulate", re.escape("REGISTER_JOB dyn!a,b: job id \"a,b\" contains \",\": Batsim 4.2 writes it "
                                           "unquoted into _jobs.csv, which then cannot be parsed; rename it"))


ODD = ["plain", "with space", " padded ", "semi;colon", "tab\there", "quote'single", "ünï", "#hash", "1e3", "007"]


def test_other_names_round_trip_through_metrics_and_pandas(tmp_path):
    platform = write_homogeneous_platform(tmp_path / "p.xml", 4)
    wl = workload(tmp_path, ODD, profile="p;1 'x'")
    proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", "easy", "-o", str(tmp_path / "o")], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    jobs = tmp_path / "o_jobs.csv"
    frame = pd.read_csv(jobs, dtype=str, keep_default_na=False)
    assert sorted(frame["job_id"]) == sorted(ODD) and set(frame["profile"]) == {"p;1 'x'"}
    assert (frame["final_state"] == "COMPLETED_SUCCESSFULLY").all()
    metrics = run_cli(["metrics", str(jobs), "--json"], tmp_path)
    assert metrics.returncode == 0 and metrics.stderr == "", metrics.stderr
    m = json.loads(metrics.stdout)
    assert (m["nb_jobs"], m["nb_success"], m["nb_resources"], m["nb_resources_source"]) == (len(ODD), len(ODD), 4,
                                                                                          "schedule")
