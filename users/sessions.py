"""User sessions and their dependency graph (Madon, Da Costa, Pierson, *Replay with Feedback*;
models.md §D).

**Sessions.**  Per user, jobs in trace order (submit, then id); a job opens a new session when the
inter-arrival from the user's previous job is **≥ threshold** (a0: 0 min, so every job is its own
session; a60: 60 min).  Session s = (j_n … j_m): start a_n, recorded finish F_s = max f_i with
f_i = a_i + wait_i + d_i, intra-session offsets ã_i = a_i − a_n.

**Dependencies.**  s' depends on s iff F_s ≤ a_n' (every job of s finished before s' started), with
think time TT(s→s') = a_n' − F_s ≥ 0.  Because every session ends after it starts (d ≥ 1 s), such an
s always started before s', so the relation only points from earlier sessions and is transitive
(F_p ≤ a_q < F_q ≤ a_c): the predecessors of c are exactly the k_c sessions with the smallest
recorded finish, k_c = #{p : F_p ≤ a_c} — a prefix of the user's sessions sorted by finish.  A
**fictive root** (session 0) links every session without predecessor with TT = its recorded start
(absolute, from the trace origin), so the first sessions replay at their recorded times.

**Transitive reduction** (UNDEF in the paper → our choice).  p → c is kept iff no q with
p → q → c, i.e. iff F_p > max{a_q : q predecessor of c}; the kept predecessors are the suffix of c's
prefix whose finish is later than the latest start in it (computed with one bisection, never by
enumerating the full relation, which has 9.1 million edges for KTH-SP2 a0).  "Arity" = out-degree
in the reduced graph (root excluded).  The replay (:mod:`batfeed.users.feedback`) uses the reduced
graph by default (its statistics and replay results match the paper's) and the full relation on
request; the two differ when a replayed session is shorter than recorded (see feedback.py).
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batfeed.users.trace import Trace, TraceJob

from batfeed.errors import InputError

HOUR = 3600.0


@dataclass(slots=True)
class Session:
    user: str
    number: int                  # 1, 2, … in start order within the user (0 is the fictive root)
    jobs: list[TraceJob]
    start: float                 # a_n, recorded submit of the first job
    finish: float                # F_s = max recorded finish of its jobs

    def offsets(self) -> list[float]:
        return [j.subtime - self.start for j in self.jobs]


@dataclass
class UserGraph:
    """Sessions of one user (start order) and their dependency relation."""

    user: str
    sessions: list[Session]
    finish_order: list[int] = field(default_factory=list)   # session indices sorted by (finish, index)
    finishes: list[float] = field(default_factory=list)     # F in finish order
    nb_preds: list[int] = field(default_factory=list)       # k_c: full-relation predecessors of c
    latest_start: list[float] = field(default_factory=list)  # [k]: max start among the first k in finish order

    def __post_init__(self) -> None:
        s = self.sessions
        self.finish_order = sorted(range(len(s)), key=lambda i: (s[i].finish, i))
        self.finishes = [s[i].finish for i in self.finish_order]
        self.nb_preds = [bisect.bisect_right(self.finishes, x.start) for x in s]
        top = -math.inf
        self.latest_start = [top]
        for i in self.finish_order:
            top = max(top, s[i].start)
            self.latest_start.append(top)

    def full_preds(self, c: int) -> list[int]:
        """Every session that finished (recorded) before session c started."""
        return self.finish_order[:self.nb_preds[c]]

    def reduced_preds(self, c: int) -> list[int]:
        """Predecessors kept by the transitive reduction (see the module docstring)."""
        k = self.nb_preds[c]
        if k == 0:
            return []
        lo = bisect.bisect_right(self.finishes, self.latest_start[k], 0, k)
        return self.finish_order[lo:k]

    def think_time(self, p: int, c: int) -> float:
        return self.sessions[c].start - self.sessions[p].finish


def build_sessions(user: str, jobs: Sequence[TraceJob], threshold_s: float) -> list[Session]:
    """Split one user's jobs (trace order) into sessions; a new one when inter-arrival ≥ threshold."""
    if threshold_s < 0:
        raise ValueError(f"the session threshold must be >= 0, got {threshold_s}")
    sessions: list[Session] = []
    prev: float | None = None
    for j in jobs:
        if math.isnan(j.runtime):
            raise InputError(f"job {j.name}: sessions need the recorded run time, i.e. a 'delay' profile "
                             f"(profile '{j.profile_name}' is {j.profile.get('type')})")
        if prev is None or j.subtime - prev >= threshold_s:
            sessions.append(Session(user, len(sessions) + 1, [j], j.subtime, j.finish))
        else:
            s = sessions[-1]
            s.jobs.append(j)
            s.finish = max(s.finish, j.finish)
        prev = j.subtime
    return sessions


def build_graphs(trace: Trace, threshold_min: float) -> dict[str, UserGraph]:
    """One :class:`UserGraph` per user, users in order of their first job."""
    return {u: UserGraph(u, build_sessions(u, jobs, threshold_min * 60.0)) for u, jobs in trace.by_user().items()}


# --------------------------------------------------------------------------- statistics


def _quantiles(values: list[float], qs: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {f"p{int(q * 100)}": None for q in qs}
    v = sorted(values)
    out = {}
    for q in qs:   # linear interpolation between closest ranks (numpy's default)
        pos = q * (len(v) - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, len(v) - 1)
        out[f"p{int(q * 100)}"] = v[lo] + (v[hi] - v[lo]) * (pos - lo)
    return out


def graph_stats(graphs: dict[str, UserGraph], threshold_min: float) -> dict[str, Any]:
    """Summary statistics (sessions, edges full/reduced, arity, longest path, think times)."""
    nb_jobs = nb_sessions = full_edges = full_lt1 = full_lt10 = root_edges = 0
    reduced_tt: list[float] = []
    max_arity = 0
    longest = 0
    per_user_sessions = []
    for g in graphs.values():
        n = len(g.sessions)
        nb_sessions += n
        per_user_sessions.append(n)
        nb_jobs += sum(len(s.jobs) for s in g.sessions)
        out_deg = [0] * n
        depth = [0] * n
        for c, s in enumerate(g.sessions):
            k = g.nb_preds[c]
            full_edges += k
            # full-relation edges with TT < x h: predecessors with F_p > a_c - x (a suffix of the prefix)
            full_lt1 += k - bisect.bisect_right(g.finishes, s.start - HOUR, 0, k)
            full_lt10 += k - bisect.bisect_right(g.finishes, s.start - 10 * HOUR, 0, k)
            preds = g.reduced_preds(c)
            if not preds:
                root_edges += 1
                depth[c] = 1
            for p in preds:
                out_deg[p] += 1
                reduced_tt.append(g.think_time(p, c))
                depth[c] = max(depth[c], depth[p] + 1)
        if n:
            max_arity = max(max_arity, max(out_deg))
            longest = max(longest, max(depth))
    nr = len(reduced_tt)

    def frac(count: int, total: int) -> float | None:
        return count / total if total else None

    return {
        "threshold_min": threshold_min,
        "users": len(graphs),
        "jobs": nb_jobs,
        "sessions": nb_sessions,
        "sessions_per_user": {"mean": nb_sessions / len(graphs) if graphs else None,
                              "max": max(per_user_sessions, default=None)},
        "jobs_per_session": nb_jobs / nb_sessions if nb_sessions else None,
        "root_edges": root_edges,
        "edges_full": full_edges,
        "edges_reduced": nr,
        "max_arity_reduced": max_arity,
        "longest_path_sessions": longest,
        "think_time_reduced_s": _quantiles(reduced_tt, (0.1, 0.25, 0.5, 0.75, 0.9)),
        "think_time_reduced_lt_1h": frac(sum(1 for t in reduced_tt if t < HOUR), nr),
        "think_time_reduced_lt_10h": frac(sum(1 for t in reduced_tt if t < 10 * HOUR), nr),
        "think_time_full_lt_1h": frac(full_lt1, full_edges),
        "think_time_full_lt_10h": frac(full_lt10, full_edges),
        "note": ("edges exclude the fictive root (root_edges = sessions without predecessor); arity = max "
                 "out-degree of the transitively reduced graph; longest path counts sessions; think times "
                 "TT = next session start - recorded finish of the predecessor session"),
    }


def format_stats(st: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f} %"

    def hours(x: float | None) -> str:
        return "-" if x is None else f"{x / HOUR:.2f} h"

    tt = st["think_time_reduced_s"]
    rows = [
        ("threshold", f"{st['threshold_min']:g} min"),
        ("users / jobs", f"{st['users']} / {st['jobs']}" + (
            f" (of {conv['read']} SWF records: {conv['read'] - conv['kept']} dropped by the conversion)"
            if (conv := st.get("conversion")) else "")),
        ("sessions", f"{st['sessions']} (mean {st['sessions_per_user']['mean']:.1f} per user, "
                     f"max {st['sessions_per_user']['max']}; {st['jobs_per_session']:.2f} jobs per session)"
         if st["sessions"] else "0"),
        ("sessions without predecessor", str(st["root_edges"])),
        ("edges (full relation)", str(st["edges_full"])),
        ("edges (transitive reduction)", str(st["edges_reduced"])),
        ("max arity (reduced out-degree)", str(st["max_arity_reduced"])),
        ("longest path (sessions)", str(st["longest_path_sessions"])),
        ("think time, reduced edges p10/p50/p90",
         f"{hours(tt['p10'])} / {hours(tt['p50'])} / {hours(tt['p90'])}"),
        ("  < 1 h / < 10 h (reduced)", f"{pct(st['think_time_reduced_lt_1h'])} / "
                                       f"{pct(st['think_time_reduced_lt_10h'])}"),
        ("  < 1 h / < 10 h (full relation)", f"{pct(st['think_time_full_lt_1h'])} / "
                                             f"{pct(st['think_time_full_lt_10h'])}"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)


# --------------------------------------------------------------------------- files


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def user_graph_json(g: UserGraph, threshold_min: float) -> dict[str, Any]:
    sessions = [{
        "session": i + 1, "start": s.start, "finish": s.finish, "nb_preds_full": g.nb_preds[i],
        "jobs": [{"id": j.name, "offset": j.subtime - s.start, "subtime": j.subtime, "finish": j.finish}
                 for j in s.jobs],
    } for i, s in enumerate(g.sessions)]
    edges = []
    for c, s in enumerate(g.sessions):
        preds = g.reduced_preds(c)
        if not preds:
            edges.append({"from": 0, "to": c + 1, "think_time": s.start})
        edges += [{"from": p + 1, "to": c + 1, "think_time": g.think_time(p, c)} for p in preds]
    return {"user": g.user, "threshold_min": threshold_min, "root": 0, "sessions": sessions, "edges": edges,
            "note": "edges = transitive reduction + fictive root 0 (think_time = recorded start); the full "
                    "relation is p -> c iff finish_p <= start_c"}


def write_sessions(trace: Trace, threshold_min: float, out_dir: str | Path) -> dict[str, Any]:
    """Write ``users/<user>.json`` graphs, ``sessions.csv`` and ``summary.json``/``summary.txt``."""
    graphs = build_graphs(trace, threshold_min)
    out = Path(out_dir)
    (out / "users").mkdir(parents=True, exist_ok=True)
    with (out / "sessions.csv").open("w", encoding="utf-8") as f:
        f.write("user,session,nb_jobs,first_job,start,finish,nb_preds_full,nb_preds_reduced\n")
        for g in graphs.values():
            for i, s in enumerate(g.sessions):
                f.write(f"{g.user},{i + 1},{len(s.jobs)},{s.jobs[0].name},{s.start:.6f},{s.finish:.6f},"
                        f"{g.nb_preds[i]},{len(g.reduced_preds(i))}\n")
    for g in graphs.values():
        (out / "users" / f"{_safe(g.user)}.json").write_text(json.dumps(user_graph_json(g, threshold_min)) + "\n",
                                                           encoding="utf-8")
    stats = graph_stats(graphs, threshold_min)
    stats["trace"] = trace.path
    if trace.conversion is not None:  # an SWF converted on the fly: what its cleaning dropped
        stats["conversion"] = {k: trace.conversion[k] for k in ("read", "kept", "dropped")}
    (out / "summary.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    (out / "summary.txt").write_text(format_stats(stats) + "\n", encoding="utf-8")
    return stats
