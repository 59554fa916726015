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
    assert "--load must be >= 0" in capsys.readouterr().err
