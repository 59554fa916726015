"""Weekly user resampling (adapters/resample.py): the online-tuning paper's protocol (models.md §A
"Protocol"), checked against the documented draw order with numpy.random.default_rng directly."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from batfeed.adapters.resample import WEEK, WeeklyLog, resample_weekly, write_workload_file
from batfeed.adapters.resample_cli import output_paths

from batfeed.cli import main

ORIGIN = 5000.0  # the log's first subtime: week i is [ORIGIN + i·WEEK, ORIGIN + (i+1)·WEEK)
# (id, user, week, offset in the week, profile); input order deliberately not sorted by time
HAND = [
    (10, 2, 0, 200.0, "a"), (11, 2, 0, 100.0, "b"), (12, 2, 1, 50.0, "a"),
    (20, 5, 1, 10.0, "c"), (21, 5, 1, 10.0, "a"), (22, 5, 2, 3000.0, "b"),
    (30, 7, 0, 0.0, "a"), (31, 7, 0, 10.0, "b"), (32, 7, 2, 604799.5, "c"), (33, 7, 2, 500000.0, "a"),
    (40, 5, 3, 1000.0, "a"), (41, 2, 3, 2000.0, "b"),  # the partial 4th week: never drawn
]
USERS = [2, 5, 7]  # sorted
PROFILES = {p: {"type": "delay", "delay": d} for p, d in (("a", 10.0), ("b", 20.0), ("unused", 1.0), ("c", 30.0))}


def _workload(rows: list[tuple[int, Any, int, float, str]] = HAND) -> dict[str, Any]:
    jobs = []
    for jid, user, week, offset, profile in rows:
        job = {"id": jid, "subtime": ORIGIN + week * WEEK + offset, "res": 1 + jid % 3, "walltime": 100.0,
               "profile": profile, "swf_wait": float(jid)}
        if user is not None:
            job["user"] = user
        jobs.append(job)
    return {"nb_res": 4, "unix_start": 1e9, "jobs": jobs, "profiles": PROFILES}


def _expected(data: dict[str, Any], users: list[Any], log_weeks: int, weeks: int, seed: int) -> list[tuple]:
    """The protocol as documented, written out: draws = default_rng(seed).integers(0, log_weeks,
    (weeks, users)); for k, for u (sorted), the jobs of u in week draws[k, u] in input order, at
    k·WEEK + their offset; then a stable sort by subtime."""
    drawn = np.random.default_rng(seed).integers(0, log_weeks, size=(weeks, len(users)))
    out = []
    for k in range(weeks):
        for r, u in enumerate(users):
            for job in data["jobs"]:
                rel = job["subtime"] - ORIGIN
                if job.get("user") == u and rel // WEEK == drawn[k, r]:
                    out.append((k * WEEK + rel - drawn[k, r] * WEEK, u, job["id"], int(drawn[k, r])))
    return sorted(out, key=lambda e: e[0])


def _seen(out: dict[str, Any]) -> list[tuple]:
    return [(j["subtime"], j.get("user"), j["resampled_from"], j["resampled_week"]) for j in out["jobs"]]


@pytest.mark.parametrize("weeks", [1, 2, 5, 13])
def test_hand_made_workload_follows_the_documented_draws(weeks: int) -> None:
    data = _workload()
    log = WeeklyLog.load(data)
    assert (log.users, log.log_weeks, log.origin, log.undrawable) == (USERS, 3, ORIGIN, 2)
    for seed in range(25):
        out = resample_weekly(data, weeks, seed)
        assert _seen(out) == _expected(data, USERS, 3, weeks, seed), seed
        assert [j["id"] for j in out["jobs"]] == list(range(len(out["jobs"])))
        assert not {j["resampled_from"] for j in out["jobs"]} & {40, 41}
        info = out["batfeed_resample"]
        assert (info["weeks"], info["seed"], info["log_weeks"], info["users"], info["jobs_out"]) == (
            weeks, seed, 3, 3, len(out["jobs"]))
        assert out["nb_res"] == 4 and "unix_start" not in out and info["source_unix_start"] == 1e9


def test_draw_order_is_for_week_then_for_user() -> None:
    """The single (weeks, users) call equals scalar draws for k in weeks, for u in sorted users."""
    log = WeeklyLog.load(_workload())
    for seed in range(10):
        rng = np.random.default_rng(seed)
        scalar = [[int(rng.integers(0, 3)) for _u in USERS] for _k in range(8)]
        assert log.draws(8, seed).tolist() == scalar


def test_string_users_and_anonymous_jobs() -> None:
    """Numbers, then strings, then the jobs without a user (one anonymous user)."""
    users = {2: "bob", 5: None, 7: "alice"}
    rows = [(jid, users[u], w, off, p) for jid, u, w, off, p in HAND] + [(50, 3, 1, 7.0, "b")]
    data = _workload(rows)
    log = WeeklyLog.load(data)
    assert log.users == [3, "alice", "bob", None] and log.anonymous == 4
    for seed in range(10):
        out = resample_weekly(data, 6, seed)
        assert _seen(out) == _expected(data, [3, "alice", "bob", None], 3, 6, seed)
        assert all(("user" in j) == (j["resampled_from"] not in (20, 21, 22)) for j in out["jobs"])


def test_copies_keep_offsets_user_and_fields() -> None:
    data = _workload()
    by_id = {j["id"]: j for j in data["jobs"]}
    out = resample_weekly(data, 30, 7)
    assert len(out["jobs"]) > 30
    for job in out["jobs"]:
        src = by_id[job["resampled_from"]]
        rel = src["subtime"] - ORIGIN
        assert job["resampled_week"] == rel // WEEK < 3
        assert job["subtime"] % WEEK == rel % WEEK                         # offset in the week kept
        assert {k: v for k, v in job.items() if k not in ("id", "subtime", "resampled_from", "resampled_week")} \
            == {k: v for k, v in src.items() if k not in ("id", "subtime")}  # same user, profile, every field
    assert list(out["profiles"]) == ["a", "b", "c"]                        # used ones, in the source's order
    assert all(out["profiles"][p] == PROFILES[p] for p in out["profiles"])


def test_bad_arguments_and_logs() -> None:
    from batfeed.errors import BatfeedError, InputError

    log = WeeklyLog.load(_workload())
    for weeks in (0, -3, 1.5, True):
        with pytest.raises(BatfeedError, match="weeks must be an integer >= 1"):
            log.resample(weeks, 1)  # type: ignore[arg-type]
    with pytest.raises(BatfeedError, match="seed must be an integer >= 0"):
        log.resample(3, -1)
    short = {"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "profile": "a"}, {"id": 2, "subtime": WEEK - 1,
                                                                             "profile": "a"}], "profiles": PROFILES}
    with pytest.raises(InputError, match="less than one complete week"):
        WeeklyLog.load(short)
    short["jobs"][1]["subtime"] = WEEK  # exactly one complete week
    assert WeeklyLog.load(short).log_weeks == 1
    for job, message in (({"id": 3, "profile": "a"}, "job 3: subtime must be a finite number"),
                         ({"id": 3, "subtime": 9, "profile": "z"}, "job 3: profile 'z' is not in 'profiles'"),
                         ({"id": 3, "subtime": 9, "profile": ["a"]}, r"job 3: profile \['a'\] is not in"),
                         ({"id": 3, "subtime": 9, "profile": "a", "user": float("nan")}, "job 3: user must be a"),
                         ({"id": 3, "subtime": 9, "profile": "a", "user": [1]}, "job 3: user must be a number")):
        with pytest.raises(InputError, match=message):
            WeeklyLog.load({**short, "jobs": [*short["jobs"], job]})
    with pytest.raises(InputError, match="no integer 'nb_res'"):
        WeeklyLog.load({"jobs": short["jobs"], "profiles": PROFILES})


# --------------------------------------------------------------------------- KTH-SP2


@pytest.fixture(scope="module")
def kth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """KTH-SP2 converted with the paper's extra filtering (``--filter tune``): (workload, platform)."""
    from batfeed.adapters.filters import tune_filter
    from batfeed.adapters.swf import convert_swf

    trace = Path(__file__).resolve().parent.parent / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    conv = convert_swf(trace, tmp_path_factory.mktemp("kth"), extra_drop=tune_filter)
    return conv.workload_path, conv.platform_path


def test_kth_every_job_is_a_copy_of_a_job_of_the_same_user(kth: tuple[Path, Path]) -> None:
    source = json.loads(kth[0].read_text())
    by_id = {j["id"]: j for j in source["jobs"]}
    log = WeeklyLog.load(kth[0])
    out = resample_weekly(kth[0], 104, 1)
    jobs = out["jobs"]
    assert log.log_weeks == 47 and len(log.users) == len({j["user"] for j in source["jobs"]})
    assert 1.8 < len(jobs) / len(source["jobs"]) < 2.7       # ~104/47.5 times the jobs of the log
    assert [j["id"] for j in jobs] == list(range(len(jobs)))
    subtimes = [j["subtime"] for j in jobs]
    assert subtimes == sorted(subtimes) and 0 <= subtimes[0] and subtimes[-1] < 104 * WEEK
    for job in jobs:
        src = by_id[job["resampled_from"]]
        assert job["user"] == src["user"] and job["profile"] == src["profile"] and job["res"] == src["res"]
        assert job["subtime"] % WEEK == src["subtime"] % WEEK and job["resampled_week"] == src["subtime"] // WEEK
    assert set(out["profiles"]) == {j["profile"] for j in jobs}
    assert all(out["profiles"][p] == source["profiles"][p] for p in out["profiles"])
    # one user's copies in simulated week k all come from one original week
    weeks_of: dict[tuple[int, Any], set[int]] = {}
    for job in jobs:
        weeks_of.setdefault((int(job["subtime"] // WEEK), job["user"]), set()).add(job["resampled_week"])
    assert all(len(w) == 1 for w in weeks_of.values())


def test_kth_same_seed_same_bytes(kth: tuple[Path, Path], tmp_path: Path) -> None:
    log = WeeklyLog.load(kth[0])
    a = log.resample(20, 3).write(tmp_path / "a.json").read_bytes()
    assert WeeklyLog.load(kth[0]).resample(20, 3).write(tmp_path / "b.json").read_bytes() == a
    assert log.resample(20, 4).write(tmp_path / "c.json").read_bytes() != a
    # the fast writer = json of to_dict(), = write_workload_file(to_dict()); .gz: same bytes compressed
    res = log.resample(20, 3)
    assert json.loads(a) == res.to_dict()
    assert write_workload_file(tmp_path / "d.json", res.to_dict()).read_bytes() == a
    gz1, gz2 = res.write(tmp_path / "e.json.gz").read_bytes(), res.write(tmp_path / "f.json.gz").read_bytes()
    assert gz1 == gz2 and gzip.decompress(gz1) == a
    assert write_workload_file(tmp_path / "g.json.gz", res.to_dict()).read_bytes() == gz1
    info = json.loads(a)["batfeed_resample"]
    assert info["source"] == kth[0].name and len(info["source_sha256"]) == 64


def test_kth_resample_simulates_every_job(kth: tuple[Path, Path], tmp_path: Path) -> None:
    from batfeed.runner import run_simulation

    path = WeeklyLog.load(kth[0]).resample(26, 11).write(tmp_path / "kth26.json.gz")
    n = json.loads(gzip.decompress(path.read_bytes()))["batfeed_resample"]["jobs_out"]
    result = run_simulation(kth[1], [path], scheduler="easy", export=tmp_path / "easy")
    c = result.counts
    done = (c["completed_successfully"] + c["rejected"] + c["completed_killed"] + c["completed_walltime_reached"]
            + c["completed_failed"])
    assert c["submitted"] == n == done and c["completed_successfully"] > 0.99 * n
    assert sum(1 for _ in (tmp_path / "easy_jobs.csv").open()) == n + 1


# --------------------------------------------------------------------------- CLI


def test_cli_writes_count_resamples_and_reports(kth: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "rs" / "kth.json"
    assert main(["resample", "weekly", str(kth[0]), "--weeks", "10", "--seed", "5", "--count", "3",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"read {kth[0]}: 27992 jobs, ") and "47 complete weeks" in text[0]
    assert [line.split(":")[0] for line in text[1:]] == [f"wrote {tmp_path}/rs/kth_seed{s}.json" for s in (5, 6, 7)]
    for seed in (5, 6, 7):
        written = json.loads((tmp_path / "rs" / f"kth_seed{seed}.json").read_text())
        assert written == resample_weekly(kth[0], 10, seed)
        assert f"seed {seed}, {len(written['jobs'])} jobs" in text[seed - 4]
    assert not out.exists()
    assert main(["resample", "weekly", str(kth[0]), "--seed", "2", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["batfeed_resample"]["weeks"] == 104  # the paper's 2 years by default


def test_output_paths() -> None:
    assert output_paths("d/x.json", range(3, 4)) == [Path("d/x.json")]
    assert output_paths("d/x.json", range(3, 5)) == [Path("d/x_seed3.json"), Path("d/x_seed4.json")]
    assert output_paths("x.json.gz", range(1, 3)) == [Path("x_seed1.json.gz"), Path("x_seed2.json.gz")]
    assert output_paths("x", range(1, 3)) == [Path("x_seed1"), Path("x_seed2")]


def _cli_error(args: list[str], capsys) -> str:
    assert main(["resample", "weekly", *args]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err


def test_cli_errors(tmp_path: Path, capsys) -> None:
    good = tmp_path / "w.json"
    good.write_text(json.dumps(_workload()))
    out = str(tmp_path / "o.json")
    missing = tmp_path / "nope.json"
    assert _cli_error([str(missing), "--seed", "1", "-o", out], capsys) == \
        f"batfeed resample: error: {missing}: no such file\n"
    assert _cli_error([str(good), "--seed", "1", "--weeks", "0", "-o", out], capsys) == \
        "batfeed resample: error: --weeks must be >= 1 (got 0)\n"
    assert _cli_error([str(good), "--seed", "-1", "-o", out], capsys) == \
        "batfeed resample: error: --seed must be >= 0 (got -1)\n"
    assert _cli_error([str(good), "--seed", "1", "--count", "0", "-o", out], capsys) == \
        "batfeed resample: error: --count must be >= 1 (got 0)\n"
    bad = tmp_path / "bad.json"
    bad.write_text("{\"jobs\": [")
    assert _cli_error([str(bad), "--seed", "1", "-o", out], capsys).startswith(
        f"batfeed resample: error: {bad}:1: invalid JSON")
    bad.write_text(json.dumps({"nb_res": 2, "jobs": [{"id": 1, "subtime": 0, "profile": "a"}], "profiles": PROFILES}))
    assert _cli_error([str(bad), "--seed", "1", "-o", out], capsys) == (
        f"batfeed resample: error: {bad}: the jobs span 0.00 days: less than one complete week to draw from\n")
    assert _cli_error([str(good), "--seed", "1", "-o", str(tmp_path)], capsys) == \
        f"batfeed resample: error: cannot write to {tmp_path} (-o/--output): it is a directory, not a file\n"
    assert not Path(out).exists()


def test_real_cli_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-P", "-m", "batfeed", "resample", "weekly", str(tmp_path / "x.json"),
                           "--seed", "1", "-o", str(tmp_path / "o.json")], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"batfeed resample: error: {tmp_path / 'x.json'}: no such file\n"
