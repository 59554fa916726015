"""Issue 25, classes 3-5: ``resample`` and the SWF inputs fail cleanly and lose nothing silently.

Every defect is shown with the real CLI in a subprocess (tests/cli_helpers.py): the exact one-line
message, the exit code, no traceback.  The traces are tiny and written in tmp_path.
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from batfeed.adapters.resample import WEEK
from cli_helpers import error_line, run_cli, write_inputs

from batfeed.cli import main

ADAPTERS = Path(__file__).resolve().parent / "data" / "adapters"
BOM = b"\xef\xbb\xbf"
DAY = 86_400
SUMMARY = ("{prefix}: note: {path} converted on the fly \\(as by 'batfeed convert swf'\\): read 200 records, kept 199; "
           "platform 64 resources \\(from MaxProcs\\); dropped 1: duplicate_id 1 \\(first: line 202: job 199\\)")


def write_swf(path: Path, *, bom: bool = True, records: int = 200, spacing: float = 43_200) -> Path:
    """``records`` SWF jobs of 5 users, ``spacing`` s apart (200 x 12 h: 14 weeks, every user long-term),
    header ``; MaxProcs: 64``; the last record repeats job id 199 (a duplicate the cleaning drops);
    a UTF-8 byte-order mark first if ``bom``; gzip/xz by suffix."""
    lines = ["; MaxProcs: 64", "; UnixStartTime: 0"]
    for i in range(1, records + 1):
        jid = records - 1 if i == records else i
        lines.append(f"{jid} {i * spacing:g} 5 100 2 -1 -1 2 1000 -1 1 {i % 5 + 1} 1 1 1 1 -1 -1")
    data = (BOM if bom else b"") + ("\n".join(lines) + "\n").encode()
    opener = {".gz": gzip.compress, ".xz": lzma.compress}.get(path.suffix, lambda b: b)
    path.write_bytes(opener(data))
    return path


def write_workload(path: Path, submits: list[float], users: list[int] | None = None) -> Path:
    """A Batsim workload of one-machine jobs at ``submits`` (users ``users``, none if None)."""
    jobs = [{"id": i, "subtime": t, "res": 1, "walltime": 100, "profile": "d",
             **({"user": users[i]} if users is not None else {})} for i, t in enumerate(submits)]
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 10}}}))
    return path


def note_line(proc: subprocess.CompletedProcess[str], pattern: str) -> str:
    """The one stderr line matching ``pattern`` whole (asserts there is exactly one)."""
    found = [line for line in proc.stderr.splitlines() if re.fullmatch(pattern, line)]
    assert len(found) == 1, f"\n{proc.stderr}\nhas no line (or several) matching\n{pattern}"
    return found[0]


def compute_hosts(platform: Path) -> int:
    return platform.read_text().count('value="compute_node"')


# --------------------------------------------------------------------------- class 3: option values


@pytest.mark.parametrize(("method", "option", "value", "message"), [
    ("users", "--load", "0", r"--load must be a finite number > 0 \(got 0\)"),
    ("users", "--load", "-1", r"--load must be a finite number > 0 \(got -1\)"),
    ("users", "--load", "inf", r"--load must be a finite number > 0 \(got inf\)"),
    ("users", "--load", "nan", r"--load must be a finite number > 0 \(got nan\)"),
    ("users", "--rb-npw", "-1", r"--rb-npw must be a finite number >= 0 \(got -1\)"),
    ("users", "--rb-npw", "inf", r"--rb-npw must be a finite number >= 0 \(got inf\)"),
    ("users", "--weeks", "0", r"--weeks must be >= 1 \(got 0\)"),
    ("users", "--weeks", "-2", r"--weeks must be >= 1 \(got -2\)"),
    ("users", "--count", "0", r"--count must be >= 1 \(got 0\)"),
    ("weekly", "--weeks", "0", r"--weeks must be >= 1 \(got 0\)"),
    ("weekly", "--weeks", "-2", r"--weeks must be >= 1 \(got -2\)"),
    ("weekly", "--count", "0", r"--count must be >= 1 \(got 0\)"),
])
def test_resample_bad_option_values_are_one_line_errors(tmp_path: Path, method: str, option: str, value: str,
                                                        message: str) -> None:
    swf = write_swf(tmp_path / "w.swf")
    out = tmp_path / "r.json"
    proc = run_cli(["resample", method, str(swf), "--seed", "1", "-o", str(out), f"{option}={value}"], tmp_path)
    error_line(proc, "resample", message)
    assert not out.exists()


# --------------------------------------------------------------------------- class 3: empty results


def test_resample_users_refuses_a_log_with_no_user_to_resample(tmp_path: Path) -> None:
    """Shorter than a week: every user lies within 4 weeks of the log's ends, so all are discarded (it used
    to write 0 jobs and exit 0); ``resample weekly`` refuses it too."""
    short = write_workload(tmp_path / "short.json", [i * 3600.0 for i in range(40)], [i % 3 for i in range(40)])
    out = tmp_path / "r.json"
    proc = run_cli(["resample", "users", str(short), "--seed", "1", "-o", str(out)], tmp_path)
    error_line(proc, "resample", re.escape(f"{short}: no user to resample: the jobs span 1.62 days and all 3 users "
                                           "are discarded (a temporary user active only within 4 weeks of the log "
                                           "start or end is taken as truncated)"))
    proc = run_cli(["resample", "weekly", str(short), "--seed", "1", "-o", str(out)], tmp_path)
    error_line(proc, "resample", re.escape(f"{short}: the jobs span 1.62 days: less than one complete week to draw "
                                           "from"))
    assert not out.exists()


def test_resample_users_never_writes_an_empty_resample(tmp_path: Path) -> None:
    """One user over 20 weeks at load 0.001: no long-term copy is drawn -> error, nothing written (seed 1's
    file, the first one, is the one named)."""
    log = write_workload(tmp_path / "w.json", [i * DAY for i in range(140)], [7] * 140)
    out = tmp_path / "r.json"
    proc = run_cli(["resample", "users", str(log), "--seed", "1", "--count", "2", "--weeks", "4", "--load", "0.001",
                    "-o", str(out)], tmp_path)
    first = tmp_path / "r_seed1.json"
    error_line(proc, "resample", re.escape(
        f"{first} not written: seed 1 drew no job in 4 weeks at load 0.001 (0 long-term copies, 0 temporary users at "
        "the start, 0 temporary arrivals); raise --load or --weeks"))
    assert not first.exists() and not (tmp_path / "r_seed2.json").exists()


def test_resample_weekly_never_writes_an_empty_resample(tmp_path: Path) -> None:
    """Jobs in week 0 and week 10 only: 10 complete weeks, 9 of them empty; a seed drawing an empty week
    for the single user and a 1-week resample used to write 0 jobs with a warning, exit 0."""
    log = write_workload(tmp_path / "w.json", [0.0, 10.0 * WEEK], [1, 1])
    seed = next(s for s in range(100) if np.random.default_rng(s).integers(0, 10, size=(1, 1))[0, 0] != 0)
    out = tmp_path / "r.json"
    proc = run_cli(["resample", "weekly", str(log), "--seed", str(seed), "--weeks", "1", "-o", str(out)], tmp_path)
    error_line(proc, "resample", re.escape(
        f"{out} not written: seed {seed} drew no job in 1 weeks (every drawn user-week of {log} is empty); try more "
        "--weeks or another --seed"))
    assert not out.exists()


# --------------------------------------------------------------------------- class 4: workload without users


def test_resample_users_without_users_names_the_file_and_the_option(tmp_path: Path) -> None:
    """It said ``in-memory: ... pass anonymous='user'``; now the path given and ``--anonymous-user``, which
    resamples the jobs together as one user (as ``resample weekly`` does)."""
    write_workload(tmp_path / "anon.json", [i * DAY for i in range(140)])
    out = tmp_path / "r.json"
    proc = run_cli(["resample", "users", "anon.json", "--seed", "1", "-o", str(out)], tmp_path)
    error_line(proc, "resample", re.escape("anon.json: 140 job(s) have no 'user' (first: job 0); add --anonymous-user "
                                           "to count them as one user"))
    assert not out.exists()
    proc = run_cli(["resample", "users", "anon.json", "--anonymous-user", "--seed", "1", "--weeks", "4", "-o",
                    str(out)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "note: 140 jobs have no user: resampled together as one anonymous user" in proc.stdout
    assert json.loads(out.read_text())["jobs"]


def test_api_message_names_the_keyword_and_the_source(tmp_path: Path) -> None:
    """For Python callers the message keeps ``anonymous='user'`` (their keyword) and names the file."""
    from batfeed.users.zf_resample import build_pools

    from batfeed.errors import InputError

    anon = write_workload(tmp_path / "anon.json", [i * DAY for i in range(140)])
    with pytest.raises(InputError) as err:
        build_pools(anon)
    assert str(err.value) == (f"{anon}: 140 job(s) have no 'user' (first: job 0); pass anonymous='user' to count "
                              "them as one user")
    with pytest.raises(InputError, match=r"^in-memory: 140 job\(s\) have no 'user'"):
        build_pools(json.loads(anon.read_text()))


# --------------------------------------------------------------------------- class 5a: byte-order marks


@pytest.mark.parametrize("suffix", [".swf", ".swf.gz", ".swf.xz"])
def test_convert_swf_keeps_the_header_after_a_bom(tmp_path: Path, suffix: str) -> None:
    """Line 1 (``; MaxProcs: 64`` after the BOM) used to be a corrupt record and the platform sized from
    the largest job (2 hosts)."""
    swf = write_swf(tmp_path / f"w{suffix}")
    proc = run_cli(["convert", "swf", str(swf), "-o", "out"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "read 200 records, kept 199; platform 64 resources (from MaxProcs)" in proc.stdout
    assert "corrupt_line" not in proc.stdout
    assert compute_hosts(tmp_path / "out" / "w_platform.xml") == 64
    assert json.loads((tmp_path / "out" / "w.json").read_text())["swf_header"] == {"MaxProcs": "64",
                                                                                    "UnixStartTime": "0"}


def test_site_fit_reads_the_header_after_a_bom(tmp_path: Path) -> None:
    """users/site_fit.py reads SWF with read_swf: the machine size comes from MaxProcs, not the jobs."""
    from batfeed.users.site_fit import read_trace

    assert read_trace(write_swf(tmp_path / "w.swf")).machine_procs == 64


def _bom_copy(src: Path, dst: Path) -> Path:
    dst.write_bytes(BOM + src.read_bytes())
    return dst


CONVERSIONS = {
    "pbs": (["torque_20200110"], ["--nodes", "{pbs_nodes.txt}"]),
    "maui": (["maui_workload.txt"], ["--resources", "{maui_resources.txt}"]),
    "sacct": (["sacct_sample.txt"], []),
    "downtimes-maintenance": (["maintenance.csv"], ["--nb-nodes", "4", "--origin", "2020-01-01T00:00:00",
                                                    "--horizon", "86400"]),
    "downtimes-states": (["node_states.csv"], ["--platform", "@p.xml", "--origin", "2020-01-01T00:00:00",
                                               "--horizon", "5000"]),
    "downtimes-outages": (["outages.csv"], ["--platform", "@p.xml", "--origin", "1577836800", "--horizon", "10000"]),
    "downtimes-lanl": (["lanl_sample.csv"], ["--nb-nodes", "4", "--system", "20", "--tz", "America/Denver"]),
    "swf-extended": (["alea.swf"], ["--extended", "--machines", "{alea.swf.machines}"]),
}


@pytest.mark.parametrize("case", sorted(CONVERSIONS))
def test_every_text_adapter_reads_line_one_after_a_bom(tmp_path: Path, case: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Each converter gives the same report with every input file prefixed by a BOM (it was a corrupt first
    line, a lost header, or an error: 'expected node [procs]', 'cannot tell the downtime format')."""
    inputs, options = CONVERSIONS[case]
    fmt = case.split("-")[0]

    def args(folder: Path) -> list[str]:
        opts = [folder / o[1:-1] if o.startswith("{") else tmp_path / o[1:] if o.startswith("@") else o
                for o in options]
        return ["convert", fmt, *(str(folder / i) for i in inputs), *map(str, opts)]

    from batfeed.adapters.nodes import write_node_platform

    write_node_platform(tmp_path / "p.xml", [("n01", 2), ("n02", 2), ("n03", 1)], unit="procs")
    bom = tmp_path / "bom"
    bom.mkdir()
    for name in inputs + [o[1:-1] for o in options if o.startswith("{")]:
        _bom_copy(ADAPTERS / name, bom / name)
    assert main([*args(ADAPTERS), "-o", str(tmp_path / "plain")]) == 0
    plain = capsys.readouterr().out.splitlines()
    proc = run_cli([*args(bom), "-o", str(tmp_path / "out")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    with_bom = proc.stdout.splitlines()
    assert with_bom[1:-1] == plain[1:-1]  # the same report (but the input and output lines)


def test_to_swf_reads_a_jobs_csv_with_a_bom(tmp_path: Path) -> None:
    """``convert to-swf``: the BOM used to glue to the first column name ('missing columns: job_id')."""
    platform, workload = write_inputs(tmp_path)
    assert run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "-o", "run"],
                   tmp_path).returncode == 0
    _bom_copy(tmp_path / "run_jobs.csv", tmp_path / "bom_jobs.csv")
    proc = run_cli(["convert", "to-swf", "bom_jobs.csv", "--workload", str(workload), "-o", "swf"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "read 3 rows, kept 3" in proc.stdout


# --------------------------------------------------------------------------- class 5b: on-the-fly conversion


def test_simulate_users_on_an_swf_says_what_the_conversion_dropped(tmp_path: Path) -> None:
    """200 records, one a duplicate id: the summary line names it, and 199 jobs are simulated (it said
    nothing; ``submitted=199``)."""
    from batfeed.platforms.generate import write_homogeneous_platform

    write_homogeneous_platform(tmp_path / "p64.xml", 64)
    swf = write_swf(tmp_path / "w.swf", bom=False)
    proc = run_cli(["simulate", "p64.xml", str(swf), "--users", "rigid", "--scheduler", "fcfs", "-o", "run"],
                   tmp_path)
    assert proc.returncode == 0, proc.stderr
    note_line(proc, SUMMARY.format(prefix="batfeed", path=re.escape(str(swf.resolve()))))
    assert "jobs: submitted=199 = completed=199 + rejected=0 + killed/failed=0" in proc.stdout
    assert len((tmp_path / "run_jobs.csv").read_text().splitlines()) == 1 + 199


def test_sessions_on_an_swf_says_what_the_conversion_dropped(tmp_path: Path) -> None:
    """Same through ``sessions``, whose table and summary.json also count the dropped record; the trace starts
    with a BOM: its header is kept on the fly too (platform 64 from MaxProcs, not 2 from the largest job)."""
    swf = write_swf(tmp_path / "w.swf")
    proc = run_cli(["sessions", "w.swf", "-t", "20", "-o", "s"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    note_line(proc, SUMMARY.format(prefix="batfeed", path="w\\.swf"))
    assert re.search(r"users / jobs +5 / 199 \(of 200 SWF records: 1 dropped by the conversion\)", proc.stdout)
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["conversion"] == {"read": 200, "kept": 199, "dropped": {"duplicate_id": 1}}
    assert summary["jobs"] == 199 and swf.is_file()


def test_an_swf_with_no_usable_record_is_one_line_error_on_the_fly(tmp_path: Path) -> None:
    """As ``batfeed convert swf``: a conversion that keeps nothing is an error, not an empty trace."""
    (tmp_path / "bad.swf").write_text("1 2 3\n4 5 6\n")
    proc = run_cli(["sessions", "bad.swf", "-t", "20", "-o", "s"], tmp_path)
    error_line(proc, "sessions", re.escape("bad.swf: no job kept: all 2 records are corrupt (first: bad.swf:1: "
                                           "corrupt line: expected 18 fields, found 3); is it an SWF trace?"))


# --------------------------------------------------------------------------- class 5c: resample an SWF


def test_resample_users_and_weekly_read_an_swf(tmp_path: Path) -> None:
    """``resample users|weekly`` convert an SWF on the fly (same summary line); the outputs keep the header's
    platform size, record the trace as their source and pass ``resample validate`` against the conversion, or
    against the SWF itself (converted on the fly too)."""
    write_swf(tmp_path / "w.swf")
    outs = []
    for method in ("users", "weekly"):
        out = tmp_path / f"{method}.json"
        proc = run_cli(["resample", method, "w.swf", "--seed", "3", "--weeks", "20", "-o", out.name], tmp_path)
        assert proc.returncode == 0, proc.stderr
        note_line(proc, SUMMARY.format(prefix="batfeed resample", path="w\\.swf"))
        data = json.loads(out.read_text())
        assert data["nb_res"] == 64 and data["jobs"]
        assert data["batfeed_resample"]["source"] == "w.swf"
        outs.append(out.name)
    assert run_cli(["convert", "swf", "w.swf", "-o", "conv"], tmp_path).returncode == 0
    proc = run_cli(["resample", "validate", "conv/w.json", *outs], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "per-user marginals and weekly profile: conv/w.json vs 2 resample(s)" in proc.stdout
    direct = run_cli(["resample", "validate", "w.swf", *outs], tmp_path)     # the log itself, converted on the fly
    assert direct.returncode == 0, direct.stderr
    note_line(direct, SUMMARY.format(prefix="batfeed resample", path="w\\.swf"))
    assert direct.stdout.splitlines()[1:] == proc.stdout.splitlines()[1:], "the same tables"


# ----------------------------------------------------------------- the engine's own inputs (as Batsim reads them)


def test_platform_with_blank_lines_before_the_xml_declaration(tmp_path: Path) -> None:
    """Three of Batsim 4.2.1's test platforms start with a blank line before ``<?xml``: SimGrid (so Batsim)
    runs them, expat refused them.  Same outputs as without the line; line numbers in errors still the file's;
    a declared ISO-8859-1 encoding is honoured."""
    platform, workload = write_inputs(tmp_path)
    text = platform.read_text()
    assert text.startswith("<?xml")
    late = tmp_path / "late.xml"
    late.write_text("\n\n" + text)
    for p, prefix in ((platform, "a"), (late, "b")):
        proc = run_cli(["simulate", str(p), str(workload), "--scheduler", "fcfs", "-o", prefix], tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a_jobs.csv").read_text() == (tmp_path / "b_jobs.csv").read_text()
    lines = late.read_text().splitlines()
    dup = next(i for i, line in enumerate(lines) if "<host " in line and "master" not in line)
    lines.insert(dup + 1, lines[dup])                # the same host again, on file line dup + 2
    late.write_text("\n".join(lines) + "\n")
    proc = run_cli(["simulate", str(late), str(workload), "--scheduler", "fcfs", "-o", "c"], tmp_path)
    error_line(proc, "simulate", rf"{re.escape(str(late))}:{dup + 2}: duplicate host name '[^']+' "
                                 rf"\(first defined at line {dup + 1}\)")
    latin = tmp_path / "latin.xml"
    latin.write_bytes(b"\n" + text.replace("<?xml version='1.0'?>", "<?xml version='1.0' encoding='ISO-8859-1'?>")
                      .replace("<platform", "<!-- caf\xe9 -->\n<platform", 1).encode("latin-1"))
    assert b"encoding='ISO-8859-1'" in latin.read_bytes() and b"caf\xe9" in latin.read_bytes()
    proc = run_cli(["simulate", str(latin), str(workload), "--scheduler", "fcfs", "-o", "d"], tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_workload_json_with_a_bom_says_batsim_refuses_it(tmp_path: Path) -> None:
    """Batsim 4.2.1 parses the workload with rapidjson, which does not skip a byte-order mark ("could not be
    parsed"): the engine refuses it as well, saying why and what to do, rather than Python's own words."""
    platform, workload = write_inputs(tmp_path)
    bom = tmp_path / "bom.json"
    bom.write_bytes(BOM + workload.read_bytes())
    proc = run_cli(["simulate", str(platform), str(bom), "--scheduler", "fcfs", "-o", "o"], tmp_path)
    error_line(proc, "simulate", rf"{re.escape(str(bom))}:1: the file starts with a UTF-8 byte-order mark, which "
                                 r"Batsim 4\.2 refuses \(\"Invalid JSON file: could not be parsed\"\): save it "
                                 r"without one")
