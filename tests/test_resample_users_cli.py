"""``batfeed resample users``: Zakay & Feitelson's resampling from the command line (users/zf_resample.py)."""

from __future__ import annotations

import json
from pathlib import Path

from batfeed.adapters.swf import convert_swf

from batfeed.cli import main

KTH = Path(__file__).resolve().parent.parent / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def test_resample_users_writes_seeded_traces_and_the_classes(tmp_path: Path, capsys) -> None:
    conv = convert_swf(KTH, tmp_path / "kth")
    out = tmp_path / "r.json"
    args = ["resample", "users", str(conv.workload_path), "--weeks", "8", "--seed", "3", "--count", "2",
            "--classes", str(tmp_path / "classes.json"), "-o", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "long_term: 102 users, 25192 jobs; temporary: 82 users, 3039 jobs; discarded: 30 users, 244 jobs" in text
    first = (tmp_path / "r_seed3.json").read_bytes()
    data = json.loads(first)
    assert data["jobs"] and max(j["subtime"] for j in data["jobs"]) < 8 * 604800
    assert data["batfeed_resample"]["seed"] == 3 and (tmp_path / "r_seed4.json").is_file()
    classes = json.loads((tmp_path / "classes.json").read_text())
    assert classes and "long_term" in json.dumps(classes)
    assert main(args) == 0 and (tmp_path / "r_seed3.json").read_bytes() == first        # deterministic


def test_resample_users_bad_input_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["resample", "users", str(tmp_path / "none.json"), "--seed", "1", "-o", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.json: no such file" in err[0]
    assert main(["resample", "users", str(tmp_path / "none.json"), "--seed", "1", "--load", "-1",
                 "-o", str(tmp_path / "x.json")]) == 1
    assert "--load must be a finite number > 0 (got -1)" in capsys.readouterr().err


def test_resample_users_with_rare_behaviours(tmp_path: Path, capsys) -> None:
    """``--rb-npw``: the detected flurry (user 99's 1,500-job burst, test_campaign_rb.py) leaves the pools and
    comes back whole, its jobs marked ``resampled_rb``; without windows ``--rb-npw`` is a one-line error."""
    from test_campaign_rb import _workload

    src = tmp_path / "w.json"
    src.write_text(json.dumps(_workload()))
    out = tmp_path / "rb.json"
    assert main(["resample", "users", str(src), "--weeks", "30", "--seed", "1", "--rb-npw", "0.3", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "flurry: user 99, 1503 jobs" in text and "rare behaviours: 1 windows, 1503 jobs" in text
    data = json.loads(out.read_text())
    rb = [j for j in data["jobs"] if j.get("resampled_rb")]
    assert rb and len(rb) % 1503 == 0 and {j["resampled_user"] for j in rb} == {99}
    assert data["batfeed_resample"]["rb_arrivals"] == len(rb) // 1503
    conv = convert_swf(KTH, tmp_path / "kth")
    assert main(["resample", "users", str(conv.workload_path), "--weeks", "4", "--seed", "1", "--rb-npw", "0.1",
                 "-o", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs rare-behaviour windows" in err[0]
