"""User-based resampling of Zakay & Feitelson (users/zf_resample.py, models.md §E [RES] "Generation"):
a tiny synthetic log (2 long-term + 3 temporary users, hand-computed classes, gaps and draws) and KTH-SP2."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from batfeed.adapters.resample import write_workload_file
from batfeed.adapters.swf import convert_swf
from batfeed.adapters.workload import load_workload_json
from batfeed.users.classify import classify_users
from batfeed.users.zf_resample import resample_users

from batfeed.errors import BatfeedError

W = 604_800
D = 86_400
T0 = 1000.0  # log start: output time 0 = T0, week grid [T0 + i·W, T0 + (i+1)·W)
# user -> submit times relative to T0.  Log end T1 = T0 + 20 W (user 2), so the log length is a whole
# number of weeks (period P = 20) and the paper's restart gap is exact.
SUBMITS: dict[int, list[float]] = {
    1: [0, 3 * W + 100, 10 * W + 5 * D, 15 * W + 200],  # long-term, weeks 0..15 (16 active)
    2: [2 * W + 3 * D, 2 * W + 4 * D, 16 * W + 1000, 20 * W],  # long-term, weeks 2..20 (19 active)
    3: [5 * W + 3600, 5 * W + 7200, 7 * W],  # temporary, weeks 5..7 (3)
    4: [8 * W + D, 9 * W],  # temporary, weeks 8..9 (2)
    5: [12 * W + 10, 12 * W + 20, 12 * W + 30],  # temporary, week 12 (1)
}
PROFILES = {f"p{k}": {"type": "delay", "delay": float(k)} for k in range(4)} | {"unused": {"type": "delay",
                                                                                        "delay": 9.0}}


def _workload(submits: dict[int, list[float]] = SUBMITS) -> dict[str, Any]:
    jobs, jid = [], 100
    for user, times in submits.items():
        for k, t in enumerate(reversed(times)):  # input not sorted by time
            jobs.append({"id": jid, "subtime": T0 + t, "res": 1 + jid % 4, "walltime": 50.0 + jid,
                         "profile": f"p{jid % 4}", "user": user, "swf_wait": float(k)})
            jid += 1
    return {"nb_res": 8, "unix_start": 8.2e8, "jobs": jobs, "profiles": PROFILES}


def _copies(out: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for job in out["jobs"]:
        by[job["resampled_copy"]].append(job)
    return by


def _sequences(data: dict[str, Any]) -> dict[Any, list[dict[str, Any]]]:
    seq: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for job in sorted(data["jobs"], key=lambda j: j["subtime"]):
        seq[job["user"]].append(job)
    return seq


def test_classes_of_the_synthetic_log() -> None:
    c = classify_users(_workload())
    assert c.users_of("long_term") == [1, 2] and c.users_of("temporary") == [3, 4, 5]
    assert c.users["weeks_active"].tolist() == [16, 19, 3, 2, 1]


@pytest.mark.parametrize("load", [0.5, 1.0, 2.0, 30.0])
@pytest.mark.parametrize("seed", range(6))
def test_sequences_kept_and_whole_week_shifts(seed: int, load: float) -> None:
    """Every copy = a contiguous piece of its user's sequence (a suffix, cut only by the horizon), same
    fields and gaps, shifted by whole weeks: subtime mod WEEK unchanged (time-of-week kept)."""
    data, weeks = _workload(), 45
    out = resample_users(data, weeks, seed, load=load)
    seqs, by_id = _sequences(data), {j["id"]: j for j in data["jobs"]}
    assert [j["id"] for j in out["jobs"]] == list(range(len(out["jobs"])))
    times = [j["subtime"] for j in out["jobs"]]
    assert times == sorted(times) and all(0 <= t < weeks * W for t in times)
    for cid, jobs in _copies(out).items():
        user = jobs[0]["resampled_user"]
        seq = [j["id"] for j in seqs[user]]
        ids = [j["resampled_from"] for j in jobs]
        i = seq.index(ids[0])
        assert ids == seq[i:i + len(ids)]
        if i + len(ids) < len(seq):  # cut short: only by the horizon
            nxt = by_id[seq[i + len(ids)]]["subtime"] - by_id[ids[0]]["subtime"] + jobs[0]["subtime"]
            assert nxt >= weeks * W
        shift = jobs[0]["subtime"] - (by_id[ids[0]]["subtime"] - T0)
        assert shift % W == 0
        for new in jobs:
            old = by_id[new["resampled_from"]]
            assert new["subtime"] - (old["subtime"] - T0) == shift  # same gaps
            assert new["subtime"] % W == (old["subtime"] - T0) % W
            assert new["resampled_week"] == (old["subtime"] - T0) // W
            assert new["user"] == cid and new["resampled_user"] == old["user"]
            fixed = ("id", "subtime", "user")
            assert {k: v for k, v in new.items() if k not in fixed and not k.startswith("resampled_")} \
                == {k: v for k, v in old.items() if k not in fixed}
        if user in (3, 4, 5):  # temporary copies do not restart: at most one pass over the sequence
            assert len(ids) <= len(seq)
    # fresh users numbered by first output job; only used profiles; nb_res kept
    firsts = [j["user"] for j in out["jobs"]]
    assert sorted(set(firsts)) == list(range(len(set(firsts))))
    assert list(dict.fromkeys(firsts)) == list(range(len(set(firsts))))
    assert set(out["profiles"]) == {j["profile"] for j in out["jobs"]} and "unused" not in out["profiles"]
    assert out["nb_res"] == 8 and out["batfeed_resample"]["rb_npw"] == 0


def _start_weeks(out: dict[str, Any], data: dict[str, Any]) -> list[tuple[Any, int]]:
    """(original user, output week of the user's first-job week) of each copy."""
    by_id, seqs = {j["id"]: j for j in data["jobs"]}, _sequences(data)
    res = []
    for jobs in _copies(out).values():
        user = jobs[0]["resampled_user"]
        w0 = (seqs[user][0]["subtime"] - T0) // W
        rel = (by_id[jobs[0]["resampled_from"]]["subtime"] - T0) // W - w0
        res.append((user, int(jobs[0]["subtime"] // W - rel)))
    return res


@pytest.mark.parametrize("load", [1.0, 15.0, 30.0])
def test_no_temporary_user_twice_in_a_week(load: float) -> None:
    """f·λ = 30·3/21 ≈ 4.3 > |TMP| = 3 at f = 30: n is raised and k capped at 3, still distinct users."""
    data = _workload()
    for seed in range(20):
        out = resample_users(data, 40, seed, load=load)
        arrivals = [(u, w) for u, w in _start_weeks(out, data) if u in (3, 4, 5) and w >= 1]
        assert len(arrivals) == len(set(arrivals))
        info = out["batfeed_resample"]
        assert info["binomial_n"] == max(3, int(np.ceil(load * 3 / 21)))


def test_initial_draws_by_hand() -> None:
    """The documented draw order replayed: f = 1 → one copy per long-term user (random() and
    permutation drawn anyway), user 1 at phase a: its first emitted job = its first job of relative week
    ≥ a, at week (its week − a); temporary init count = Poisson(μ), μ = 6 active weeks / 21 log weeks."""
    data, seq = _workload(), _sequences(_workload())
    for seed in range(10):
        rng = np.random.default_rng(seed)
        rng.random()
        rng.permutation(2)
        a1, a2 = rng.integers(0, [16, 19]).tolist()
        n_init = int(rng.poisson(6 / 21))
        out = resample_users(data, 30, seed)
        info = out["batfeed_resample"]
        assert info["long_term_copies"] == 2 and info["temporary_init"] == n_init
        assert info["temporary_mean_present"] == pytest.approx(6 / 21)
        assert info["temporary_arrival_rate"] == pytest.approx(3 / 21)
        for user, a, w0 in ((1, a1, 0), (2, a2, 2)):
            first = next(j for j in seq[user] if (j["subtime"] - T0) // W - w0 >= a)
            mine = [j for j in out["jobs"] if j["resampled_user"] == user]
            assert mine[0]["resampled_from"] == first["id"]
            assert mine[0]["subtime"] == first["subtime"] - T0 - (w0 + a) * W


@pytest.mark.parametrize("t1_shift", [0.0, -2 * D - 3600])
def test_long_term_restart_gap(t1_shift: float) -> None:
    """Restart gap = (first_u − T0) + (T1 − last_u), rounded up to a whole-week shift: + (P·W − (T1 − T0)),
    P = ⌈(T1 − T0)/W⌉ (= 0 when the log lasts a whole number of weeks).
    T1 = 20 W: user 1: 0 + (20 W − (15 W + 200)) = 5 W − 200; user 2: (2 W + 3 D) + 0 = 2 W + 3 D.
    T1 = 20 W − 2 D − 1 h (P still 20): the shift stays 20 W, user 2's gap gains the 2 D + 1 h rounding."""
    submits = dict(SUBMITS)
    submits[2] = [*SUBMITS[2][:-1], 20 * W + t1_shift]  # move the log end T1
    data = _workload(submits)
    length = 20 * W + t1_shift
    rounding = 20 * W - length
    expected = {u: (s[0] - 0) + (length - s[-1]) + rounding for u, s in submits.items() if u in (1, 2)}
    # user 1: (T1 − last) shrinks by exactly the rounding; user 2 ends the log: T1 − last = 0
    assert expected[1] == 5 * W - 200 and expected[2] == 2 * W + 3 * D + rounding
    seq = _sequences(data)
    for seed in range(5):
        out = resample_users(data, 100, seed)
        for user in (1, 2):
            copies = [c for c in _copies(out).values() if c[0]["resampled_user"] == user]
            assert len(copies) >= 4
            for prev, nxt in zip(copies, copies[1:], strict=False):
                assert prev[-1]["resampled_from"] == seq[user][-1]["id"]  # complete up to its last job
                assert nxt[0]["resampled_from"] == seq[user][0]["id"]  # restarts from its first job
                assert nxt[0]["subtime"] - prev[-1]["subtime"] == expected[user]
                assert nxt[0]["subtime"] - copies[0][0]["subtime"] >= 0


def test_load_factor_doubles_jobs() -> None:
    """f = 2: every long-term user runs twice (P/2 apart), the temporary Poisson and Binomial means double,
    so E[jobs] doubles up to the edge effect of the replicas' phases (≤ a few % over 5 periods).  Over 300
    seeds the ratio of means has a standard error ≈ 0.017 (checked < 0.03); tolerance 2 ± 0.1 (≈ 6 se)."""
    data, weeks, seeds = _workload(), 100, range(300)
    one = np.array([len(resample_users(data, weeks, s)["jobs"]) for s in seeds], dtype=float)
    two = np.array([len(resample_users(data, weeks, s, load=2.0)["jobs"]) for s in seeds], dtype=float)
    ratio = two.mean() / one.mean()
    se = ratio * np.hypot(two.std() / two.mean(), one.std() / one.mean()) / np.sqrt(len(one))
    print(f"jobs f=1 {one.mean():.1f} f=2 {two.mean():.1f} ratio {ratio:.3f} (se {se:.3f})")
    assert se < 0.03
    assert abs(ratio - 2) < 0.1
    assert resample_users(data, weeks, 0, load=2.0)["batfeed_resample"]["long_term_copies"] == 4
    # f = 0.5: one of the 2 long-term users (exactly: 2·0.5 = 1)
    assert resample_users(data, weeks, 0, load=0.5)["batfeed_resample"]["long_term_copies"] == 1
    assert resample_users(data, weeks, 0, load=0.0)["jobs"] == []


def test_determinism_and_file_round_trip(tmp_path: Path) -> None:
    data = _workload()
    a, b, c = (resample_users(data, 30, s, load=1.5) for s in (7, 7, 8))
    assert a == b and a != c
    assert json.dumps(a) == json.dumps(b)
    path = tmp_path / "w.json"
    json_path = write_workload_file(tmp_path / "in.json", data)
    assert resample_users(json_path, 30, 7, load=1.5)["jobs"] == a["jobs"]
    write_workload_file(path, a)
    assert json.loads(path.read_text())["jobs"] == a["jobs"]


@pytest.mark.parametrize("kwargs", [{"weeks": 0}, {"weeks": 1.5}, {"seed": -1}, {"load": -1.0},
                                    {"load": float("nan")}, {"seed": True}])
def test_bad_arguments(kwargs: dict[str, Any]) -> None:
    args = {"weeks": 4, "seed": 0, **kwargs}
    load = args.pop("load", 1.0)
    with pytest.raises(BatfeedError):
        resample_users(_workload(), args["weeks"], args["seed"], load=load)


def test_kth_sp2_weekly_jobs(kth_trace: Path, tmp_path: Path) -> None:
    """KTH-SP2 (28,475 jobs over 48 calendar weeks: 593.2 jobs/week) resampled to 52 weeks, 3 seeds.
    Measured over seeds 0-9: 605.0 ± 12.6 jobs/week (sd per seed 2.1 %), i.e. +2 %: long-term phases
    are uniform over the user's *active* weeks (REC), not over its whole period, so every long-term user
    is active at week 0 and weeks 49-52 repeat dense phases; discarded users (244 jobs, −0.9 %) are not
    resampled.  The 3-seed mean (sd ≈ 1.2 %) is asserted within 5 % of the original."""
    res = convert_swf(kth_trace, tmp_path)
    data = load_workload_json(res.workload_path)
    t = np.array([j["subtime"] for j in data["jobs"]])
    orig = len(t) / (int((t.max() - t.min()) // W) + 1)
    per_week = []
    for seed in range(3):
        out = resample_users(data, 52, seed)
        weekly = np.bincount((np.array([j["subtime"] for j in out["jobs"]]) // W).astype(int), minlength=52)
        assert len(weekly) == 52
        per_week.append(float(weekly.mean()))
    print(f"KTH-SP2 jobs/week original {orig:.1f}, resampled {[round(x, 1) for x in per_week]}")
    assert orig == pytest.approx(593.2, abs=0.1)
    assert abs(np.mean(per_week) / orig - 1) < 0.05


# --- rare-behaviour (RB) pool: a 5-job burst of user 1 in week 4, given as one flurry window ---
BURST = [4 * W + D + 60 * i for i in range(5)]


def _rb_workload() -> tuple[dict[str, Any], list[Any]]:
    from batfeed.users.flurry import Flurry

    data = _workload({**SUBMITS, 1: sorted(SUBMITS[1] + BURST)})
    return data, [Flurry(1, T0 + 4 * W, T0 + 5 * W, 5, 1.0)]


def test_rb_windows_leave_the_regular_pools() -> None:
    from batfeed.users.zf_resample import build_pools

    data, rb = _rb_workload()
    pools = build_pools(data, rb=rb)
    burst_ids = {j["id"] for j in data["jobs"] if j["user"] == 1 and j["subtime"] - T0 in BURST}
    assert len(burst_ids) == 5
    assert [len(u.idx) for u in pools.lt] == [4, 4] and [len(u.idx) for u in pools.tmp] == [3, 2, 3]
    assert len(pools.rb) == 1 and {data["jobs"][i]["id"] for i in pools.rb[0].idx} == burst_ids
    for seed in range(5):
        out = resample_users(pools, 45, seed)  # rb_npw = 0: the burst never comes back
        assert not {j["resampled_from"] for j in out["jobs"]} & burst_ids
        assert not any("resampled_rb" in j for j in out["jobs"])
        same = resample_users(_workload(), 45, seed)["jobs"]  # the log without the burst, same draws
        assert [(j["subtime"], j["user"], j["resampled_user"]) for j in out["jobs"]] == \
            [(j["subtime"], j["user"], j["resampled_user"]) for j in same]


def test_rb_arrivals_are_whole_units_taken_out_of_the_temporary_arrivals() -> None:
    data, rb = _rb_workload()
    lam = 3 / 21  # |TMP| / L
    for seed in range(8):
        plain = resample_users(data, 60, seed, rb=rb)["batfeed_resample"]
        out = resample_users(data, 60, seed, rb=rb, rb_npw=lam)  # p = rb_npw/λ = 1: one RB unit per arrival week
        info = out["batfeed_resample"]
        assert info["rb_arrivals"] + info["temporary_arrivals"] == plain["temporary_arrivals"]  # total unchanged
        copies = {c: js for c, js in _copies(out).items() if js[0].get("resampled_rb")}
        assert len(copies) == info["rb_arrivals"] > 0
        assert info["rb_jobs_out"] == sum(len(js) for js in copies.values())
        for js in copies.values():
            assert all(j.get("resampled_rb") for j in js)
            rel = [j["subtime"] for j in js]
            w = int(rel[0] // W)
            assert len(js) == 5  # a whole unit (one day of week 4: never cut by the horizon)
            assert [t - w * W for t in rel] == pytest.approx([b - 4 * W for b in BURST])  # time of week kept
        assert not any(j.get("resampled_rb") for c, js in _copies(out).items() if c not in copies for j in js)


def test_rb_errors() -> None:
    data, rb = _rb_workload()
    with pytest.raises(BatfeedError, match="needs rare-behaviour windows"):
        resample_users(data, 10, 0, rb_npw=0.1)
    with pytest.raises(BatfeedError, match="needs rare-behaviour windows"):
        resample_users(data, 10, 0, rb_npw=0.1, rb="detect")  # the calibrated detector finds none here
    with pytest.raises(BatfeedError, match="exceeds the weekly temporary arrival rate"):
        resample_users(data, 10, 0, rb_npw=0.2, rb=rb)
    with pytest.raises(BatfeedError, match="rb_npw must be"):
        resample_users(data, 10, 0, rb_npw=-1, rb=rb)
