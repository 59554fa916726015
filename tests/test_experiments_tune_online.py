"""experiments/tune_online.py's arithmetic: Impr pooled over resamples and its 10-90 % band (models.md §A)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

PATH = Path(__file__).resolve().parent.parent / "experiments" / "tune_online.py"


@pytest.fixture(scope="module")
def mod():
    spec = importlib.util.spec_from_file_location("tune_online", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(trace: str, column: str, waits: dict[int, tuple[float, int]]) -> list[dict]:
    """Campaign rows: seed -> (mean wait, executed jobs) of EASY(policy) or tuned_easy 'strategy period'."""
    out = []
    for seed, (mean, n) in waits.items():
        row = {"trace": trace, "seed": seed, "status": "ok", "wait.mean": mean, "nb_executed": n}
        if " " in column:
            strategy, period = column.split()
            row.update({"scheduler": "tuned_easy", "options.strategy": strategy, "options.period": period,
                        "options.policy": None})
        else:
            row.update({"scheduler": "easy", "options.policy": column})
        out.append(row)
    return out


def test_impr_is_pooled_over_resamples_with_its_band(mod):
    # W(FCFS) = 100, 300, 600 over three resamples; W(SQF) = 50, 300, 300; W(full day) only on seeds 1, 2
    table = pd.DataFrame(rows("T", "FCFS", {1: (10.0, 10), 2: (30.0, 10), 3: (60.0, 10)})
                         + rows("T", "SQF", {1: (5.0, 10), 2: (15.0, 20), 3: (30.0, 10)})
                         + rows("T", "full day", {1: (20.0, 10), 2: (15.0, 10)})
                         + [{"trace": "T", "seed": 4, "status": "failed", "scheduler": "easy",
                             "options.policy": "FCFS", "wait.mean": None, "nb_executed": None}])
    w = mod.totals(table)
    assert w[("T", "FCFS")] == {1: 100.0, 2: 300.0, 3: 600.0} and w[("T", "SQF")][2] == 300.0
    pooled, lo, hi, n = mod.impr(w, "T", "SQF")
    assert n == 3 and pooled == pytest.approx(100 * (650 - 1000) / 1000)          # -35 %, not the mean of -50, 0, -50
    per = [-50.0, 0.0, -50.0]
    assert (lo, hi) == (pytest.approx(np.percentile(per, 10)), pytest.approx(np.percentile(per, 90)))
    pooled, _, _, n = mod.impr(w, "T", "full day")                                   # paired with FCFS seeds 1, 2
    assert n == 2 and pooled == pytest.approx(100 * (350 - 400) / 400)
    assert mod.impr(w, "T", "LAF") is None
    assert mod.cell(mod.impr(w, "T", "SQF"), -16) == "-35 [-50,-10] / -16"


def test_order_checks_state_each_claim(mod):
    got = {"full week": (-20.0, 0, 0, 3), "noisy week": (-19.0, 0, 0, 3), "bandit week": (-10.0, 0, 0, 3),
           "random week": (-5.0, 0, 0, 3)}
    line = mod.order_checks("T", (-22.0, 0, 0, 3), got)
    assert "week: Full -20.0 (+2.0 pts from best fixed), Noisy -19.0 (≈ Full), Bandit -10.0 (between Random and " \
           "Full), Random -5.0 (better than FCFS)" in line
    assert "day: incomplete" in line


def test_pairs_compare_the_paper_labels_as_printed_and_exchanged(mod, capsys):
    # KTH-SP2 paper: SRF -8, LRF -13.  Ours: SRF -13 %, LRF -8 % (exchanged): distances 10 as printed, 0 exchanged
    table = pd.DataFrame(rows("KTH-SP2", "FCFS", {1: (10.0, 10)}) + rows("KTH-SP2", "SRF", {1: (8.7, 10)})
                         + rows("KTH-SP2", "LRF", {1: (9.2, 10)}))
    mod.print_pairs(mod.totals(table), ["KTH-SP2"])
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("| KTH-SP2")][0]
    assert line == "| KTH-SP2 | - | - | - | 10 / 0 | - |"
