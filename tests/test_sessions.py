"""Session partitioning and session dependency graphs (batfeed.users.sessions, models.md §D).

Fixture tests/data/users/six_jobs.json (recorded waits 0, so recorded finish f = a + d):

| job | user | a (submit) | d    | f     |
|-----|------|------------|------|-------|
| 1   | 9    | 0          | 2000 | 2000  |
| 2   | 7    | 50         | 100  | 150   |
| 3   | 9    | 100        | 100  | 200   |
| 4   | 7    | 1000       | 200  | 1200  |
| 5   | 7    | 10000      | 100  | 10100 |
| 6   | 7    | 20000      | 50   | 20050 |

a60, user 7: inter-arrivals 950 (< 3600: same session), 9000, 10000 (new sessions) ->
S1 = {2, 4} (start 50, F 1200), S2 = {5} (10000, F 10100), S3 = {6} (20000, F 20050).
user 9: inter-arrival 100 -> one session {1, 3} (start 0, F 2000).  4 sessions in all.
Dependencies (F_p <= a_c): S2 <- S1 (TT 10000-1200 = 8800); S3 <- S1, S2 (full relation), reduced to
S3 <- S2 (S1 -> S2 -> S3), TT 20000-10100 = 9900.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from batfeed.users.sessions import UserGraph, build_graphs, build_sessions, graph_stats
from batfeed.users.trace import TraceJob, load_trace

from batfeed.cli import main

USERS_DATA = Path(__file__).resolve().parent / "data" / "users"
SIX = USERS_DATA / "six_jobs.json"
CLI_TINY = Path(__file__).resolve().parent / "data" / "cli" / "tiny.swf"


def tj(i: int, a: float, d: float, wait: float = 0.0, user: str = "u") -> TraceJob:
    return TraceJob(i, str(i), user, a, wait, d, 1, -1.0, f"d{d:g}", {"type": "delay", "delay": d})


def test_trace_order_and_recorded_finish() -> None:
    trace = load_trace(SIX)
    assert [j.name for j in trace.jobs] == ["1", "2", "3", "4", "5", "6"]
    assert [j.finish for j in trace.jobs] == [2000, 150, 200, 1200, 10100, 20050]
    assert {u: [j.name for j in js] for u, js in trace.by_user().items()} == {"9": ["1", "3"],
                                                                              "7": ["2", "4", "5", "6"]}


def test_a60_sessions_of_the_fixture() -> None:
    g = build_graphs(load_trace(SIX), 60)
    u7, u9 = g["7"], g["9"]
    assert [[j.name for j in s.jobs] for s in u7.sessions] == [["2", "4"], ["5"], ["6"]]
    assert [(s.start, s.finish) for s in u7.sessions] == [(50, 1200), (10000, 10100), (20000, 20050)]
    assert u7.sessions[0].offsets() == [0, 950]
    assert u7.nb_preds == [0, 1, 2]                       # full relation: S3 depends on S1 and S2
    assert [u7.full_preds(c) for c in range(3)] == [[], [0], [0, 1]]
    assert [u7.reduced_preds(c) for c in range(3)] == [[], [0], [1]]
    assert (u7.think_time(0, 1), u7.think_time(1, 2), u7.think_time(0, 2)) == (8800, 9900, 18800)
    assert [[j.name for j in s.jobs] for s in u9.sessions] == [["1", "3"]]


def test_a0_vs_a60_on_the_same_user() -> None:
    # a0: every job its own session.  User 7: T1 {2} (50, F 150), T2 {4} (1000, F 1200),
    # T3 {5} (10000, F 10100), T4 {6} (20000, F 20050); T2 <- T1 (TT 850), reduced T3 <- T2 (8800),
    # T4 <- T3 (9900).  User 9: {1} (0, F 2000) and {3} (100, F 200) are both roots (2000 > 100).
    g0 = build_graphs(load_trace(SIX), 0)
    u7 = g0["7"]
    assert len(u7.sessions) == 4
    assert u7.nb_preds == [0, 1, 2, 3]
    assert [u7.reduced_preds(c) for c in range(4)] == [[], [0], [1], [2]]
    assert [u7.think_time(c - 1, c) for c in (1, 2, 3)] == [850, 8800, 9900]
    assert g0["9"].nb_preds == [0, 0]
    assert len(build_graphs(load_trace(SIX), 60)["7"].sessions) == 3


def test_threshold_is_inclusive() -> None:
    # inter-arrival exactly the threshold opens a new session (">= threshold")
    jobs = [tj(0, 0, 10), tj(1, 3600, 10), tj(2, 7199, 10)]
    assert [[j.name for j in s.jobs] for s in build_sessions("u", jobs, 3600)] == [["0"], ["1", "2"]]
    # a0 splits simultaneous jobs too
    assert len(build_sessions("u", [tj(0, 5, 10), tj(1, 5, 10)], 0)) == 2


def test_stats_of_the_fixture() -> None:
    st = graph_stats(build_graphs(load_trace(SIX), 60), 60)
    assert (st["users"], st["jobs"], st["sessions"], st["root_edges"]) == (2, 6, 4, 2)
    assert (st["edges_full"], st["edges_reduced"], st["max_arity_reduced"], st["longest_path_sessions"]) == (3, 2, 1, 3)
    # reduced TTs 8800, 9900 s; full TTs 8800, 18800, 9900 s: none < 1 h, all < 10 h
    assert (st["think_time_reduced_lt_1h"], st["think_time_reduced_lt_10h"]) == (0.0, 1.0)
    assert (st["think_time_full_lt_1h"], st["think_time_full_lt_10h"]) == (0.0, 1.0)
    assert st["think_time_reduced_s"]["p50"] == (8800 + 9900) / 2
    st0 = graph_stats(build_graphs(load_trace(SIX), 0), 0)
    # a0: 6 sessions, roots {2}, {1}, {3}; full edges 1 + 2 + 3 = 6, reduced 3; chain of 4 sessions
    assert (st0["sessions"], st0["root_edges"], st0["edges_full"], st0["edges_reduced"]) == (6, 3, 6, 3)
    assert st0["longest_path_sessions"] == 4
    # reduced TTs 850, 8800, 9900: 1 of 3 < 1 h; full TTs 850, 9850, 8800, 19850, 18800, 9900: 1 of 6
    assert st0["think_time_reduced_lt_1h"] == pytest.approx(1 / 3)
    assert st0["think_time_full_lt_1h"] == pytest.approx(1 / 6)


def _brute_force_reduction(g: UserGraph) -> list[set[int]]:
    s = g.sessions
    n = len(s)
    dep = [[p != c and s[p].finish <= s[c].start for c in range(n)] for p in range(n)]
    return [{p for p in range(n) if dep[p][c] and not any(dep[p][q] and dep[q][c] for q in range(n))}
            for c in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_reduction_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    jobs, a = [], 0.0
    for i in range(rng.randint(1, 25)):
        a += rng.choice([0, 0, 10, 500, 4000, 20000])
        jobs.append(tj(i, a, rng.choice([1, 50, 3000, 30000]), wait=rng.choice([0, 0, 100, 9000])))
    for thr in (0, 3600):
        g = UserGraph("u", build_sessions("u", jobs, thr))
        expected = _brute_force_reduction(g)
        for c in range(len(g.sessions)):
            full = {p for p in range(len(g.sessions)) if g.sessions[p].finish <= g.sessions[c].start}
            assert set(g.full_preds(c)) == full
            assert set(g.reduced_preds(c)) == expected[c]


def test_sessions_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s60"
    assert main(["sessions", str(SIX), "-t", "60", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "edges (transitive reduction)" in printed
    g7 = json.loads((out / "users" / "7.json").read_text())
    # fictive root 0 -> session 1 with TT = recorded start 50; then the reduced edges
    assert g7["edges"] == [{"from": 0, "to": 1, "think_time": 50.0}, {"from": 1, "to": 2, "think_time": 8800.0},
                           {"from": 2, "to": 3, "think_time": 9900.0}]
    assert [j["offset"] for j in g7["sessions"][0]["jobs"]] == [0.0, 950.0]
    rows = (out / "sessions.csv").read_text().splitlines()
    assert rows[0] == "user,session,nb_jobs,first_job,start,finish,nb_preds_full,nb_preds_reduced"
    assert "7,3,1,6,20000.000000,20050.000000,2,1" in rows
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sessions"] == 4 and summary["edges_reduced"] == 2
    assert (out / "summary.txt").read_text().startswith("threshold")


def test_sessions_cli_reads_swf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # tiny.swf: users 1 (jobs 1, 3, 6), 2 (jobs 2, 5), 3 (job 4); a0 -> 6 sessions
    assert main(["sessions", str(CLI_TINY), "-t", "0", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "summary.json").read_text())["sessions"] == 6
    assert sorted(p.name for p in (tmp_path / "users").iterdir()) == ["1.json", "2.json", "3.json"]


def test_sessions_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", str(SIX), "-t", "-1", "-o", str(tmp_path)]) == 1
    assert "-t must be >= 0" in capsys.readouterr().err
    nouser = tmp_path / "nouser.json"
    nouser.write_text(json.dumps({"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"}],
                                  "profiles": {"p": {"type": "delay", "delay": 1}}}))
    assert main(["sessions", str(nouser), "-t", "60", "-o", str(tmp_path / "x")]) == 1
    assert "has no 'user' field" in capsys.readouterr().err
