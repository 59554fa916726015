"""The README demo: KTH-SP2 (Parallel Workloads Archive) -> Batsim inputs -> FCFS on the engine -> metrics."""

from __future__ import annotations

import json
from pathlib import Path

from batfeed.adapters.swf import convert_swf, format_report
from batfeed.metrics import compute_metrics, format_metrics
from batfeed.runner import run_simulation

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def run_demo(out: Path, jobs: int | None = None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    print(f"1/3 converting {KTH.name} (KTH IBM SP2, 100 processors; Parallel Workloads Archive)")
    conv = convert_swf(KTH, out / "inputs")
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
