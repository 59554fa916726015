"""Site-level user model fitted from SWF logs (models.md §C [SHM]; users/site_fit.py): a hand-computed
synthetic trace, the p_cont fit on data drawn from a known p_cont, load_model/sample, the CLI and KTH-SP2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from batfeed.users.site_fit import (
    DEFAULT_MODEL,
    FORMAT,
    fit_p_cont,
    fit_site,
    load_model,
    read_trace,
    sample,
    think_table,
)

from batfeed.cli import main
from batfeed.errors import BatfeedError, InputError

MONDAY = 1704067200  # 2024-01-01 00:00:00 UTC, a Monday
# user 1: (submit, wait, run, procs).  J1 ends 1000, J2 (50 < 1000) and J3 (120 < J2's end 150) join its batch;
# J3 ends 210, so J4's think is 510 - 210 = 300 although J1 still runs.  Then thinks 1200 (same session),
# 1201 (break), 0 (submitted exactly at the end: new batch) and 40000 (break, longer than 8 h).
USER1 = [(0, 0, 1000, 4), (50, 0, 100, 4), (120, 30, 60, 4), (510, 0, 60, 8), (1770, 0, 600, 8),
         (3571, 540, 60, 8), (4171, 0, 0, 2), (44171, 0, 10, 2)]
USER2 = [(100, 0, 30, 1), (200, 0, 30, 0), (300, 0, -1, 2)]  # one valid job, two skipped (procs 0, run -1)


def write_swf(path: Path, header: str = f"; UnixStartTime: {MONDAY}\n; TimeZoneString: Europe/Stockholm\n"
              "; MaxProcs: 16\n", users: dict[int, list[tuple]] | None = None) -> Path:
    users = {1: USER1, 2: USER2} if users is None else users
    lines = [header.rstrip("\n")] if header else []
    rows = sorted((s, u, w, r, p) for u, jobs in users.items() for s, w, r, p in jobs)
    for i, (s, u, w, r, p) in enumerate(rows, start=1):
        lines.append(f"{i} {s} {w} {r} {p} -1 -1 {p} 3600 -1 1 {u} 1 -1 -1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_synthetic_trace_hand_computed(tmp_path: Path) -> None:
    st = read_trace(write_swf(tmp_path / "t.swf"))
    assert (st.trace, st.jobs, st.users, st.skipped, st.machine_procs) == ("t", 9, 2, 2, 16)
    assert sorted(st.widths) == [1, 1, 1, 1, 1, 1, 3]         # user 1: [J1 J2 J3] J4 J5 J6 J7 J8; user 2: 1
    assert st.gaps == [50, 70]
    assert st.thinks == [300, 1200, 1201, 0, 40000]            # from the end of J3, not of J1
    assert st.think_resp == [90, 60, 600, 600, 0]
    assert st.think_sd == [1.5, 1.0, 1.0, 10.0, 1.0]           # R / max(run, 1 s), at least 1
    assert (st.negative, st.job_thinks) == (2, 7)               # J1->J2 -950, J2->J3 -30
    assert st.sessions == 3 + 1                                 # user 1: split by 1201 and 40000 (1200 is not)
    assert sorted(st.size_runs) == [1, 2, 3, 3]                 # 4 4 4 | 8 8 8 | 2 2 ; user 2: 1
    # local time = UTC + 1 h: only J8 (12:16 UTC) is in 07:30-17:30; everything on Monday
    assert (st.day, st.weekday) == (1, 9) and st.notes == []


def test_pooled_model_and_think_table(tmp_path: Path) -> None:
    st = read_trace(write_swf(tmp_path / "t.swf"))
    med, cnt = think_table(st.think_resp, st.think_sd, st.thinks)
    assert med[0][1] == 5.0 and cnt[0][1] == 1                  # 300 s after R 1.5 min, SD 1.5
    assert med[0][0] == pytest.approx((20 + 40000 / 60) / 2, abs=1e-3) and cnt[0][0] == 2
    assert med[1][0] == pytest.approx(1201 / 60, abs=1e-3)      # R = 10 min, SD 1
    assert med[1][3] == 0.0                                      # R = 10 min, SD 10
    assert sum(map(sum, cnt)) == 5 and med[4][4] is None
    # boundaries are right-closed: R = 5 min is R1, SD = 2 is S2
    med, cnt = think_table([300, 301], [2.0, 2.01], [60, 120])
    assert cnt[0][1] == 1 and cnt[1][2] == 1
    with pytest.raises(BatfeedError, match="p_cont fit needs"):
        fit_site([st])                                           # too few batches to fit p_cont


def test_activity_boundaries_and_utc_note(tmp_path: Path) -> None:
    sat = 5 * 86400
    jobs = {1: [(27000, 0, 1, 1), (63000, 0, 1, 1), (63001, 0, 1, 1), (27000 + sat, 0, 1, 1)]}
    st = read_trace(write_swf(tmp_path / "u.swf", f"; UnixStartTime: {MONDAY}\n", jobs))
    assert (st.day, st.weekday, st.machine_procs) == (3, 3, 1)  # 07:30:00 and 17:30:00 inside; MaxProcs absent
    assert st.notes == ["no TimeZoneString: local time assumed UTC"]


def test_p_cont_fit_recovers_known_parameters() -> None:
    rng = np.random.default_rng(1)
    r = np.exp(rng.uniform(np.log(0.05), np.log(3000), 300_000))
    cont = rng.random(r.size) < 0.8 / (0.05 * r + 1)
    a, b, bins = fit_p_cont(r, cont)
    assert a == pytest.approx(0.8, abs=0.03) and b == pytest.approx(0.05, rel=0.15)
    assert len(bins) == 20


def test_p_cont_fit_is_the_same_under_every_blas_kernel() -> None:
    """OpenBLAS chooses its dot kernel by CPU; the flat optimum once moved a, b in the 9th digit between
    machines (Haswell vs SkylakeX), so the built-in models did not regenerate on CI's machine."""
    code = ("import numpy as np; from batfeed.users.site_fit import fit_p_cont; rng = np.random.default_rng(1); "
            "r = np.exp(rng.uniform(-3, 8, 50_000)); print(repr(fit_p_cont(r, rng.random(r.size) < 0.8 / "
            "(0.05 * r + 1))[:2]))")
    outs = {core: subprocess.run([sys.executable, "-c", code], env={**os.environ, "OPENBLAS_CORETYPE": core},
                                 capture_output=True, text=True, check=True).stdout
            for core in ("Prescott", "Haswell")}
    assert len(set(outs.values())) == 1, outs


def test_load_model_errors(tmp_path: Path) -> None:
    model = load_model()                                         # the built-in default
    assert model["format"] == FORMAT and DEFAULT_MODEL.is_file()
    # the thesis's pooled logs that ../shared has (models.md §C: SDSC-Par, CTC, KTH, SDSC-SP2, SDSC-BLUE)
    assert [s["trace"] for s in model["sources"]] == ["KTH-SP2-1996-2.1-cln", "SDSC-BLUE-2000-4.2-cln"]
    assert len(model["short_think_s"]["quantiles"]) == 101 and model["machine_procs"] == 1152
    with pytest.raises(InputError, match="format 'x'"):
        load_model({**model, "format": "x"})
    with pytest.raises(InputError, match="missing key 'break_s'"):
        load_model({k: v for k, v in model.items() if k != "break_s"})
    with pytest.raises(InputError, match="'runtime_s' needs 'quantiles'"):
        load_model({**model, "runtime_s": {"quantiles": list(range(101))[::-1]}})
    with pytest.raises(InputError, match="'size' needs 'values' and 'probs'"):
        load_model({**model, "size": {"values": [1, 2], "probs": [0.5, 0.6]}})
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(InputError, match="bad.json: not valid JSON"):
        load_model(bad)
    with pytest.raises(InputError, match="cannot read"):
        load_model(tmp_path / "missing.json")


class FixedRng:
    def random(self, size: int | None = None) -> np.ndarray:
        return np.array([0.255, 0.0, 1.0])


def test_sample_inverse_cdf() -> None:
    dist = {"quantiles": [float(i * i) for i in range(101)]}
    assert list(sample(dist, FixedRng(), 3)) == [650.5, 0.0, 10000.0]   # between q25 = 625 and q26 = 676
    x = sample({"quantiles": list(np.linspace(0, 100, 101))}, np.random.default_rng(0), 20000)
    assert x.mean() == pytest.approx(50, abs=1) and x.min() >= 0 and x.max() <= 100
    rng = np.random.default_rng(0)
    assert isinstance(sample({"quantiles": [1.0] * 101}, rng), float)
    pmf = {"values": [1, 2], "probs": [0.9, 0.1]}
    draws = sample(pmf, rng, 10000)
    assert (draws == 2).mean() == pytest.approx(0.1, abs=0.02) and sample(pmf, rng) in (1, 2)
    with pytest.raises(BatfeedError, match="empty distribution"):
        sample({"quantiles": []}, rng)


# Measured on data/swf/KTH-SP2-1996-2.1-cln.swf.gz (users/site_fit.py, this commit).
def test_kth_measured(kth_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m" / "kth.json"
    assert main(["fit-users", str(kth_trace), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "28475 jobs, 214 users, 1 skipped, machine 100 procs" in text and "thesis a = 0.8, b = 0.05" in text
    m = load_model(out)
    assert set(m) == {"format", "sources", "batch_width", "intra_batch_gap_s", "short_think_s", "break_s", "size",
                      "size_repeat", "runtime_s", "estimate_factor", "machine_procs", "p_cont", "activity",
                      "think_table_min", "runtime_classes", "negative_think_share"}
    assert m["sources"] == [{"trace": "KTH-SP2-1996-2.1-cln", "jobs": 28475, "users": 214, "skipped": 1,
                             "machine_procs": 100}]
    assert m["batch_width"]["probs"][:2] == pytest.approx([0.708, 0.138], abs=0.01)
    assert m["size_repeat"]["probs"][0] == pytest.approx(0.661, abs=0.01)
    assert m["estimate_factor"]["quantiles"][50] > 1                 # users overestimate: median requested/run
    assert m["negative_think_share"] == pytest.approx(0.483, abs=0.01)
    assert m["activity"]["day_share"] == pytest.approx(0.721, abs=0.01)
    assert m["activity"]["weekday_share"] == pytest.approx(0.860, abs=0.01)
    assert list(m["runtime_classes"].values()) == pytest.approx([0.296, 0.181, 0.522], abs=0.01)
    assert m["p_cont"]["a"] == pytest.approx(0.712, abs=0.03) and m["p_cont"]["b"] == pytest.approx(0.0255, abs=0.005)
    assert m["short_think_s"]["quantiles"][50] == pytest.approx(272, abs=10)
    assert m["break_s"]["quantiles"][0] > 1200 and m["break_s"]["quantiles"][100] <= 28800
    vals = m["think_table_min"]["values"]
    assert vals[0][0] == pytest.approx(6.4, abs=0.5) and vals[4][4] == pytest.approx(692, rel=0.05)
    assert json.loads(out.read_text())["think_table_min"]["thesis"][0][0] == 3.6


def test_cli_bad_input_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 4\n1 0 0 10 1\n")
    assert main(["fit-users", str(bad), "-o", str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("batfeed fit-users: error: ") and "bad.swf:2" in err[0]
    assert not (tmp_path / "m.json").exists()
    small = write_swf(tmp_path / "t.swf")
    assert main(["fit-users", str(small), "-o", str(tmp_path / "m.json")]) == 1
    assert "p_cont fit needs" in capsys.readouterr().err


def test_default_model_regenerates_from_the_logs(shared_data: Path) -> None:
    """users/data/site_users_default.json is `batfeed fit-users` on KTH-SP2 and SDSC-BLUE, to the last digit."""
    logs = [shared_data / "swf" / f"{n}.swf.gz" for n in ("KTH-SP2-1996-2.1-cln", "SDSC-BLUE-2000-4.2-cln")]
    if not all(p.is_file() for p in logs):
        pytest.skip("KTH-SP2 or SDSC-BLUE is not in ../shared/data/swf")
    model, _ = fit_site([read_trace(p) for p in logs])
    assert json.loads(json.dumps(model)) == json.loads(DEFAULT_MODEL.read_text())
