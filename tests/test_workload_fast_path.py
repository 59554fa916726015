"""The static jobs of a workload are checked inline for the usual job (``workload._static_jobs``) and by
``parse_job`` for any other: both must accept the same jobs, build the same ``Job`` and raise the same error."""

from __future__ import annotations

import copy
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from batfeed.engine import workload as W

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
    assert repr(outcome(lambda: W._static_jobs(copy.deepcopy(raws), "w0", PROFILES, "x"))) == \
        repr(outcome(lambda: one_by_one(copy.deepcopy(raws))))
