"""The authors' weekly resampler (adapters/resample_permute.py; freuk/ocst src/sampler.ml, models.md §A
"What the authors actually ran"): one permutation per user of the log's interior calendar weeks, checked
by hand on a tiny log and against its invariants on random ones."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from batfeed.adapters.resample import WEEK, write_workload_file
from batfeed.adapters.resample_permute import PermuteLog, resample_permute

from batfeed.campaign import CampaignError, load_spec, run_campaign
from batfeed.cli import main
from batfeed.errors import InputError

REPO = Path(__file__).resolve().parent.parent
PROFILES = {p: {"type": "delay", "delay": d} for p, d in (("a", 10.0), ("unused", 1.0), ("b", 20.0), ("c", 30.0))}
# (id, user, calendar week on the SWF clock, offset in the week, profile), input order deliberately shuffled:
# 2 users (3, then "x"), weeks 2..6: interior weeks 3, 4, 5; jobs 1 and 9 are in the edge weeks 2 and 6
HAND = [
    (2, 3, 3, 100.0, "a"), (9, "x", 6, 20.0, "a"), (5, "x", 4, 7000.0, "c"), (11, "x", 3, 50.0, "a"),
    (1, 3, 2, 500000.0, "a"), (4, "x", 3, 50.0, "b"), (6, 3, 4, 7000.0, "a"), (10, 3, 3, 7000.0, "c"),
    (8, "x", 5, 604799.5, "a"), (3, 3, 3, 200.0, "b"), (7, 3, 5, 10.0, "b"),
]
ORIGIN = 2 * WEEK + 500000.0  # the first job's swf_submit: the conversion's subtime 0
SEED = 9


def _workload(rows: list[tuple[int, Any, int, float, str]] = HAND, origin: float = ORIGIN) -> dict[str, Any]:
    jobs = []
    for jid, user, week, offset, profile in rows:
        r = week * WEEK + offset
        job = {"id": jid, "subtime": r - origin, "res": 1 + jid % 3, "walltime": 100.0, "profile": profile,
               "swf_submit": r, "swf_wait": float(jid)}
        if user is not None:
            job["user"] = user
        jobs.append(job)
    return {"nb_res": 4, "unix_start": 1e9 + origin, "swf_origin": origin, "jobs": jobs, "profiles": PROFILES}


def test_hand_made_log_lands_where_computed_by_hand() -> None:
    rng = np.random.default_rng(SEED)
    assert rng.permutation(3).tolist() == [2, 0, 1]     # user 3: weeks 3, 4, 5 -> 5, 3, 4
    assert rng.permutation(3).tolist() == [1, 2, 0]     # user x: weeks 3, 4, 5 -> 4, 5, 3
    data = _workload()
    log = PermuteLog.load(data)
    assert (log.clock, log.first_week, log.last_week, log.interior, log.dropped) == ("swf_submit", 2, 6, 3, 2)
    assert log.draws(SEED).tolist() == [[2, 0, 1], [1, 2, 0]]
    out = log.resample(SEED).to_dict()
    shift = 3 * WEEK + 7000.0   # the earliest moved job: job 6 (user 3, week 4 -> 3, offset 7000)
    # (new subtime, original id, original week): ties by user rank (10 of user 3 before 5 of x at 2 WEEK), then
    # input order (11 before 4)
    assert [(j["subtime"], j["resampled_from"], j["resampled_week"]) for j in out["jobs"]] == [
        (0.0, 6, 4), (604799.5 - 7000, 8, 5), (WEEK - 7000 + 10.0, 7, 5), (WEEK - 7000 + 50.0, 11, 3),
        (WEEK - 7000 + 50.0, 4, 3), (2 * WEEK - 7000 + 100.0, 2, 3), (2 * WEEK - 7000 + 200.0, 3, 3),
        (2 * WEEK, 10, 3), (2 * WEEK, 5, 4)]
    assert [j["id"] for j in out["jobs"]] == list(range(9))
    by_id = {j["id"]: j for j in data["jobs"]}
    for job in out["jobs"]:     # every other field copied (user, profile, provenance)
        src = by_id[job["resampled_from"]]
        assert {k: v for k, v in job.items() if k not in ("id", "subtime", "resampled_from", "resampled_week")} \
            == {k: v for k, v in src.items() if k not in ("id", "subtime")}
    assert list(out["profiles"]) == ["a", "b", "c"] and out["nb_res"] == 4 and "unix_start" not in out
    info = out["batfeed_resample"]
    assert info["method"].startswith("permute-weeks") and "sampler.ml" in info["method"]
    assert {k: info[k] for k in ("source", "source_sha256", "seed", "clock", "weeks", "log_weeks", "first_week",
                                 "last_week", "time_shift", "jobs_in", "jobs_out", "dropped_edge_jobs", "users",
                                 "anonymous_jobs", "source_unix_start")} == {
        "source": "in-memory", "source_sha256": None, "seed": SEED, "clock": "swf_submit", "weeks": 3,
        "log_weeks": 5, "first_week": 2, "last_week": 6, "time_shift": shift, "jobs_in": 11, "jobs_out": 9,
        "dropped_edge_jobs": 2, "users": 2, "anonymous_jobs": 0, "source_unix_start": 1e9 + ORIGIN}
    assert "rng.permutation" in info["draws"]
    # drawn[k, r]: the original week whose jobs user rank r gets in output week k (3, 4, 5)
    assert log.resample(SEED).drawn.tolist() == [[4, 5], [5, 3], [3, 4]]


def test_subtime_is_the_clock_without_a_consistent_swf_submit() -> None:
    """Without swf_submit, or with one that no longer matches subtime (load-scaled, resampled), weeks are
    counted on subtime: here from the first job (week 0 = [0, WEEK) of subtime), so other edge weeks."""
    plain = _workload()
    for job in plain["jobs"]:
        del job["swf_submit"]
    scaled = _workload()
    for job in scaled["jobs"]:
        job["subtime"] /= 1.5
    for data in (plain, scaled):
        log = PermuteLog.load(data)
        rel = np.array([j["subtime"] for j in data["jobs"]])
        assert log.clock == "subtime" and (log.first_week, log.last_week) == (0, int(rel.max() // WEEK))
        out = log.resample(SEED).to_dict()
        assert out["batfeed_resample"]["clock"] == "subtime" and out["jobs"][0]["subtime"] == 0.0
        assert all(j["resampled_week"] == next(s["subtime"] for s in data["jobs"] if s["id"] == j["resampled_from"])
                   // WEEK for j in out["jobs"])
    resampled = resample_permute(_random_log(0), 1)     # its jobs keep the stale swf_submit: subtime is the clock
    assert PermuteLog.load(resampled).clock == "subtime"


def _random_log(seed: int) -> dict[str, Any]:
    """3 users, an anonymous one, a string one; 9 calendar weeks on an SWF clock starting mid-week."""
    rng = np.random.default_rng(1000 + seed)
    rows = []
    for jid in range(300):
        user = [1, 2, "zed", None][int(rng.integers(0, 4))]
        rows.append((jid, user, int(rng.integers(4, 13)), float(rng.integers(0, WEEK)), "abc"[jid % 3]))
    return _workload(rows, origin=min(w * WEEK + o for _, _, w, o, _ in rows))


@pytest.mark.parametrize("seed", range(6))
def test_each_user_keeps_each_interior_week_once(seed: int) -> None:
    """Without replacement: every interior week of a user lands in exactly one output week, all of its jobs
    together at their offsets; the output is the log minus its edge weeks, each job exactly once."""
    data = _random_log(seed)
    log = PermuteLog.load(data)
    w0, w1 = log.first_week, log.last_week
    by_id = {j["id"]: j for j in data["jobs"]}
    week_of = {j["id"]: int(j["swf_submit"] // WEEK) for j in data["jobs"]}
    interior = [jid for jid, w in week_of.items() if w0 < w < w1]
    for rs in range(4):
        out = log.resample(rs).to_dict()
        info, jobs = out["batfeed_resample"], out["jobs"]
        assert sorted(j["resampled_from"] for j in jobs) == sorted(interior)        # each interior job once
        assert info["dropped_edge_jobs"] == len(data["jobs"]) - len(interior) == log.dropped
        assert info["jobs_out"] == len(jobs) and info["weeks"] == w1 - w0 - 1 and info["anonymous_jobs"] > 0
        subtimes = [j["subtime"] for j in jobs]
        assert subtimes == sorted(subtimes) and subtimes[0] == 0
        moves: dict[Any, dict[int, set[int]]] = {}
        for j in jobs:
            r = j["subtime"] + info["time_shift"]
            src = by_id[j["resampled_from"]]
            assert j["resampled_week"] == week_of[src["id"]] and r % WEEK == src["swf_submit"] % WEEK
            assert w0 < r // WEEK < w1 and j.get("user") == src.get("user")
            moves.setdefault(j.get("user"), {}).setdefault(int(r // WEEK), set()).add(j["resampled_week"])
        for to in moves.values():
            assert all(len(f) == 1 for f in to.values())                             # one source week per week
            sources = [next(iter(f)) for f in to.values()]
            assert len(sources) == len(set(sources))                                 # ... never drawn twice
        weeks = Counter((j.get("user"), j["resampled_week"]) for j in jobs)
        assert weeks == Counter((by_id[i].get("user"), week_of[i]) for i in interior)


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    path = write_workload_file(tmp_path / "in.json", _random_log(0))
    log = PermuteLog.load(path)
    a = log.resample(3).write(tmp_path / "a.json").read_bytes()
    assert PermuteLog.load(path).resample(3).write(tmp_path / "b.json").read_bytes() == a
    assert log.resample(4).write(tmp_path / "c.json").read_bytes() != a
    res = log.resample(3)
    assert json.loads(a) == res.to_dict() == resample_permute(path, 3)
    assert write_workload_file(tmp_path / "d.json", res.to_dict()).read_bytes() == a
    gz = res.write(tmp_path / "e.json.gz").read_bytes()
    assert gz == res.write(tmp_path / "f.json.gz").read_bytes() and gzip.decompress(gz) == a
    info = json.loads(a)["batfeed_resample"]
    assert info["source"] == "in.json" and len(info["source_sha256"]) == 64


def test_short_logs_and_bad_seeds_are_refused(tmp_path: Path) -> None:
    from batfeed.errors import BatfeedError

    two = tmp_path / "two.json"
    write_workload_file(two, _workload([(1, 3, 2, 5.0, "a"), (2, 3, 3, 604000.0, "a")]))
    with pytest.raises(InputError, match=rf"^{two}: the jobs lie in 2 calendar week\(s\) \(weeks 2\.\.3 of the "
                                         r"swf_submit clock\): fewer than 3, so no interior week to permute"):
        PermuteLog.load(two)
    with pytest.raises(InputError, match=r"^in-memory: the jobs lie in 1 calendar week"):
        PermuteLog.load(_workload([(1, 3, 2, 5.0, "a")]))
    empty = _workload([(1, 3, 2, 5.0, "a"), (2, "x", 5, 5.0, "a")])     # weeks 3 and 4 hold no job
    with pytest.raises(InputError, match=r"no job in the 2 interior week\(s\) \(weeks 2\.\.5 of the swf_submit"):
        PermuteLog.load(empty)
    for seed in (-1, 1.5, True):
        with pytest.raises(BatfeedError, match="seed must be an integer >= 0"):
            PermuteLog.load(_workload()).resample(seed)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- CLI


def test_cli_writes_count_resamples_and_reports(tmp_path: Path, capsys) -> None:
    src = write_workload_file(tmp_path / "hand.json", _workload())
    out = tmp_path / "rs" / "hand.json"
    assert main(["resample", "permute", str(src), "--seed", "8", "--count", "2", "-o", str(out)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"read {src}: 11 jobs, 2 users, calendar weeks 2..6 of the swf_submit clock: 3 "
                              "interior weeks permuted (9 jobs), 2 jobs of the first and last weeks dropped, in ")
    for line, seed in zip(text[1:], (8, 9), strict=True):
        path = tmp_path / "rs" / f"hand_seed{seed}.json"
        assert line.startswith(f"wrote {path}: 3 weeks, seed {seed}, 9 jobs, 3 profiles (")
        assert json.loads(path.read_text()) == resample_permute(src, seed)
    assert not out.exists() and len(text) == 3
    two = tmp_path / "two.json"
    write_workload_file(two, _workload([(1, 3, 2, 5.0, "a"), (2, 3, 3, 604000.0, "a")]))
    assert main(["resample", "permute", str(two), "--seed", "1", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"batfeed resample: error: {two}: the jobs lie in 2 calendar")
    assert main(["resample", "permute", str(src), "--seed", "-1", "-o", str(out)]) == 1
    assert capsys.readouterr().err == "batfeed resample: error: --seed must be >= 0 (got -1)\n"
    with pytest.raises(SystemExit):         # no --weeks: the length is the log's
        main(["resample", "permute", str(src), "--weeks", "3", "--seed", "1", "-o", str(out)])
    assert not out.exists()


def test_real_cli_on_an_swf_log(tmp_path: Path) -> None:
    """An SWF trace is converted on the fly; weeks are counted on its own submit times (KTH-SP2 starts
    at 599,850 s, near the end of its week 0)."""
    trace = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    out = tmp_path / "kth.json.gz"
    proc = subprocess.run([sys.executable, "-P", "-m", "batfeed", "resample", "permute", str(trace), "--seed", "1",
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("\n") == 1 and "converted on the fly" in proc.stderr
    assert "calendar weeks 0..48 of the swf_submit clock: 47 interior weeks permuted" in proc.stdout
    wl = json.loads(gzip.decompress(out.read_bytes()))
    info = wl["batfeed_resample"]
    assert (info["clock"], info["weeks"], info["source"]) == ("swf_submit", 47, trace.name)
    assert info["jobs_out"] + info["dropped_edge_jobs"] == info["jobs_in"] == 28475 and len(wl["jobs"]) == 28113
    assert wl["jobs"][0]["subtime"] == 0 and wl["jobs"][-1]["subtime"] < 47 * WEEK


# --------------------------------------------------------------------------- campaigns


def test_campaign_permute_runs_one_resample_per_seed(tmp_path: Path) -> None:
    from batfeed.campaign.expand import expand
    from batfeed.campaign.inputs import read_workload

    spec = {"traces": [{"name": "kth", "path": "KTH-SP2", "max_jobs": 3000, "resample": "permute"}],
            "schedulers": ["fcfs"], "seeds": [1, 2]}
    (trace,) = load_spec(spec).traces
    assert (trace.resample_method, trace.resample_weeks, trace.resampled) == ("permute", 0, True)
    weekly = load_spec({**spec, "traces": [{"path": "KTH-SP2", "max_jobs": 3000, "resample_weeks": 3}]})
    keys = {r.key for r in expand(load_spec(spec))}
    assert len(keys) == 2 and not keys & {r.key for r in expand(weekly)}   # seeded, and not weekly's runs
    out = run_campaign(spec, tmp_path, workers=1, progress=False)
    assert (out["status"] == "ok").all() and out["seed_used"].all()
    (conv,) = (tmp_path / "inputs").glob("*/workload.json")
    for seed in (1, 2):
        (path,) = (tmp_path / "inputs" / "derived").glob(f"*-permute-0s-seed{seed}.json.gz")
        expected = resample_permute(conv, seed)
        got = read_workload(path)
        assert got["jobs"] == expected["jobs"] and got["batfeed_resample"]["seed"] == seed
        assert (out.loc[out["seed"] == seed, "nb_jobs"] == len(expected["jobs"])).all()


@pytest.mark.parametrize(("trace", "message"), [
    ({"resample": "permute", "resample_weeks": 4},
     r"traces\[0\]\.resample_weeks: the \"permute\" resampling keeps the log's length \(its interior weeks\): "
     r"remove resample_weeks"),
    ({"resample": "permute", "resample_weeks": 0}, r"traces\[0\]\.resample_weeks: the \"permute\" resampling"),
    ({"resample": "permute", "resample_load": 2}, r"traces\[0\]\.resample_load: only the \"users\" resampling"),
    ({"resample": "permute", "resample_rb_npw": 1}, r"traces\[0\]\.resample_rb_npw: only the \"users\""),
    ({"resample": "permut"}, r"traces\[0\]\.resample: must be \"weekly\", \"permute\" or \"users\", got \"permut\" "
                             r"\(did you mean 'permute'\?\)"),
    ({"resample": "weekly"}, r"traces\[0\]\.resample: needs resample_weeks"),
])
def test_campaign_bad_permute_combinations(trace: dict[str, Any], message: str) -> None:
    with pytest.raises(CampaignError, match=message):
        load_spec({"traces": [{"path": "KTH-SP2", **trace}], "schedulers": ["fcfs"]})


def test_campaign_validate_runs_refuse_permute() -> None:
    trace = REPO / "tests" / "data" / "maui" / "three_weeks.swf"
    with pytest.raises(CampaignError, match=r"traces\[0\]\.resample: no resampling in validate runs"):
        load_spec({"validate": {}, "traces": [{"path": str(trace), "resample": "permute"}],
                   "schedulers": ["maui"]})
