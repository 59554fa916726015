"""Maui's poll-by-poll fairshare and queue time (schedulers/maui_fairshare.py, maui_core.py; issue 29), by hand."""

from __future__ import annotations

import pytest
from batfeed.schedulers.maui import Maui
from batfeed.schedulers.maui_fairshare import PollFairshare
from batsim.batsim import Job
from test_maui import cfg_file


def test_poll_fairshare_accrual_windows_and_decay():
    # FSINTERVAL 100, FSDEPTH 3, FSDECAY 0.5, polls every 30 s from 0: window 1 is charged from the
    # first poll at or after 100 (120), window 2 from 210.
    fs = PollFairshare(100, 3, 0.5, True, 30)
    fs.t0 = 0.0
    assert (fs.boundary(1), fs.boundary(2)) == (120, 210) and not fs.any_usage()
    fs.start(["a"], 2, 30)              # a: 2 machines from poll 30, ends at 95 (completion poll 120)
    fs.start(["b"], 1, 60)              # b: 1 machine from poll 60, ends at 250 (completion poll 270)
    fs.advance(90)
    assert (fs.usage["a"][0], fs.usage["b"][0], fs.total[0]) == (120, 30, 150)
    fs.stop_at(["a"], 2, 95, 90)        # charged up to the poll before its completion poll: 2 * (90 - 30)
    fs.advance(120)                     # the pass at 120 still sees window 0: a 120, b 60 of 180
    assert fs.usage["a"] == [120, 0, 0] and fs.total == [180, 0, 0]
    assert fs.usage_pct("a") == pytest.approx(100 * 120 / 180)
    fs.advance(150)                     # rolled after 120: window 1 holds b's (120, 150]
    assert fs.usage["a"] == [0, 120, 0] and fs.usage["b"] == [30, 60, 0] and fs.total == [30, 180, 0]
    assert fs.usage_pct("a") == pytest.approx(100 * 0.5 * 120 / (30 + 0.5 * 180))     # 50 %
    fs.stop_at(["b"], 1, 250, 240)      # rolled at 210; b charged up to 240: (210, 240] in window 0
    assert fs.usage["b"] == [30, 90, 60] and fs.usage["a"] == [0, 0, 120] and fs.total == [30, 90, 180]
    assert fs.usage_pct("a") == pytest.approx(100 * 0.25 * 120 / (30 + 0.5 * 90 + 0.25 * 180))   # 25 %
    assert fs.usage_pct("b") == pytest.approx(100 * (30 + 45 + 15) / 120)                      # 75 %


def test_no_fairshare_component_before_any_usage(tmp_path):
    # MJobGetStartPriority adds the fairshare component only once the total usage is > 0: a job of a user
    # with FSTARGET 50 ranks by its queue time alone (60 s * QUEUETIMEWEIGHT 60 / 60 = 60), not 60 + 100*50
    text = "FSPOLICY DEDICATEDPS\nFSUSERWEIGHT 100\nQUEUETIMEWEIGHT 60\nUSERCFG[DEFAULT] FSTARGET=50\n"
    s = Maui({"config": cfg_file(tmp_path, text), "interval": 60})
    s.t0 = 0.0
    s.fs.t0 = 0.0
    job = Job("w0!1", 60, 600, 1, "d", {"user": "u"})
    s.info = {job.id: s._job_info(job)}
    e = s.wq.push(job, 60)
    assert s.priority(e, 120) == 60
    s.fs.start([("user", "v")], 1, 60)       # another user has run 1 machine for 60 s: u's usage is 0 %
    s.fs.advance(120)
    assert s.priority(e, 120) == 60 + 100 * 50


def test_a_job_submitted_right_at_a_poll_ranks_by_its_whole_wait(tmp_path):
    # QUEUETIMEWEIGHT 60: priority = queue time in s.  At the poll 120 (polls every 60 s from 0), a job
    # seen at 60 is ranked by its EffQueueDuration set then (MPolicy.c MQueueSelectJobs): 30 s for the
    # one submitted at 30; for the one submitted at 60 that is 0, which MJobGetStartPriority ignores (it
    # reads EffQueueDuration only if > 0): its whole wait, 60 s.  One submitted at 61 was never seen: 59 s.
    s = Maui({"config": cfg_file(tmp_path, "QUEUETIMEWEIGHT 60\n"), "interval": 60})
    s.t0 = 0.0
    jobs = [Job(f"w0!{r}", r, 600, 1, "d", {}) for r in (30, 60, 61)]
    s.info = {j.id: s._job_info(j) for j in jobs}
    got = [s.priority(s.wq.push(j, j.submit_time), 120) for j in jobs]
    assert got == [30, 60, 59]


def test_expansion_factor_uses_the_minimum_walltime(tmp_path):
    # MPriority.c MJobGetStartPriority: XFactor = (queue time + walltime) / max(XFMINWCLIMIT, walltime),
    # XFMINWCLIMIT 120 s by default.  Walltime 60 s, 120 s of queue time (event-driven, no lag):
    # 60 * (120 + 60) / 120 + 2 min = 92; the counts model's 1 + 120/60 gives 60 * 3 + 2 = 182.
    text = "XFACTORWEIGHT 60\n"
    for mechanics, want in (("nodes", 92), ("counts", 182)):
        s = Maui({"config": cfg_file(tmp_path, text), "mechanics": mechanics})
        job = Job("w0!1", 0, 60, 1, "d", {})
        s.info = {job.id: s._job_info(job)}
        assert s.priority(s.wq.push(job, 0), 120) == want, mechanics
    s = Maui({"config": cfg_file(tmp_path, text + "XFMINWCLIMIT 0:30\n", "b.cfg")})
    job = Job("w0!1", 0, 60, 1, "d", {})
    s.info = {job.id: s._job_info(job)}
    assert s.priority(s.wq.push(job, 0), 120) == 60 * 3 + 2
