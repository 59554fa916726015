"""Workload inputs Batsim 4.2 refuses (InputError naming the file and the job/profile) and valid inputs
the engine cannot model (UnsupportedInput) (reference: batsim-protocol.md §8, §12).
"""

from __future__ import annotations

import json
import re

import pytest
from test_engine_helpers import SMALL_4, Scripted, delay, execute, job, run, write_workload

from batfeed.engine import load_simulation
from batfeed.errors import InputError, UnsupportedInput


def load(*paths):
    return load_simulation(SMALL_4, list(paths))


def refused(path, *parts):
    """The load raises an InputError (not UnsupportedInput) whose message has the file and ``parts``."""
    with pytest.raises(InputError) as info:
        load(path)
    assert not isinstance(info.value, UnsupportedInput), info.value
    text = str(info.value)
    assert text.startswith(str(path)), text
    for part in parts:
        assert re.search(part, text), (part, text)
    return text


D10 = {"d10": delay(10)}


@pytest.mark.parametrize("res", [4.0, "4", -1, True, None])
def test_res_must_be_a_json_integer(tmp_path, res):
    refused(write_workload(tmp_path, [job(1, 0, res, "d10")], D10), r"w0!1", r"'res'")


@pytest.mark.parametrize("walltime", [0, -2, "100"])
def test_walltime_must_be_minus_1_or_positive(tmp_path, walltime):
    refused(write_workload(tmp_path, [job(1, 0, 1, "d10", walltime=walltime)], D10), r"w0!1", r"walltime")


def test_walltime_minus_1_means_none(tmp_path):
    load(write_workload(tmp_path, [job(1, 0, 1, "d10", walltime=-1)], D10))


@pytest.mark.parametrize("value", [0, -3, "10"])
def test_delay_must_be_positive(tmp_path, value):
    refused(write_workload(tmp_path, [job(1, 0, 1, "d")], {"d": delay(value)}), r"profile 'd'", r"delay")


def test_duplicate_job_ids(tmp_path):
    # 1 and "1" are the same id once converted to a string
    refused(write_workload(tmp_path, [job(1, 0, 1, "d10"), job("1", 5, 1, "d10")], D10), r"duplicate job id 'w0!1'")


@pytest.mark.parametrize("missing", ["nb_res", "jobs", "profiles"])
def test_missing_top_level_member(tmp_path, missing):
    data = {"nb_res": 4, "jobs": [job(1, 0, 1, "d10")], "profiles": D10}
    del data[missing]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    refused(path, missing)


@pytest.mark.parametrize("nb_res", [0, 4.0])
def test_nb_res_must_be_a_positive_integer(tmp_path, nb_res):
    refused(write_workload(tmp_path, [job(1, 0, 1, "d10")], D10, nb_res=nb_res), r"nb_res")


@pytest.mark.parametrize("jid", ["w0_5", "kw0x", "w0!", "x!w0"])
def test_id_containing_the_workload_name(tmp_path, jid):
    refused(write_workload(tmp_path, [job(jid, 0, 1, "d10")], D10), re.escape(jid))


def test_ids_are_rewritten_or_kept(tmp_path):
    # "w0!7" is already of the form wl!name; "w0_5" is fine in w1 (it does not contain "w1").
    w0 = write_workload(tmp_path, [job("w0!7", 0, 1, "d10"), job("abc", 0, 1, "d10")], D10, "a.json")
    w1 = write_workload(tmp_path, [job("w0_5", 0, 1, "d10")], D10, "b.json")
    sched = Scripted({0: [execute("w0!7", "0"), execute("w0!abc", "1"), execute("w1!w0_5", "2")]})
    result, tr = run([w0, w1], sched, export=tmp_path / "out")
    assert sorted(r.split(",")[0] + "@" + r.split(",")[1] for r in result.jobs_csv.read_text().split("\n")[1:-1]) \
        == ["7@w0", "abc@w0", "w0_5@w1"]


def test_legacy_profile_name_is_refused_like_batsim_4_2(tmp_path):
    # msg_par_hg is the pre-3.0 name of parallel_homogeneous: an unknown type for Batsim 4.2 (abort)
    text = refused(write_workload(tmp_path, [job(1, 0, 1, "p")], {"p": {"type": "msg_par_hg", "cpu": 1e9, "com": 0}}),
                   r"profile 'p'", r"msg_par_hg")
    assert "parallel_homogeneous" in text


def test_unknown_profile_type(tmp_path):
    refused(write_workload(tmp_path, [job(1, 0, 1, "p")], {"p": {"type": "sleep", "delay": 3}}), r"'sleep'")


def test_job_with_an_unknown_profile(tmp_path):
    refused(write_workload(tmp_path, [job(1, 0, 1, "nope")], D10), r"w0!1", r"nope")


@pytest.mark.parametrize("profile", [
    {"type": "smpi", "trace": "traces/x.txt"},
    {"type": "usage_trace", "trace": "traces/x.txt"},
    {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e6, "bytes_to_write": 0, "storage": "pfs"},
    {"type": "data_staging", "nb_bytes": 1e6, "from": "a", "to": "b"},
])
def test_valid_batsim_input_the_engine_cannot_model(tmp_path, profile):
    path = write_workload(tmp_path, [job(1, 0, 1, "p"), job(2, 0, 1, "d10")], {"p": profile, **D10})
    with pytest.raises(UnsupportedInput) as info:
        load(path)
    assert str(info.value).startswith(str(path)) and "profile 'p'" in str(info.value)


def test_invalid_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"nb_res": 4,\n "jobs": [,\n}')
    with pytest.raises(InputError, match=re.escape(f"{path}:2:")):
        load(path)


def test_missing_workload_file(tmp_path):
    with pytest.raises(InputError, match=r"not found"):
        load(tmp_path / "nope.json")


def test_an_invalid_unused_profile_is_still_refused(tmp_path):
    refused(write_workload(tmp_path, [job(1, 0, 1, "d10")], {**D10, "unused": delay(0)}), r"unused")


def test_an_id_with_a_separator_but_without_the_workload_name(tmp_path):
    refused(write_workload(tmp_path, [job("a!b", 0, 1, "d10")], D10), r"a!b")
