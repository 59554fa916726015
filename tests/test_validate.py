"""``batfeed validate`` (batfeed/validate.py): weekly windows with warm-up, per-job errors, plots.

Fixture tests/data/maui/three_weeks.swf (4 processors, week = 604,800 s):

====  ==========  ========  ====  ===  ======================================
job   submit      rec wait  run   q    event-driven simulation
====  ==========  ========  ====  ===  ======================================
1     0           0         100   4    week 0: only a warm-up
2     604800      50        100   4    [604800, 604900): wait 0, error -50
3     604810      300       100   4    after 2: wait 90, error -210
4     1209605     10        50    2    at once: wait 0, error -10
5     1209605     0         50    2    at once: wait 0, error 0
6     1209606     20        10    4    after 4 and 5 (1209655): wait 49, error +29
====  ==========  ========  ====  ===  ======================================

Week 1: errors (-50, -210): mean -130, median -130, std 80.
Week 2: errors (-10, 0, 29): mean 19/3, median 0, std sqrt(((-10-19/3)² + (19/3)² + (29-19/3)²) / 3).

"Room" (the recorded schedule had the job's request free during its whole recorded wait): job 2
waited [604800, 604850) on an idle machine -> room; job 3 waited while 2 held all 4 -> no room; job 4
waited [1209605, 1209615) beside 5 (2 of 4) -> room; 5 did not wait; 6 waited while 4 and 5 ran -> no.
Contention-bound errors: week 1 (-210), week 2 (0, 29): mean 14.5.
"""

from __future__ import annotations

import csv
import json
import math
import struct
from pathlib import Path

import matplotlib.image
import pytest

from batfeed.cli import main
from batfeed.validate import WEEK, parse_weeks, validate, window_events

DATA = Path(__file__).resolve().parent / "data" / "maui"
TRACE = DATA / "three_weeks.swf"
STD2 = math.sqrt(((-10 - 19 / 3) ** 2 + (19 / 3) ** 2 + (29 - 19 / 3) ** 2) / 3)


def read_errors(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_event_driven_errors_by_hand(tmp_path):
    res = validate(TRACE, tmp_path, log=lambda s: None)
    assert [(r.week, r.jobs) for r in res] == [(1, 2), (2, 3)]
    assert (res[0].mean, res[0].median, res[0].std) == (-130, -130, 80)
    assert res[1].mean == pytest.approx(19 / 3) and res[1].median == 0 and res[1].std == pytest.approx(STD2)
    rows = read_errors(tmp_path / "errors.csv")
    assert list(rows[0]) == ["week", "jobs", "mean_error_s", "median_error_s", "std_error_s", "wall_s"]
    assert [(r["week"], r["jobs"], r["mean_error_s"], r["median_error_s"], r["std_error_s"]) for r in rows] == [
        ("1", "2", "-130.0", "-130.0", "80.0"), ("2", "3", f"{19 / 3:.1f}", "0.0", f"{STD2:.1f}")]
    assert all(float(r["wall_s"]) >= 0 for r in rows)      # wall-clock seconds (not checked further)
    # per-job values; submit times relative to the target week's start
    with open(tmp_path / "weeks" / "wk002_errors.csv", newline="") as f:
        assert [tuple(r.values()) for r in csv.DictReader(f)] == [
            ("4", "5", "10", "0", "-10", "1"), ("5", "5", "0", "0", "0", "0"), ("6", "6", "20", "49", "29", "0")]
    with open(tmp_path / "weeks" / "wk001_errors.csv", newline="") as f:
        assert [(r["job_id"], r["room"]) for r in csv.DictReader(f)] == [("2", "1"), ("3", "0")]
    assert [r.contention for r in res] == [(1, -210, -210, 0), (2, 14.5, 14.5, 14.5)]
    assert read_errors(tmp_path / "errors_contention.csv") == [
        {"week": "1", "jobs": "2", "room_jobs": "1", "room_wait_share": f"{50 / 350:.3f}", "contention_jobs": "1",
         "mean_error_s": "-210.0", "median_error_s": "-210.0", "std_error_s": "0.0"},
        {"week": "2", "jobs": "3", "room_jobs": "1", "room_wait_share": f"{10 / 30:.3f}", "contention_jobs": "2",
         "mean_error_s": "14.5", "median_error_s": "14.5", "std_error_s": "14.5"}]
    # the week-2 window holds weeks 1 and 2 (jobs 2-6), shifted so that week 1 starts at 0
    wl = json.loads((tmp_path / "weeks" / "wk002.json").read_text())
    assert [(j["id"], j["subtime"]) for j in wl["jobs"]] == [(2, 0), (3, 10), (4, 604805), (5, 604805),
                                                            (6, 604806)]


def test_interval_60_s_grows_the_error(tmp_path):
    # Δ = 60 s, grid = the window's first submission (0) + 60k.  Week 1: 2 at 604800 (on the grid):
    # wait 0; 3 waits for 2's end (604900) and the next grid point 604920: wait 110, error -190.
    # Week 2 (604805 -> grid 604860): 4 and 5 wait 55 (errors 45, 55); 6 waits for their end at
    # 604910 and the grid point 604920: wait 114, error 94.
    res = validate(TRACE, tmp_path, interval=60, plots=False, log=lambda s: None)
    assert (res[0].mean, res[0].median) == (-120, -120)
    assert res[1].mean == pytest.approx((45 + 55 + 94) / 3) and res[1].median == 55


def test_cli_writes_errors_and_plots(tmp_path, capsys):
    out = tmp_path / "v"
    assert main(["validate", str(TRACE), "--out", str(out), "--weeks", "2", "--interval", "5"]) == 0
    assert "wrote" in capsys.readouterr().out
    rows = read_errors(out / "errors.csv")
    assert [r["week"] for r in rows] == ["2"]
    for name in ("plots/wk002_wait_cdf.png", "plots/wk002_utilisation.png", "wait_cdf_all.png",
                 "errors_by_week.png"):
        assert png_size(out / name) == (800, 450), name      # 8 x 4.5 in at 100 dpi (matplotlib, Agg)
        pixels = matplotlib.image.imread(out / name)
        assert pixels.std() > 0.05, f"{name} looks blank"
    assert not (out / "plots" / "wk001_wait_cdf.png").exists()


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["validate", str(TRACE), "--out", str(tmp_path), "--weeks", "x"]) == 1
    assert main(["validate", str(TRACE), "--out", str(tmp_path), "--weeks", "5"]) == 1
    assert main(["validate", str(tmp_path / "none.swf"), "--out", str(tmp_path)]) == 1
    assert main(["validate", str(TRACE), "--out", str(tmp_path), "--config", str(DATA / "bad.cfg")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4
    assert "bad week range 'x'" in err[0] and "no week to validate: the trace spans weeks 0-2" in err[1]
    assert "none.swf: no such file" in err[2] and "bad.cfg:3: FSDECAY" in err[3]


def test_workload_json_with_trace_wait(tmp_path):
    # A workload from another adapter (trace_wait); the platform is generated from nb_res.
    jobs = [{"id": 1, "subtime": 0, "res": 1, "profile": "d", "walltime": 100, "trace_wait": 7},
            {"id": 2, "subtime": WEEK + 1, "res": 1, "profile": "d", "walltime": 100, "trace_wait": 30},
            {"id": 3, "subtime": WEEK + 2, "res": 1, "profile": "d", "walltime": 100, "trace_wait": -1}]
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 2, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 10}}}))
    res = validate(wl, tmp_path / "v", plots=False, log=lambda s: None)
    # job 2: simulated wait 0, recorded 30 -> error -30; job 3 has no recorded wait (not scored)
    assert [(r.week, r.jobs, r.mean, r.unscored) for r in res] == [(1, 1, -30, 1)]


def test_parse_weeks():
    assert parse_weeks(None, 3) == [1, 2, 3]
    assert parse_weeks("1-2,5,9", 6) == [1, 2, 5]


def test_window_events_shift_and_clip():
    evs = [{"timestamp": 50, "type": "machine_unavailable", "resources": "0-1"},     # before: 0-1 down at a
           {"timestamp": 120, "type": "machine_available", "resources": "1"},
           {"timestamp": 150, "type": "machine_unavailable", "resources": "3"},
           {"timestamp": 400, "type": "machine_available", "resources": "0 3"}]     # after b
    assert window_events(evs, 100, 200) == [
        {"timestamp": 0.0, "type": "machine_unavailable", "resources": "0-1"},
        {"timestamp": 20.0, "type": "machine_available", "resources": "1"},
        {"timestamp": 50.0, "type": "machine_unavailable", "resources": "3"},
        {"timestamp": 100.0, "type": "machine_available", "resources": "0 3"}]       # all back at b - a
    assert window_events(evs, 500, 600) == []


def test_validate_with_outages(tmp_path):
    # Machines 0-1 down during [604800, 604850).  With DEFERTIME 0 (no defer hold), week 1's job 2 (4
    # processors) cannot start before 604850 -> wait 50 (error 0); 3 then waits until 604950 -> wait 140
    # (error -160).  With Maui's default DEFERTIME (1 h; MPolicy.c MQueueSelectAllJobs defers a job wider
    # than the machines up, schedulers/maui_defer.py), 2 and 3 are held for an hour: 2 starts at its
    # submission + 3600 s (wait 3600, error 3550) and 3, as wide, after 2 ends (wait 3690, error 3390).
    ev = tmp_path / "down.txt"
    ev.write_text('{"timestamp": 604800, "type": "machine_unavailable", "resources": "0-1"}\n'
                  '{"timestamp": 604850, "type": "machine_available", "resources": "0-1"}\n')
    res = validate(TRACE, tmp_path / "v", weeks="1", events=str(ev), plots=False, log=lambda s: None)
    assert (res[0].mean, res[0].median) == (3470, 3470)
    cfg = tmp_path / "maui.cfg"
    cfg.write_text("DEFERTIME 0\n")
    res = validate(TRACE, tmp_path / "v0", config=str(cfg), weeks="1", events=str(ev), plots=False,
                   log=lambda s: None)
    assert (res[0].mean, res[0].median) == (-80, -80)


def load_experiment():
    import batfeed.reproduce.maui as mod

    return mod


def test_experiment_step_effect_table(tmp_path, capsys):
    """batfeed reproduce maui (batfeed/reproduce/maui.py) on the fixture: d = wait at 60 s - wait event-driven, per job.

    Event-driven waits (module docstring): 2: 0, 3: 90, 4: 0, 5: 0, 6: 49; at Δ = 60 s
    (test_interval_60_s_grows_the_error): 0, 110, 55, 55, 114 -> d = 0, 20, 55, 55, 65: mean 39,
    median 55, max 65, 4 of 5 jobs delayed, none earlier; contention-bound jobs 3, 5, 6 at 60 s: errors
    -190, 55, 94 -> mean -14.
    """
    mod = load_experiment()
    spec = tmp_path / "fixture.toml"        # the printer's campaign, with the fixture as trace "kth"
    spec.write_text(f'[[traces]]\nname = "kth"\npath = "{TRACE}"\n[[schedulers]]\nname = "maui"\n')
    args = ["--campaign", str(spec), "--traces", "kth", "--no-plots", "--workers", "1"]
    assert mod.main([*args, "--out", str(tmp_path / "c"), "--steps", "0", "60"]) == 0
    out = capsys.readouterr().out
    assert "| kth | 60 s | 5 | 39.0 | 55 | 61 | 65 | 39 | 80.0% | 0.0% | -14 |" in out   # p90: 55 + 0.6 * 10
    # first table: all jobs of both weeks; room jobs 2 and 4 (module docstring)
    assert "| kth | event | 2 | 5 | " in out and "| 2 (40%) |" in out
    # --summary-only runs nothing and prints the same tables
    assert mod.main([*args, "--out", str(tmp_path / "c"), "--steps", "0", "60", "--summary-only"]) == 0
    again = capsys.readouterr().out
    assert "0 to run" in again and again.split("\n\n", 1)[1] == out.split("\n\n", 1)[1]
    # --load 2 halves every submit time (recorded waits kept): the fixture's 3 weeks become 1.5
    assert mod.main([*args, "--out", str(tmp_path / "x2"), "--steps", "0", "--load", "2"]) == 0
    assert "| kth-x2 | event | 1 | " in capsys.readouterr().out
    (wl,) = (tmp_path / "x2" / "inputs").glob("*/workload.json")
    assert [j["subtime"] for j in json.loads(wl.read_text())["jobs"]] == [0, 302400, 302405, 604802.5, 604802.5,
                                                                          604803]
    (run,) = (tmp_path / "x2" / "runs").iterdir()
    assert (run / "errors.csv").exists()


def test_overrun_keeps_the_recorded_request(tmp_path, capsys):
    # three_weeks.swf with job 2 requesting 60 s (it ran 100 s).  By default the request becomes
    # run + 1 s: 3 waits for 2's end, 90 s (error -210).  With --overrun 0 the request is kept and is
    # Batsim's limit: 2 is killed at 604860, 3 starts then (wait 50, error -250).  At Δ = 60 Maui
    # cancels 2 after the first poll past 604860 (604920) and frees its nodes at the next (604980):
    # 3 waits 170 (error -130); with the run + 1 s request it waits 110 (test above).
    text = TRACE.read_text().replace("2 604800 50 100 4 -1 -1 4 200", "2 604800 50 100 4 -1 -1 4 60")
    trace = tmp_path / "over.swf"
    trace.write_text(text)
    week1 = {}
    for name, kw in (("raise", {}), ("keep", {"overrun": 0}), ("keep60", {"overrun": 0, "interval": 60}),
                     ("raise60", {"interval": 60})):
        res = validate(trace, tmp_path / name, plots=False, log=lambda s: None, **kw)
        with open(tmp_path / name / "weeks" / "wk001_errors.csv", newline="") as f:
            week1[name] = {r["job_id"]: int(r["simulated_wait_s"]) for r in csv.DictReader(f)}
        assert res[0].jobs == 2
    assert week1 == {"raise": {"2": 0, "3": 90}, "keep": {"2": 0, "3": 50}, "keep60": {"2": 0, "3": 170},
                     "raise60": {"2": 0, "3": 110}}
    wl = json.loads((tmp_path / "keep" / "weeks" / "wk001.json").read_text())
    job2 = next(j for j in wl["jobs"] if j["id"] == 2)
    assert (job2["walltime"], job2["requested_walltime"]) == (60, 60)
    assert main(["validate", str(trace), "--out", str(tmp_path / "bad"), "--overrun", "-1"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("--overrun must be a number of seconds >= 0 "
                                                                      "(got -1)")


def test_experiment_campaign_reads_data_folder(tmp_path):
    """``--data DIR`` moves the campaign's SWF logs to DIR (wagap to its sibling alea_metacentrum); without it
    the file's own paths stay (a regression: the campaign's mapping once shadowed the data folder)."""
    mod = load_experiment()
    swf, alea = tmp_path / "swf", tmp_path / "alea_metacentrum"
    swf.mkdir()
    alea.mkdir()
    (swf / "HPC2N-2002-2.1-cln.swf.gz").write_bytes(b"")
    (alea / "wagap-2013.swf.gz").write_bytes(b"")
    spec = mod.campaign(mod.CAMPAIGN, None, [0.0, 60.0], data=swf)
    assert [t["path"] for t in spec["traces"]] == [str(swf / "HPC2N-2002-2.1-cln.swf.gz"),
                                                     str(alea / "wagap-2013.swf.gz"), "KTH-SP2"]
    assert spec["schedulers"][0]["options"]["interval"] == [0, 60]
    (kth,) = mod.campaign(mod.CAMPAIGN, ["kth"], [5.0])["traces"]
    assert kth["path"] == "KTH-SP2"
