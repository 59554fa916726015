"""Hypothesis fuzzing of every adapter's parser: random lines and valid lines truncated or with one
field replaced by junk.

Properties, for every input: the converter either succeeds or raises :class:`InputError` naming
the file and a line (never another exception); in lenient mode it succeeds, ``kept + dropped ==
read`` and, for one-record-per-line formats, ``read`` is the number of data lines (no silent loss);
what it writes is accepted by the engine's own readers (workload, platform, events).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from batfeed.adapters.downtimes import convert_downtimes
from batfeed.adapters.jobs_csv import jobs_csv_to_swf
from batfeed.adapters.maui import convert_maui, read_maui_resources
from batfeed.adapters.nodes import write_node_platform
from batfeed.adapters.pbs import convert_pbs
from batfeed.adapters.report import Tally
from batfeed.adapters.sacct import convert_sacct
from batfeed.adapters.swf import convert_swf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batfeed.engine.events import load_events
from batfeed.engine.platform import load_platform
from batfeed.engine.workload_file import load_workload
from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data"
ADAPTERS = DATA / "adapters"
# FUZZ_N=3000 for a longer search (default 60 examples per test)
SETTINGS = settings(max_examples=int(os.environ.get("FUZZ_N", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

JUNK = st.one_of(st.sampled_from(["-1", "0", "1e400", "nan", "inf", "-0", "9" * 25, "[NONE]", "Unknown", "", "abc",
                                  "1.5", "00:61:99", "2020-02-30T00:00:00", "13/45/2020", "a=b", ";", "|", ",", "{}",
                                  "1-", "n[1-", "*", "/", "\x00", "é"]),
                 st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12))
RANDOM_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=60)


def _data_lines(path: Path, skip: Callable[[str], bool]) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip() and not skip(line)]


def lines_from(templates: list[str], sep: str | None = None) -> st.SearchStrategy[list[str]]:
    """Lists of lines: random, valid, truncated or with one field replaced by junk."""
    def mutate(args: tuple[str, int, str, int]) -> str:
        line, k, junk, how = args
        if how == 0:
            return line
        if how == 1:
            return line[: k % (len(line) + 1)]
        parts = line.split(sep)
        parts[k % len(parts)] = junk
        return (sep or " ").join(parts)
    mutated = st.tuples(st.sampled_from(templates), st.integers(0, 10_000), JUNK, st.integers(0, 2)).map(mutate)
    return st.lists(st.one_of(mutated, mutated, RANDOM_LINE), min_size=1, max_size=12)


def _write(directory: Path, name: str, lines: list[str], header: str | None = None) -> Path:
    path = directory / name
    path.write_text((header + "\n" if header else "") + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _lenient_and_strict(convert: Callable[..., object], path: Path, expected_read: int | None) -> object:
    """Run lenient (must succeed and add up) and strict (succeeds or InputError at a line)."""
    try:
        result = convert(strict=True)
    except InputError as err:
        assert err.path is not None and Path(err.path).name == path.name and err.line is not None, str(err)
        assert "\n" not in str(err)
    result = convert(strict=False)
    rep = result.report  # type: ignore[attr-defined]
    assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
    if expected_read is not None:
        assert rep["read"] == expected_read, rep
    return result


def _engine_accepts(result: object) -> None:
    load_workload(result.workload_path, "w0")  # type: ignore[attr-defined]
    load_platform(result.platform_path)  # type: ignore[attr-defined]


SWF_LINES = _data_lines(DATA / "swf" / "basic.swf", lambda s: s.startswith(";"))
SWF_LINES += [line.split("{")[0] + "{1,1} q_1d 1:ppn=2" for line in (ADAPTERS / "alea.swf").read_text().splitlines()]


@SETTINGS
@given(lines=lines_from(SWF_LINES), extended=st.booleans())
def test_swf_fuzz(lines: list[str], extended: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "f.swf", lines, "; MaxProcs: 8")
        expected = sum(1 for line in lines if line.strip() and not line.strip().startswith(";"))
        res = _lenient_and_strict(lambda strict: convert_swf(path, Path(tmp) / "o", strict=strict, extended=extended,
                                                             walltime_fallback="max"), path, expected)
        _engine_accepts(res)


PBS_LINES = [line for day in ("torque_20200110", "torque_20200111") for line in _data_lines(ADAPTERS / day,
                                                                                           lambda s: False)]


@SETTINGS
@given(day1=lines_from(PBS_LINES, ";"), day2=lines_from(PBS_LINES, " "), unit=st.sampled_from(["procs", "nodes"]))
def test_pbs_fuzz(day1: list[str], day2: list[str], unit: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = [_write(Path(tmp), "d1", day1), _write(Path(tmp), "d2", day2)]
        try:
            convert_pbs(paths, Path(tmp) / "s", strict=True, nb_res=64)
        except InputError as err:
            assert err.path in map(str, paths) and err.line is not None, str(err)
        res = convert_pbs(paths, Path(tmp) / "o", unit=unit, nodes_file=ADAPTERS / "pbs_nodes.txt")
        rep = res.report
        assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
        assert rep["read"] <= sum(1 for line in day1 + day2 if line.strip())
        _engine_accepts(res)


MAUI_LINES = _data_lines(ADAPTERS / "maui_workload.txt", lambda s: s.startswith(("#", "VERSION")))
MAUI_RES = _data_lines(ADAPTERS / "maui_resources.txt", lambda s: s.startswith("VERSION"))


@SETTINGS
@given(lines=lines_from(MAUI_LINES), res_lines=lines_from(MAUI_RES))
def test_maui_fuzz(lines: list[str], res_lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "w.txt", lines, "VERSION 230")
        resources = _write(Path(tmp), "r.txt", res_lines)
        expected = sum(1 for line in lines if line.strip() and not line.strip().startswith(("#", "VERSION")))
        res = _lenient_and_strict(lambda strict: convert_maui(path, Path(tmp) / "o", strict=strict, nb_res=16), path,
                                  expected)
        _engine_accepts(res)
        tally = Tally()
        nodes = read_maui_resources(resources, tally)
        assert len(nodes) + tally.nb_dropped == sum(
            1 for line in res_lines if line.strip() and not line.strip().startswith(("#", "VERSION")))
        if nodes:
            res = convert_maui(path, Path(tmp) / "r", resources=resources)
            _engine_accepts(res)
            events = Path(tmp) / "r" / "w_events.txt"
            if events.exists():
                load_events([events], res.nb_res)


SACCT_LINES = _data_lines(ADAPTERS / "sacct_sample.txt", lambda s: s.startswith("JobID"))


@SETTINGS
@given(lines=lines_from(SACCT_LINES, "|"))
def test_sacct_fuzz(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "s.txt", lines)
        first = next((line for line in lines if line.strip()), "")
        is_header = {"jobid", "submit"} <= {p.strip().lower() for p in first.split("|")}
        expected = sum(1 for line in lines if line.strip()) - is_header
        try:
            res = _lenient_and_strict(lambda strict: convert_sacct([path], Path(tmp) / "o", strict=strict, nb_res=64),
                                      path, expected)
        except InputError as err:  # a header line without the needed columns
            assert is_header and "columns lack" in str(err) and err.line is not None
            return
        _engine_accepts(res)


DOWN = {name: _data_lines(ADAPTERS / name, lambda s: False) for name in
        ("outages.csv", "node_states.csv", "maintenance.csv", "lanl_sample.csv")}


@SETTINGS
@given(name=st.sampled_from(sorted(DOWN)), data=st.data())
def test_downtimes_fuzz(name: str, data: st.DataObject) -> None:
    header, *templates = DOWN[name]
    lines = data.draw(lines_from(templates, ","))
    with tempfile.TemporaryDirectory() as tmp:
        platform = write_node_platform(Path(tmp) / "p.xml", [("n01", 2), ("n02", 2), ("n03", 1)])
        path = _write(Path(tmp), name, lines, header)
        kwargs = {"platform": platform, "origin": 1577836800, "horizon": 50_000.0,
                  "system": 20 if name.startswith("lanl") else None}
        try:
            convert_downtimes([path], Path(tmp) / "s", strict=True, **kwargs)  # type: ignore[arg-type]
        except InputError as err:
            assert Path(str(err.path)).name == name and err.line is not None, str(err)
        res = convert_downtimes([path], Path(tmp) / "o", **kwargs)  # type: ignore[arg-type]
        rep = res.report
        assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
        events = load_events([res.events_path], 5)
        down: set[int] = set()  # replay: never unavailable twice, never available when not down
        for ev in events:
            ids = {i for a, b in ev.resources for i in range(a, b + 1)}
            if ev.type == "machine_unavailable":
                assert not ids & down
                down |= ids
            else:
                assert ids <= down
                down -= ids


JOBS_ROWS = ['1,w0,d10,0.000000,2,20.000000,1,COMPLETED_SUCCESSFULLY,5.000000,10.000000,15.000000,5.000000,'
             '15.000000,1.500000,0-1,-1.000000,""',
             '2,w0,d10,3.000000,1,-1.000000,0,REJECTED,,,,,,,,-1.000000,""',
             '3,w0,d50,4.000000,3,20.000000,0,COMPLETED_WALLTIME_REACHED,4.000000,20.000000,24.000000,0.000000,'
             '20.000000,1.000000,2-3 5,-1.000000,"meta"']


@SETTINGS
@given(lines=lines_from(JOBS_ROWS, ","))
def test_jobs_csv_fuzz(lines: list[str]) -> None:
    from batfeed.adapters.swf import read_swf

    from batfeed.engine.outputs import JOBS_HEADER

    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "x_jobs.csv", lines, JOBS_HEADER)
        res = _lenient_and_strict(lambda strict: jobs_csv_to_swf(path, Path(tmp) / "o", strict=strict), path, None)
        _, records = read_swf(res.swf_path)  # type: ignore[attr-defined]
        assert len(list(records)) == res.report["kept"]  # type: ignore[attr-defined]
