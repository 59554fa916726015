"""The static jobs of a workload are read as packed records (``workload_file._pack``) and checked inline for the
usual job (``workload_file._static_jobs``), and by ``parse_job`` for any other: both must accept the same jobs,
build the same ``Job`` (the same ``json_dict``) and raise the same error."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batfeed.engine import workload as W
from batfeed.engine import workload_file as F

PROFILES = {"d1": W.parse_profile("d1", {"type": "delay", "delay": 1.5}, "x"),
            "p2": W.parse_profile("p2", {"type": "parallel", "cpu": [1, 2], "com": [0, 1, 1, 0]}, "x"),
            "c": W.parse_profile("c", {"type": "composed", "seq": ["d1"]}, "x")}
ODD = st.sampled_from([True, None, "3", 10**400, -0.0, math.nan, math.inf, [], {}, 0.1234567, 2.0])
IDS = st.one_of(st.integers(0, 12), st.sampled_from(["a", "b", "w0!3", "x!y", "w0", "w0!", "1!", "w01"]), ODD)
JOB = st.fixed_dictionaries(
    {},
    optional={"id": IDS,
              "subtime": st.one_of(st.sampled_from([0, 3, 7.0, 2.5, 1e-7, 0.1234567, 12345678.25]), ODD),
              "res": st.one_of(st.integers(0, 3), ODD),
              "walltime": st.one_of(st.sampled_from([-1, -1.0, 100.0, 7, 3.1234567, 0]), ODD),
              "profile": st.sampled_from(["d1", "d1", "p2", "c", "zz", 3]),
              "extra": st.one_of(ODD, st.just({"a": 0.1234567}), st.just([1.23456789]))})


def outcome(make):
    try:
        return [(j.id, j.workload, j.name, j.subtime, j.requested_resources, j.walltime, j.prof.name,
                 repr(j.json_dict), j.submit_time, j.requested_time) for j in make()]
    except Exception as err:                # noqa: BLE001 - the error is the outcome compared
        return type(err).__name__, str(err)


def one_by_one(raws):
    jobs, seen = [], set()
    for raw in raws:
        job = W.parse_job(raw, "w0", PROFILES, "x", copy=False, check_names=False)
        if job.id in seen:
            raise W.InputError(f"duplicate job id '{job.id}'", "x")
        seen.add(job.id)
        jobs.append(job)
    return jobs


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(JOB, JOB, JOB, st.sampled_from([[], "s", 3])), min_size=1, max_size=3))
def test_inline_checks_agree_with_parse_job(raws):
    text = json.dumps(raws)
    packed = json.loads(text, object_hook=F._pack)
    assert repr(outcome(lambda: F._static_jobs(packed, "w0", PROFILES, "x"))) == \
        repr(outcome(lambda: one_by_one(json.loads(text))))


DOC = """{"nb_res": 4, "jobs": [
  {"id": 1, "subtime": 0, "res": 1, "walltime": 60, "profile": "d", "user": "u", "id": 7},
  {"id": "b", "subtime": 1.5, "res": 2, "profile": "d", "meta": {"id": 1, "subtime": 2}},
  {"subtime": 3, "id": 9, "res": 1, "walltime": -1.0, "profile": "d", "x": null, "y": true}],
 "profiles": {"d": {"type": "delay", "delay": 5, "tag": {"id": 1, "subtime": 0}}},
 "id": 3, "subtime": 0}"""


def test_a_loaded_workload_is_what_plain_json_gives(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(DOC)
    wl = F.load_workload(path, "w0")
    plain = json.loads(DOC)
    assert [j.id for j in wl.jobs] == ["w0!7", "w0!b", "w0!9"]          # a repeated key: its last value
    assert [j.name for j in wl.jobs] == ["7", "b", "9"]
    packed = [type(j._js) is W.Packed for j in wl.jobs]
    assert packed == [True, False, True]                                # a nested object stays a dict
    for job, raw in zip(wl.jobs, plain["jobs"], strict=True):
        assert json.dumps(job.json_dict) == json.dumps({**raw, "id": job.id})   # same keys, order, values
    assert type(wl.jobs[0]._js) is dict                                 # unpacked once, then kept
    assert wl.profiles["d"].json == plain["profiles"]["d"]              # profiles are plain dicts throughout
    assert type(wl.profiles["d"].json["tag"]) is dict
    wl.jobs[2].json_dict = {"id": "w0!9"}
    assert wl.jobs[2].json_dict == {"id": "w0!9"}
