"""``batfeed report`` and ``batfeed metrics A B`` (issue 14, item 4): files, figures, labels, seeds, CIs."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_cli, write_inputs
from matplotlib.figure import Figure

from batfeed.cli import main
from batfeed.metrics import compute_metrics
from batfeed.report import write_report
from batfeed.report.data import configurations, find_runs, load_runs
from batfeed.report.gantt import draw_gantt
from batfeed.report.html import seeds_table
from batfeed.report.series import binned_mean
from batfeed.report.stats import mean_ci, t_quantile
from batfeed.runner import run_simulation

FIGURES = ("comparison.png", "cdf.png", "timeline.png", "gantt.png")


def _jobs(n: int = 60) -> list[tuple[int, float, int, float]]:
    rng = np.random.default_rng(3)
    return [(i + 1, float(20 * i), int(rng.integers(1, 7)), float(rng.integers(5, 200))) for i in range(n)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, list[Path]]:
    """Three runs of 60 jobs on 8 machines (FCFS, EASY, EASY-SQF) with their manifests."""
    tmp = tmp_path_factory.mktemp("report_runs")
    from batfeed.platforms.generate import write_homogeneous_platform

    _, workload = write_inputs(tmp, _jobs())
    platform = write_homogeneous_platform(tmp / "p8.xml", 8)
    out = []
    for name, sched, opts in (("a", "fcfs", {}), ("b", "easy", {}), ("c", "easy", {"policy": "SQF"})):
        run_simulation(platform, [workload], scheduler=sched, options=opts, export=tmp / name)
        out.append(tmp / f"{name}_jobs.csv")
    return tmp, out


def test_report_files_pngs_and_html(runs, tmp_path):
    _, jobs = runs
    page = write_report(jobs, tmp_path / "rep", gantt_window=(0.0, 600.0))
    assert page == tmp_path / "rep" / "index.html"
    names = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert names == sorted([*FIGURES, "gantt_window.png", "index.html", "manifests"])
    for name in [*FIGURES, "gantt_window.png"]:
        image = matplotlib.image.imread(tmp_path / "rep" / name)        # a valid PNG, read back
        assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] >= 800, name
        assert image.std() > 0.05, f"{name} looks empty"
    text = page.read_text()
    linked = set(re.findall(r'(?:src|href)="([^"#]+)"', text))
    assert {*FIGURES, "gantt_window.png"} <= linked
    assert all((tmp_path / "rep" / link).is_file() for link in linked)        # nothing dangling
    assert len([x for x in linked if x.startswith("manifests/")]) == 3
    # labels from the manifests: the scheduler and what differs between the runs
    for label in ("fcfs", "easy policy=FCFS", "easy policy=SQF"):
        assert f"<th>{label}</th>" in text
    assert "One run per configuration" in text and "<th>wait (s) mean</th>" not in text
    assert "<td>wait (s) mean</td>" in text and "<h2 id=\"provenance\">" in text
    assert "<script" not in text and len(text) < 60_000
    # the metrics table holds batfeed metrics' numbers
    for path in jobs:
        m = compute_metrics(path)
        assert f'<td class="num">{m["wait"]["mean"]:.3f}</td>' in text
        assert f'<td class="num">{m["bounded_slowdown"]["p90"]:.3f}</td>' in text


def test_report_cli_svg_labels_and_errors(runs, tmp_path, capsys):
    folder, jobs = runs
    proc = run_cli(["report", *map(str, jobs[:2]), "-o", str(tmp_path / "r"), "--svg", "--label", "first",
                    "--label", "second", "--title", "two runs"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"wrote {tmp_path / 'r' / 'index.html'} and its figures\n"
    text = (tmp_path / "r" / "index.html").read_text()
    assert all((tmp_path / "r" / n.replace(".png", ".svg")).is_file() for n in FIGURES)
    assert 'href="comparison.svg"' in text and "<title>two runs</title>" in text
    assert "<th>first</th>" in text and "<th>second</th>" in text
    assert "batfeed report" in text and "--label first" in text          # the command line is shown
    capsys.readouterr()
    assert main(["report", str(jobs[0]), "-o", str(tmp_path / "x"), "--label", "a", "--label", "b"]) == 1
    assert capsys.readouterr().err == "batfeed report: error: 2 --label for 1 runs: give one per run, in order\n"
    assert main(["report", str(jobs[0]), "-o", str(tmp_path / "y"), "--gantt-window", "5"]) == 1
    assert "--gantt-window must be T0:T1 in seconds" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nothing_jobs.csv"), "-o", str(tmp_path / "z")]) == 1
    assert capsys.readouterr().err == f"batfeed report: error: {tmp_path / 'nothing_jobs.csv'}: file not found\n"


def test_without_manifest_the_file_name_labels_the_run(runs, tmp_path):
    _, jobs = runs
    shutil.copy(jobs[0], tmp_path / "plain_jobs.csv")
    (loaded,) = load_runs(find_runs([tmp_path / "plain_jobs.csv"]), warn=lambda m: None)
    assert loaded.label == "plain" and loaded.manifest is None
    assert loaded.metrics["nb_resources_source"] == "inferred"        # no _schedule.csv next to it


def test_confidence_intervals_by_hand():
    # Student t quantiles (tables): df 1, 2, 4, 9, 29
    for df, t in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452)):
        assert t_quantile(0.95, df) == pytest.approx(t, abs=5e-5)
    # 10, 20, 30: mean 20, s = 10, half-width t(0.975, 2) * 10 / sqrt(3) = 24.841
    mean, half = mean_ci([10, 20, 30])
    assert mean == 20 and half == pytest.approx(4.302653 * 10 / math.sqrt(3), rel=1e-6)
    assert mean_ci([5.0]) == (5.0, None) and mean_ci([]) == (None, None)


def _one_job_run(folder: Path, name: str, wait: float, manifest: dict, seed: int) -> Path:
    """A _jobs.csv of one job waiting ``wait`` s, with ``manifest`` (seed replaced) next to it."""
    row = {"job_id": "1", "workload_name": "w0", "profile": "d10", "submission_time": 0.0,
           "requested_number_of_resources": 1, "requested_time": 100.0, "success": 1,
           "final_state": "COMPLETED_SUCCESSFULLY", "starting_time": wait, "execution_time": 10.0,
           "finish_time": wait + 10, "waiting_time": wait, "turnaround_time": wait + 10,
           "stretch": (wait + 10) / 10, "allocated_resources": "0", "consumed_energy": -1.0, "metadata": ""}
    pd.DataFrame([row]).to_csv(folder / f"{name}_jobs.csv", index=False)
    (folder / f"{name}_manifest.json").write_text(json.dumps({**manifest, "seed": seed}))
    return folder / f"{name}_jobs.csv"


def test_runs_differing_only_by_seed_form_one_configuration(runs, tmp_path):
    folder, _ = runs
    manifest = json.loads((folder / "b_manifest.json").read_text())
    jobs = [_one_job_run(tmp_path, f"s{k}", w, manifest, k) for k, w in ((1, 10.0), (2, 20.0), (3, 30.0))]
    other = _one_job_run(tmp_path, "fcfs", 5.0, json.loads((folder / "a_manifest.json").read_text()), 1)
    loaded = load_runs(find_runs([*jobs, other]), nb_resources=2)
    configs = configurations(loaded)
    assert [(c.label, c.seeds) for c in configs] == [("easy", [1, 2, 3]), ("fcfs", [1])]
    assert [r.label for r in loaded] == ["easy seed=1", "easy seed=2", "easy seed=3", "fcfs"]
    table = seeds_table(configs, [("mean wait", ("wait", "mean"), "time")])
    assert "<td>easy</td><td class=\"num\">3</td><td class=\"num\">20 ± 24.8</td>" in table
    assert "<td>fcfs</td><td class=\"num\">1</td><td class=\"num\">5</td>" in table      # one seed: no interval
    page = write_report([*jobs, other], tmp_path / "rep", nb_resources=2).read_text()
    assert "95 % confidence interval of the mean (Student t" in page
    assert "A configuration with one run has no interval." in page


def test_gantt_aggregates_above_the_threshold(runs):
    _, jobs = runs
    frame = pd.read_csv(jobs[1], dtype={"allocated_resources": str, "metadata": str}, keep_default_na=False,
                        na_values={"starting_time": [""], "finish_time": [""]})
    window = (0.0, float(frame["finish_time"].max()))
    for max_jobs, aggregated in ((len(frame), False), (len(frame) - 1, True)):
        fig = Figure()
        ax = fig.subplots()
        note = draw_gantt(fig, ax, frame, 8, window, 1.0, max_jobs)
        assert ("aggregated" in note) is aggregated
        assert bool(ax.images) is aggregated and bool(ax.collections) is not aggregated
        if aggregated:   # the heat map's mean busy fraction is the utilisation over its bins
            heat = ax.images[0].get_array()
            assert 0 < float(heat.mean()) <= 1


def test_binned_mean_is_an_exact_time_average():
    edges = np.array([0.0, 10, 20, 30])
    got = binned_mean(np.array([5.0, 0, 25]), np.array([15.0, 30, 26]), np.array([2.0, 1, 4]), edges)
    assert got.tolist() == pytest.approx([2.0, 2.0, 1.4])


def test_campaign_folder(runs, tmp_path):
    folder, jobs = runs
    camp = tmp_path / "camp"
    for name in "abc":
        (camp / "runs" / name).mkdir(parents=True)
        for suffix in ("_jobs.csv", "_manifest.json", "_schedule.csv"):
            shutil.copy(folder / f"{name}{suffix}", camp / "runs" / name / f"run{suffix}")
    rows = [("fcfs", None, "a", 1, False, "ok"), ("fcfs", None, "a", 2, False, "ok"),   # an unused seed: one run
            ("easy", "FCFS", "b", 1, False, "ok"), ("easy", "SQF", "c", 1, False, "ok"),
            ("easy", "LPF", "missing", 1, False, "failed")]
    pd.DataFrame([{"run": i, "trace": "t", "platform": "trace", "scheduler": s, "options.policy": p, "users": "none",
                   "seed": seed, "seed_used": used, "status": status, "jobs_csv": f"runs/{d}/run_jobs.csv",
                   "manifest": f"runs/{d}/run_manifest.json"}
                  for i, (s, p, d, seed, used, status) in enumerate(rows)]).to_csv(camp / "results.csv", index=False)
    loaded = load_runs(find_runs([camp]))
    assert [r.label for r in loaded] == ["fcfs", "easy policy=FCFS", "easy policy=SQF"]
    assert all(r.manifest is not None and r.metrics["nb_resources"] == 8 for r in loaded)
    page = write_report([camp], tmp_path / "rep").read_text()
    assert "<th>easy policy=SQF</th>" in page


def test_metrics_of_several_files_side_by_side(runs, tmp_path):
    _, jobs = runs
    proc = run_cli(["metrics", str(jobs[0]), str(jobs[1])], tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    header = lines[0]
    assert header.split() == ["metric", "a", "b"] and header.startswith("metric ")
    jobs_row = next(x for x in lines if x.startswith("jobs "))
    assert jobs_row.split() == ["jobs", "60", "60"]
    # right-aligned columns: each value ends where its name ends
    assert [m.end() for m in re.finditer(r"\S+", header)][1:] == [m.end() for m in re.finditer(r"\S+", jobs_row)][1:]
    assert re.search(r"^wait \(s\) mean +\d+\.\d{3} +\d+\.\d{3}$", proc.stdout, re.M)
    assert re.search(r"^a: .*a_jobs\.csv; N 8 \(from .*a_schedule\.csv nb_computing_machines\)", proc.stdout, re.M)
    data = json.loads(run_cli(["metrics", str(jobs[0]), str(jobs[1]), "--json"], tmp_path).stdout)
    assert list(data) == ["a", "b"] and data["a"]["nb_jobs"] == 60 and data["b"]["nb_resources"] == 8


def test_the_committed_kth_example_is_complete_and_small():
    root = Path(__file__).resolve().parent.parent / "docs" / "examples" / "kth-sp2"
    text = (root / "index.html").read_text()
    linked = set(re.findall(r'(?:src|href)="([^"#]+)"', text))
    assert {*FIGURES, "gantt_window.png"} <= linked and all((root / x).is_file() for x in linked)
    for label in ("FCFS", "EASY-FCFS", "EASY-SQF", "conservative"):
        assert f"<th>{label}</th>" in text
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 400_000
    script = (root.parent / "make_kth_report.sh").read_text()
    assert "--gantt-window 8640000:8812800 -o docs/examples/kth-sp2" in script
