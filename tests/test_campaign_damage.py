"""Damaged campaign folders are never trusted silently, and specs that would fail every run are refused
(issue 25, classes 1 and 2).

Each damage is made to a copy of one small campaign folder (2 traces × 2 schedulers on a generated
platform: a shaken trace, a resampled one), then the real CLI runs on it as a user would: the campaign
redoes what is damaged with one warning line naming the file, and ``batfeed report`` refuses a damaged
table or run with one line naming the file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import error_line, run_cli

from batfeed.campaign import CampaignError, load_spec
from batfeed.campaign.inputs import convert_trace
from batfeed.errors import InputError
from batfeed.report.data import find_runs

KTH200 = Path(__file__).resolve().parent / "data" / "batsim_golden" / "kth200.json"
SPEC = f"""name = "damage"
seeds = [1]
platforms = [{{nb_machines = 128}}]
metrics = ["nb_jobs", "wait.mean"]

[[traces]]
name = "k"
path = "{KTH200}"
max_jobs = 50
shake = 60

[[traces]]
name = "r"
path = "KTH-SP2"
max_jobs = 1500
resample_weeks = 1

[[schedulers]]
name = "fcfs"

[[schedulers]]
name = "easy"
"""
WARNING = "batfeed campaign: warning: "


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The campaign, run once by the CLI: ``ref/`` next to its ``damage.toml``."""
    base = tmp_path_factory.mktemp("damage").resolve()
    (base / "damage.toml").write_text(SPEC, encoding="utf-8")
    proc = run_cli(["campaign", "damage.toml", "-o", str(base / "ref"), "--workers", "1", "--no-progress"], base)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return base / "ref"


def copy(reference: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(reference, tmp_path.resolve() / "c"))


def table(root: Path) -> pd.DataFrame:
    return pd.read_csv(root / "results.csv").drop(columns=["wall_s"])


def keys(root: Path) -> dict[tuple[str, str], str]:
    """(trace, scheduler) -> run key."""
    t = table(root)
    return {(tr, s): k for tr, s, k in zip(t["trace"], t["scheduler"], t["key"], strict=True)}


def campaign(reference: Path, root: Path) -> tuple[list[str], str]:
    """Run the campaign again into ``root``: its warning lines (exit 0, no traceback) and stdout."""
    spec = reference.parent / "damage.toml"
    proc = run_cli(["campaign", str(spec), "-o", str(root), "--workers", "1", "--no-progress"], reference.parent)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert all(line.startswith(WARNING) for line in lines), proc.stderr
    return [line.removeprefix(WARNING) for line in lines], proc.stdout


def remove_runs(root: Path, *which: tuple[str, str]) -> None:
    for key in (keys(root)[w] for w in which):
        shutil.rmtree(root / "runs" / key)


# --------------------------------------------------------------------------- runs/KEY/result.json

def test_record_of_another_run_is_redone(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    k = keys(root)
    key, other = k[("r", "easy")], k[("r", "fcfs")]
    shutil.copy(root / "runs" / other / "result.json", root / "runs" / key / "result.json")
    notes, out = campaign(reference, root)
    assert notes == [f"{root}/runs/{key}/result.json: record of run {other}, not {key}: run redone"]
    assert "3 runs reused" in out and "1 to run" in out
    assert json.loads((root / "runs" / key / "result.json").read_text())["key"] == key
    pd.testing.assert_frame_equal(table(root), table(reference))
    assert table(root).set_index("key").loc[key, "wait.mean"] != table(root).set_index("key").loc[other, "wait.mean"]


def test_unsound_records_are_redone(reference: Path, tmp_path: Path) -> None:
    """Cut short, status ok without metrics, no result.json at all: each run redone, one line each."""
    root = copy(reference, tmp_path)
    k = keys(root)
    cut, bare, empty = (k[("r", "easy")], k[("k", "fcfs")], k[("k", "easy")])
    path = root / "runs" / cut / "result.json"
    path.write_bytes(path.read_bytes()[:100])
    path = root / "runs" / bare / "result.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "metrics"}))
    (root / "runs" / empty / "result.json").unlink()
    notes, out = campaign(reference, root)
    order = {key: i for i, key in enumerate(table(root)["key"])}
    assert sorted(notes, key=lambda n: order[n.split("/runs/")[1][:16]]) == [
        f"{root}/runs/{bare}/result.json: status ok without metrics: run redone",
        f"{root}/runs/{empty}: no result.json (an incomplete run): run redone",
        f"{root}/runs/{cut}/result.json: not valid JSON (Unterminated string starting at: line 5 column 14 "
        "(char 79)): run redone"]
    assert "1 runs reused" in out
    pd.testing.assert_frame_equal(table(root), table(reference))


def test_dry_run_says_which_runs_it_would_redo_and_changes_nothing(reference: Path, tmp_path: Path) -> None:
    from batfeed.campaign import run_campaign

    root = copy(reference, tmp_path)
    k = keys(root)
    key, other = k[("k", "easy")], k[("k", "fcfs")]
    shutil.copy(root / "runs" / other / "result.json", root / "runs" / key / "result.json")
    said: list[str] = []
    out = run_campaign(reference.parent / "damage.toml", root, dry_run=True, warn=said.append)
    assert said == [f"{root}/runs/{key}/result.json: record of run {other}, not {key}: run to redo"]
    assert out.set_index("key").loc[key, "status"] == "pending"
    assert json.loads((root / "runs" / key / "result.json").read_text())["key"] == other     # left as it was


# --------------------------------------------------------------------------- inputs/

def test_damaged_conversions_are_redone(reference: Path, tmp_path: Path) -> None:
    """A cut conversion.json (it stopped every invocation with an anonymous JSON error) and a converted
    workload gone: each conversion is moved away and made again, with one line naming the file."""
    root = copy(reference, tmp_path)
    remove_runs(root, ("k", "fcfs"), ("r", "easy"))
    convs = {json.loads((p / "conversion.json").read_text())["name"]: p
             for p in (root / "inputs").iterdir() if (p / "conversion.json").is_file()}
    meta = convs["k"] / "conversion.json"
    meta.write_bytes(meta.read_bytes()[:30])
    (convs["r"] / "workload.json").unlink()
    notes, _ = campaign(reference, root)
    assert sorted(notes) == sorted([
        f"{meta}: not valid JSON (Unterminated string starting at: line 2 column 15 (char 16)): conversion redone",
        f"{convs['r']}/workload.json: missing (named by conversion.json): conversion redone"])
    assert json.loads(meta.read_text())["name"] == "k" and (convs["r"] / "workload.json").is_file()
    pd.testing.assert_frame_equal(table(root), table(reference))


def test_tampered_converted_workload_is_converted_again(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    remove_runs(root, ("r", "fcfs"))
    (conv,) = [p for p in (root / "inputs").iterdir() if (p / "workload_report.json").is_file()]
    workload = conv / "workload.json"
    workload.write_bytes(workload.read_bytes()[:1000])
    notes, _ = campaign(reference, root)
    assert notes == [f"{workload}: not the file converted (its SHA-256 differs from conversion.json's): "
                     "conversion redone"]
    pd.testing.assert_frame_equal(table(root), table(reference))


def test_damaged_shaken_and_resampled_workloads_are_made_again(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    remove_runs(root, ("k", "fcfs"), ("r", "fcfs"))
    # each cached workload has its SHA-256 beside it (dest.sha256), checked at reuse: hashing, not parsing
    (shaken,) = (p for p in (root / "inputs" / "shaken").iterdir() if not p.name.endswith(".sha256"))
    (derived,) = (p for p in (root / "inputs" / "derived").iterdir() if not p.name.endswith(".sha256"))
    sums = {p: p.with_name(p.name + ".sha256") for p in (shaken, derived)}
    assert all(side.read_text().strip() == hashlib.sha256(p.read_bytes()).hexdigest() for p, side in sums.items())
    shaken.write_bytes(shaken.read_bytes()[:1000])
    derived.write_bytes(derived.read_bytes()[:1000])
    sums[derived].unlink()                                  # no record (made before it was kept): parsed instead
    notes, _ = campaign(reference, root)
    assert len(notes) == 2           # in dispatch order (the largest workload first, execute.longest_first)
    assert sorted(notes) == sorted([
        f"{shaken}: not the workload made here (its SHA-256 differs from {sums[shaken].name}'s): workload made again",
        f"{derived}: cannot read: Compressed file ended before the end-of-stream marker was reached: workload "
        "made again"])
    with gzip.open(derived, "rt") as fh:
        assert json.load(fh)["jobs"]
    assert all(side.read_text().strip() == hashlib.sha256(p.read_bytes()).hexdigest() for p, side in sums.items())
    pd.testing.assert_frame_equal(table(root), table(reference))
    recorded = [json.loads((root / "runs" / keys(root)[w] / "result.json").read_text()).get("notes")
                for w in (("k", "fcfs"), ("r", "fcfs"))]
    assert recorded == [[n] for n in sorted(notes, key=lambda n: "/derived/" in n)]  # the run that made it says so


def test_damaged_generated_platform_is_made_again(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    remove_runs(root, ("k", "easy"))
    platform = root / "inputs" / "platforms" / "n128.xml"
    good = platform.read_bytes()
    platform.write_bytes(good[:1000])
    notes, _ = campaign(reference, root)
    assert len(notes) == 1
    assert re.fullmatch(rf"{re.escape(str(platform))}: not a platform XML \(unclosed token: line \d+, column \d+\): "
                        r"platform made again", notes[0]), notes
    assert platform.read_bytes() == good
    pd.testing.assert_frame_equal(table(root), table(reference))


def test_unreadable_campaign_manifest_is_rewritten(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    manifest = root / "campaign.json"
    manifest.write_bytes(manifest.read_bytes()[:100])
    notes, _ = campaign(reference, root)
    assert len(notes) == 1
    assert re.fullmatch(rf"{re.escape(str(manifest))}: not valid JSON \(.*\): rewritten \(the record of earlier "
                        r"invocations is lost\)", notes[0]), notes
    assert json.loads(manifest.read_text())["runs"] == 4


def test_old_conversion_without_checksums_is_verified_by_reading(reference: Path, tmp_path: Path) -> None:
    """A conversion.json written before the SHA-256s were recorded: its workload is read whole instead."""
    camp = load_spec(reference.parent / "damage.toml")
    inputs = tmp_path / "inputs"
    shutil.copytree(reference / "inputs", inputs)
    (folder,) = [p for p in inputs.iterdir() if (p / "workload_report.json").is_file()]
    meta = folder / "conversion.json"
    meta.write_text(json.dumps({k: v for k, v in json.loads(meta.read_text()).items() if k != "sha256"}))
    trace = camp.traces[1]
    said: list[str] = []
    assert convert_trace(trace, folder.name, inputs, said.append).kept == 1500 and said == []
    workload = folder / "workload.json"
    workload.write_bytes(workload.read_bytes()[:1000])
    assert convert_trace(trace, folder.name, inputs, said.append).kept == 1500
    assert len(said) == 1 and re.fullmatch(rf"{re.escape(str(workload))}:\d+: invalid JSON: .*: conversion redone",
                                           said[0]), said
    assert "sha256" in json.loads(meta.read_text())


# --------------------------------------------------------------------------- batfeed report

def report(folder: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``batfeed report FOLDER``; it writes no page."""
    proc = run_cli(["report", str(folder), "-o", str(tmp_path / "report")], tmp_path)
    assert not (tmp_path / "report" / "index.html").exists()
    return proc


def again(folder: Path) -> str:
    return re.escape(f"run 'batfeed campaign damage.toml -o {folder}' again to")


def test_report_refuses_a_cut_csv_table(reference: Path, tmp_path: Path) -> None:
    """results.parquet gone, results.csv cut mid-row: it gave a report over the rows left, exit 0."""
    root = copy(reference, tmp_path)
    (root / "results.parquet").unlink()
    csv = root / "results.csv"
    text = csv.read_text()
    csv.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 40])
    error_line(report(root, tmp_path), "report",
               rf"{re.escape(str(csv))}: line 5 has 8 fields, the header 15: the table is damaged; "
               rf"{again(root)} rewrite it")


def test_report_refuses_an_unreadable_parquet_table(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    parquet = root / "results.parquet"
    parquet.write_bytes(parquet.read_bytes()[:500])
    error_line(report(root, tmp_path), "report",
               rf"{re.escape(str(parquet))}: cannot read the campaign table \(.*\): the table is damaged; "
               rf"{again(root)} rewrite it")


def test_report_refuses_the_record_of_another_run(reference: Path, tmp_path: Path) -> None:
    root = copy(reference, tmp_path)
    k = keys(root)
    key, other = k[("r", "easy")], k[("r", "fcfs")]
    shutil.copytree(root / "runs" / other, root / "runs" / key, dirs_exist_ok=True)   # the whole run copied
    error_line(report(root, tmp_path), "report",
               rf"{re.escape(str(root))}/runs/{key}/result.json: record of run {other}, not {key}: the table says "
               rf"run {key} is done; {again(root)} redo it")


def test_report_verifies_rows_against_the_campaign(reference: Path, tmp_path: Path) -> None:
    """A cut in the last field (every row has its fields), rows cut at a line break (the CSV still
    parses), a gap in ``run``, a run directory gone."""
    root = copy(reference, tmp_path)
    (root / "results.parquet").unlink()
    csv = root / "results.csv"
    full = csv.read_text()
    csv.write_text(full[:-1])
    with pytest.raises(InputError, match=rf"^{re.escape(str(csv))}: the last row is cut short \(no line break at the "
                                         rf"end\): the table is damaged; {again(root)} rewrite it$"):
        find_runs([root])
    csv.write_text("".join(full.splitlines(keepends=True)[:4]))
    with pytest.raises(InputError, match=rf"^{re.escape(str(csv))}: 3 rows, campaign\.json says 4 runs: the table "
                                         rf"is damaged; {again(root)} rewrite it$"):
        find_runs([root])
    t = pd.read_csv(io.StringIO(full))
    t.loc[3, "run"] = 4
    t.to_csv(csv, index=False)
    with pytest.raises(InputError, match=r"results\.csv: the run column is not 0\.\.3 in order: "):
        find_runs([root])
    csv.write_text(full)
    shutil.rmtree(root / "runs" / t.loc[0, "key"])
    with pytest.raises(InputError, match=rf"/runs/{t.loc[0, 'key']}: no such run directory: the table says run "):
        find_runs([root])


# --------------------------------------------------------------------------- specs

def test_infinite_shake_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """``shake = inf`` passed the check and every run failed with OverflowError."""
    spec = tmp_path / "c.toml"
    spec.write_text(f'traces = [{{path = "{KTH200}", shake = inf}}]\nschedulers = ["fcfs"]\n')
    proc = run_cli(["campaign", str(spec), "-o", str(tmp_path / "out")], tmp_path)
    error_line(proc, "campaign", rf"{re.escape(str(spec))}: traces\[0\]\.shake: must be a finite number >= 0 and "
                                 r"<= 1000000000, got Infinity")
    assert proc.stdout == "" and not (tmp_path / "out").exists()


def test_yaml_key_written_twice_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "c.yaml"
    spec.write_text(f"traces: [{KTH200}]\nseeds: [1]\nschedulers: [fcfs]\nseeds: [2, 3]\n")
    proc = run_cli(["campaign", str(spec), "-o", str(tmp_path / "out")], tmp_path)
    error_line(proc, "campaign", rf"{re.escape(str(spec))}:4: key 'seeds' given twice \(first on line 2\); YAML "
                                 r"would keep the last one silently: remove one")
    assert not (tmp_path / "out").exists()


def test_yaml_duplicates_in_nested_and_flow_mappings_merges_allowed(tmp_path: Path) -> None:
    spec = tmp_path / "c.yaml"
    spec.write_text(f"traces:\n  - {{path: {KTH200}, shake: 1, shake: 2}}\nschedulers: [fcfs]\n")
    with pytest.raises(CampaignError, match=rf"^{re.escape(str(spec))}:2: key 'shake' given twice \(first on line "
                                            r"2\)"):
        load_spec(spec)
    spec.write_text(f"traces: [{KTH200}]\nschedulers:\n  - &e {{name: easy, options: {{policy: SQF}}}}\n"
                    "  - <<: *e\n    options: {policy: LQF}\n")
    assert [s.grid for s in load_spec(spec).schedulers] == [{"policy": ["SQF"]}, {"policy": ["LQF"]}]


INF = float("inf")


@pytest.mark.parametrize(("entry", "where", "message"), [
    ({"traces": [{"path": str(KTH200), "load": INF}]}, r"traces\[0\]\.load", r"must be a finite number > 0"),
    ({"traces": [{"path": "KTH-SP2", "resample_weeks": 2, "resample": "users", "resample_load": INF}]},
     r"traces\[0\]\.resample_load", r"must be a finite number >= 0"),
    ({"traces": [{"path": "KTH-SP2", "resample_weeks": 2, "resample": "users", "resample_rb_npw": INF}]},
     r"traces\[0\]\.resample_rb_npw", r"must be a finite number >= 0"),
    ({"traces": [{"path": "KTH-SP2", "resample_weeks": 10**6}]}, r"traces\[0\]\.resample_weeks",
     r"must be an integer >= 0 and <= 10000"),
    ({"traces": [{"path": str(KTH200), "shake": 1e15}]}, r"traces\[0\]\.shake",
     r"must be a number >= 0 and <= 1000000000"),
    ({"traces": [{"path": str(KTH200), "max_jobs": INF}]}, r"traces\[0\]\.max_jobs", r"must be an integer >= 1"),
    ({"traces": [{"path": "KTH-SP2", "origin": -INF}]}, r"traces\[0\]\.origin", r"must be a finite number"),
    ({"traces": [{"path": "KTH-SP2", "window": [0, INF]}]}, r"traces\[0\]\.window\[1\]", r"must be a finite number"),
    ({"traces": [{"path": "KTH-SP2", "speed": INF}]}, r"traces\[0\]\.speed", r"must be a finite number > 0"),
    ({"tau": INF}, r"tau", r"must be a finite number > 0"),
    ({"window": [-INF, 100]}, r"window\[0\]", r"must be a finite number"),
    ({"platforms": [{"scale": INF}]}, r"platforms\[0\]\.scale", r"must be a finite number > 0 and <= 10000000"),
    ({"platforms": [{"nb_machines": 10**9}]}, r"platforms\[0\]\.nb_machines",
     r"must be an integer >= 1 and <= 10000000"),
    ({"seeds": [2**70]}, r"seeds\[0\]", r"must be an integer >= 0 and <= 9223372036854775807"),
    ({"schedulers": [{"name": "easy", "options": {"theta": INF}}]}, r"schedulers\[0\]\.options\.theta",
     r"must be a number of seconds >= 0 or null"),
])
def test_every_number_of_the_spec_must_be_finite_and_in_range(entry: dict, where: str, message: str) -> None:
    spec = {"traces": [str(KTH200)], "schedulers": ["fcfs"], **entry}
    with pytest.raises(CampaignError, match=rf"^campaign spec: {where}: {message}, got \S+$"):
        load_spec(spec)


def test_a_load_that_overflows_the_submit_times_fails_before_any_run(tmp_path: Path) -> None:
    from batfeed.campaign import run_campaign
    from batfeed.errors import BatfeedError

    spec = {"name": "tiny", "traces": [{"name": "k", "path": str(KTH200), "load": 1e-320}], "schedulers": ["fcfs"]}
    with pytest.raises(BatfeedError, match=r"^campaign spec: traces\[0\] \(k\): load = 9\.99989e-321: job \S+'s "
                                           r"submit time \S+ / 9\.99989e-321 overflows: give a larger load factor$"):
        run_campaign(spec, tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out" / "runs").exists()


def test_a_sound_cached_workload_without_its_record_is_reused_and_sealed(tmp_path: Path) -> None:
    """A shaken workload made before checksums were kept (or whose writer died between the two renames)
    parses: it is used as is, no note, and its SHA-256 is recorded for the next reuse."""
    from batfeed.campaign.inputs import shaken_workload

    src = tmp_path / "w.json"
    src.write_text(json.dumps({"nb_res": 2, "jobs": [{"id": i, "subtime": 10 * i, "res": 1, "profile": "d"}
                                                     for i in range(5)],
                               "profiles": {"d": {"type": "delay", "delay": 5}}}))
    dest = tmp_path / "shaken" / "w-5s-seed1.json"
    notes: list[str] = []
    assert shaken_workload(src, 5, 1, dest, note=notes.append) == dest
    side = dest.with_name(dest.name + ".sha256")
    made = dest.read_bytes()
    side.unlink()
    assert shaken_workload(src, 5, 1, dest, note=notes.append) == dest and notes == []
    assert dest.read_bytes() == made and side.read_text().strip() == hashlib.sha256(made).hexdigest()
