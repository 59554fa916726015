"""Maui's shortcuts change no decision (issue 27): the skipped priority re-sort (schedulers/maui_order.py),
the counted reservation and its memo (maui_nodes.py ``Plan._earliest_counts``, ``Plan.starting``) and the
union pick (maui_pick.py) against the general code they stand for, on random small workloads."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from batfeed.schedulers.maui import Maui
from batfeed.schedulers.maui_nodes import Plan, highest
from batfeed.schedulers.maui_pick import pick_union
from batfeed.schedulers.resources import FreeMachines, Intervals, count, lowest, union
from hypothesis import given
from hypothesis import strategies as st
from test_backfill_properties import PROPS, run_on, workload_st


class WalkPlan(Plan):
    """Every reservation by the general event walk (no counting, no memo)."""

    def earliest(self, q: int, p: float, now: float, allowed: Intervals | None) -> tuple[float, Intervals]:
        return self._earliest_walk(q, p, now, allowed)


def _cfg(text: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write(text)
    return f.name


@PROPS
@given(workload_st, st.sampled_from([None, 5]), st.sampled_from(["LASTAVAILABLE", "FIRSTAVAILABLE"]),
       st.sampled_from(["FIRSTFIT", "BESTFIT"]))
def test_shortcuts_take_the_general_decisions(jobs, interval, alloc, policy):
    cfg = _cfg(f"NODEALLOCATIONPOLICY {alloc}\nBACKFILLPOLICY {policy}\n")
    try:
        fast = Maui({"interval": interval, "config": cfg})
        slow = Maui({"interval": interval, "config": cfg})
        slow.order.off()               # re-sort at every iteration
        slow.plan = WalkPlan()
        assert run_on(jobs, fast, "fast") == run_on(jobs, slow, "slow")
    finally:
        Path(cfg).unlink()


def test_pick_union_is_the_pick_of_the_union():
    rng = random.Random(27)
    for _ in range(3000):
        n = rng.randint(1, 50)
        owner = [rng.choice("fe.") for _ in range(n)]
        free = FreeMachines(0)
        free.release(union([(i, i) for i in range(n) if owner[i] == "f"], []))
        extra: Intervals = []        # the others in pieces, some adjacent, in any order
        i = 0
        while i < n:
            if owner[i] == "e":
                j = i
                while j + 1 < n and owner[j + 1] == "e" and rng.random() < 0.6:
                    j += 1
                extra.append((i, j))
                i = j + 1
            else:
                i += 1
        rng.shuffle(extra)
        every = union(free.intervals(), extra)
        q = rng.randint(1, count(every) + 1)
        assert pick_union(free, list(extra), q, False) == highest(every, q)
        assert pick_union(free, list(extra), q, True) == lowest(every, q)
