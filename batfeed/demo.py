"""The README demo: KTH-SP2 (Parallel Workloads Archive) -> Batsim inputs -> FCFS on the engine -> metrics."""

from __future__ import annotations

import json
from pathlib import Path

from batfeed.adapters.swf import convert_swf, format_report
from batfeed.errors import BatfeedError
from batfeed.metrics import compute_metrics, format_metrics
from batfeed.runner import run_simulation

REPO = Path(__file__).resolve().parent.parent
TRACE = "KTH-SP2-1996-2.1-cln.swf.gz"
KTH = REPO / "data" / "swf" / TRACE


def kth_trace() -> Path:
    """The demo trace: package data of an installed batfeed (``batfeed/data/swf``, see pyproject.toml),
    else the checkout's ``data/swf`` (editable install)."""
    from importlib.resources import files

    for candidate in (files("batfeed") / "data" / "swf" / TRACE, KTH):
        if candidate.is_file():
            return Path(str(candidate))
    raise BatfeedError(f"the demo trace {TRACE} is missing (neither batfeed/data/swf nor {KTH.parent}): reinstall "
                       "batfeed")


def run_demo(out: Path, jobs: int | None = None) -> int:
    trace = kth_trace()
    out.mkdir(parents=True, exist_ok=True)
    print(f"1/3 converting {trace.name} (KTH IBM SP2, 100 processors; Parallel Workloads Archive)")
    conv = convert_swf(trace, out / "inputs")
    print(format_report(conv.report))
    workload = conv.workload_path
    if jobs is not None:
        data = json.loads(workload.read_text())
        data["jobs"] = data["jobs"][:jobs]
        used = {j["profile"] for j in data["jobs"]}
        data["profiles"] = {k: v for k, v in data["profiles"].items() if k in used}
        workload = out / "inputs" / f"kth_first_{jobs}.json"
        workload.write_text(json.dumps(data))
    print("2/3 simulating with FCFS on the embedded Batsim-compatible engine")
    result = run_simulation(conv.platform_path, [workload], scheduler="fcfs", export=out / "fcfs", progress=True)
    c = result.counts
    print(f"    {c['submitted']} jobs in {result.wall_time:.2f} s wall -> {result.jobs_csv}")
    print("3/3 metrics")
    print(format_metrics(compute_metrics(result.jobs_csv, nb_resources=conv.nb_res)))
    return 0
