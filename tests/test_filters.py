"""The online-tuning paper's extra cleaning (adapters/filters.py) through convert_swf's extra_drop hook."""

from __future__ import annotations

import json
from pathlib import Path

from batfeed.adapters.filters import tune_filter
from batfeed.adapters.swf import convert_swf

HEADER = "; MaxProcs: 8\n"
#        id submit wait run alloc cpu mem req_procs req_time req_mem status user group app queue part prec think
LINES = [
    "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",    # kept
    "2 10 0 100 9 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",   # allocated 9 > 8
    "3 20 0 0 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",     # run time 0
    "4 30 0 100 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1",    # no requested time
    "5 40 0 300 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1",   # request below run time
    "6 50 0 200 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1",   # kept: request == run time
    "7 60 0 100 4 -1 -1 9 200 -1 1 1 1 -1 1 -1 -1 -1",   # requested 9 > 8 (converter's own rule)
]


def test_tune_filter_drops_and_counts(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(HEADER + "\n".join(LINES) + "\n")
    conv = convert_swf(trace, tmp_path / "out", extra_drop=tune_filter)
    assert conv.report["dropped"] == {
        "tune_alloc_larger_than_machine": 1, "tune_runtime_not_positive": 1, "tune_no_requested_time": 1,
        "tune_request_below_runtime": 1, "larger_than_machine": 1,
    }
    assert conv.report["read"] == 7 and conv.report["kept"] == 2
    jobs = json.loads(conv.workload_path.read_text())["jobs"]
    assert [j["id"] for j in jobs] == [1, 6]
    # without the hook the same trace keeps every job the converter itself accepts
    plain = convert_swf(trace, tmp_path / "plain")
    assert plain.report["kept"] == 6 and plain.report["dropped"] == {"larger_than_machine": 1}


def test_convert_swf_filter_tune_switch(tmp_path: Path, capsys) -> None:
    """``batfeed convert swf --filter tune`` = convert_swf(extra_drop=tune_filter), byte for byte."""
    from batfeed.adapters.cli_parser import SWF_FILTERS
    from batfeed.adapters.filters import FILTERS

    from batfeed.cli import main

    assert tuple(FILTERS) == SWF_FILTERS and FILTERS["tune"] is tune_filter
    trace = tmp_path / "t.swf"
    trace.write_text(HEADER + "\n".join(LINES) + "\n")
    api = convert_swf(trace, tmp_path / "api", extra_drop=tune_filter)
    assert main(["convert", "swf", str(trace), "-o", str(tmp_path / "cli"), "--filter", "tune"]) == 0
    assert "tune_request_below_runtime" in capsys.readouterr().out
    assert (tmp_path / "cli" / "t.json").read_bytes() == api.workload_path.read_bytes()
    assert main(["convert", "pbs", str(trace), "-o", str(tmp_path / "pbs"), "--filter", "tune"]) == 1
    assert capsys.readouterr().err == ("batfeed convert: error: option --filter does not apply to format 'pbs' "
                                       "(see batfeed convert pbs --help)\n")
