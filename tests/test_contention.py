"""batfeed/contention.py: did the recorded schedule have room for a job during its whole wait?"""

from __future__ import annotations

import numpy as np

from batfeed.contention import recorded_room, room_by_job, summarise


def room(jobs, nb_res):
    sub, wait, run, res = (np.array([j[i] for j in jobs], dtype=float) for i in range(4))
    return recorded_room(sub, wait, run, res, nb_res).tolist()


def test_room_by_hand():
    # 4 resources.  A: 3 resources on [0, 100).  B waits 0..100 for 2 resources: only 1 free -> no room.
    # C (1 resource) waits 10..50 although 1 is free all along -> room.  D (1) waits 100..150: after A
    # ends at 100 B takes 2 of 4 and C ended at 60, so 2 are free -> room.  E waits 0 -> never "room".
    jobs = [(0, 0, 100, 3), (0, 100, 50, 2), (10, 40, 10, 1), (100, 50, 5, 1), (60, 0, 5, 1)]
    assert room(jobs, 4) == [False, False, True, True, False]
    # E on [20, 25) takes C's free resource for a while -> C had no room during its whole wait
    jobs[4] = (20, 0, 5, 1)
    assert room(jobs, 4) == [False, False, False, True, False]


def test_end_and_start_at_the_same_time_free_first():
    # A on [0, 10) uses both resources; C waits [0, 10) then runs [10, 30) on 1.  B, submitted at 10 and
    # started at 20: A's end at 10 frees the machine before C takes one, so 1 is free during B's wait:
    # room for a B of 1, not for a B of 2.  C waited while A held everything: no room.
    assert room([(0, 0, 10, 2), (10, 10, 5, 2), (0, 10, 20, 1)], 2) == [False, False, False]
    assert room([(0, 0, 10, 2), (10, 10, 5, 1), (0, 10, 20, 1)], 2) == [False, True, False]


def test_wait_before_any_start_and_unknown_waits():
    # nothing runs before 500: a job waiting on [0, 500) had the whole machine
    assert room([(0, 500, 10, 4), (0, 500, 10, 4)], 8) == [True, True]
    assert room([(0, 500, 10, 4), (0, 500, 10, 4)], 4) == [True, True]   # both start at 500: room before
    assert room([(0, float("nan"), 10, 4), (0, 5, 10, 4)], 4) == [False, True]
    assert room([(0, 5, 10, 9)], 4) == [False]                           # never fits


def test_room_by_job_uses_delay_profiles():
    jobs = [{"id": "w!1", "subtime": 0, "res": 2, "profile": "a", "swf_wait": 0},
            {"id": "w!2", "subtime": 0, "res": 2, "profile": "a", "swf_wait": 100},
            {"id": "w!3", "subtime": 0, "res": 1, "profile": "p", "swf_wait": 100}]
    profiles = {"a": {"type": "delay", "delay": 100}, "p": {"type": "parallel_homogeneous"}}
    got = room_by_job(jobs, profiles, 3, lambda j: j["swf_wait"])
    assert got == {"w!1": False, "w!2": False}            # w!3 has no run time: left out
    assert room_by_job(jobs, profiles, 4, lambda j: j["swf_wait"])["w!2"] is True
    assert room_by_job(jobs, profiles, 0, lambda j: j["swf_wait"]) == {}


def test_summarise():
    assert summarise(np.array([-10.0, 0.0, 40.0])) == (10.0, 0.0, float(np.std([-10, 0, 40])))
    assert all(np.isnan(x) for x in summarise(np.zeros(0)))
