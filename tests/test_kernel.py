"""The compiled kernel and its pure-Python reference (batfeed/kernel.py, batfeed/kernel_build.py).

scripts/test.sh runs this file twice: with the kernel the bootstrap built, then with BATFEED_PURE=1.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batfeed import kernel
from batfeed.kernel_build import _missing_tool, _stage

REPO = Path(__file__).resolve().parent.parent
BATFEED = [sys.executable, "-m", "batfeed"]
PURE = os.environ.get(kernel.ENV, "") not in ("", "0")
CAN_BUILD = _missing_tool() is None
# a <cluster> with links and a master host, as Batsim users write them (Batsim's platforms/cluster512.xml)
CLUSTER = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <cluster id="c" prefix="node" suffix="" radical="0-99" speed="1Gf" bw="1.25GBps" lat="5us"
           bb_bw="10GBps" bb_lat="3us"/>
  <host id="master_host" speed="1Gf"/>
  <link id="ml" bandwidth="10GBps" latency="2us"/>
  <zoneRoute src="c" dst="master_host" gw_src="nodec_router" gw_dst="master_host"><link_ctn id="ml"/></zoneRoute>
</zone></platform>
"""


def _env(pure: bool) -> dict[str, str]:
    return {**os.environ, kernel.ENV: "1" if pure else "0"}


def test_the_path_in_use_is_the_one_asked_for() -> None:
    s = kernel.state()
    if PURE:
        assert (s["path"], s["why"]) == ("pure", "BATFEED_PURE=1")
    elif CAN_BUILD:          # scripts/bootstrap.sh compiled it: Cython, setuptools and a compiler are here
        assert s["path"] == "compiled", s["why"]
    else:
        assert s["path"] == "pure" and "no compiled kernel" in s["why"]
    for name in kernel.MODULES:
        mod = importlib.import_module(name)
        assert mod.__file__.endswith(".py") == (s["path"] == "pure"), (name, mod.__file__)


def test_version_says_which_path() -> None:
    pure = subprocess.run([*BATFEED, "--version"], env=_env(True), capture_output=True, text=True, check=True)
    assert "pure Python (BATFEED_PURE=1)" in pure.stdout
    default = subprocess.run([*BATFEED, "--version"], env=_env(False), capture_output=True, text=True,
                             check=True)
    assert (f"compiled kernel ({len(kernel.MODULES)} modules" in default.stdout) == CAN_BUILD, default.stdout


def test_a_stale_or_missing_kernel_is_set_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "pkg" / "mod.py"
    src.parent.mkdir()
    src.write_text("x = 1\n")
    kdir = tmp_path / "pkg" / "_kernel"
    kdir.mkdir()
    (kdir / "m.so").write_bytes(b"")
    monkeypatch.setattr(kernel, "DIR", kdir)
    monkeypatch.setattr(kernel, "STAMP", kdir / "build.json")
    monkeypatch.setattr(kernel, "ROOT", tmp_path)
    monkeypatch.setattr(kernel, "MODULES", ("pkg.mod",))
    monkeypatch.setattr(kernel, "_choice", None)
    monkeypatch.delenv(kernel.ENV, raising=False)
    assert kernel._decide()["why"].startswith("no compiled kernel")
    stamp = {"python": sys.implementation.cache_tag, "cython": "3",
             "modules": {"pkg.mod": {"source": "pkg/mod.py", "sha256": kernel._digest(src), "so": "m.so"}}}
    kernel.STAMP.write_text(json.dumps(stamp))
    fresh = kernel._decide()
    assert fresh["path"] == "compiled" and fresh["modules"] == {"pkg.mod": str(kdir / "m.so")}
    src.write_text("x = 2\n")                                   # edited since the build
    stale = kernel._decide()
    assert stale["path"] == "pure" and stale["warn"] and "pkg/mod.py changed" in stale["why"]
    stamp["python"] = "cpython-0"
    kernel.STAMP.write_text(json.dumps(stamp))
    assert "another Python" in kernel._decide()["why"]
    monkeypatch.setenv(kernel.ENV, "1")
    assert kernel._decide() == {"path": "pure", "why": "BATFEED_PURE=1", "modules": {}}


def test_an_added_edited_or_removed_pxd_makes_the_kernel_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    src, kdir = tmp_path / "pkg" / "mod.py", tmp_path / "pkg" / "_kernel"
    kdir.mkdir(parents=True)
    src.write_text("x = 1\n")
    (kdir / "m.so").write_bytes(b"")
    for name, value in (("DIR", kdir), ("STAMP", kdir / "build.json"), ("ROOT", tmp_path),
                        ("MODULES", ("pkg.mod",)), ("_choice", None)):
        monkeypatch.setattr(kernel, name, value)
    monkeypatch.delenv(kernel.ENV, raising=False)
    rec = {"source": "pkg/mod.py", "sha256": kernel._digest(src), "so": "m.so"}
    kernel.STAMP.write_text(json.dumps({"python": sys.implementation.cache_tag, "modules": {"pkg.mod": rec}}))
    assert kernel._decide()["path"] == "compiled"
    pxd = src.with_suffix(".pxd")
    pxd.write_text("cdef class A:\n    cdef public object x\n")          # C types added since the build
    assert "pkg/mod.pxd changed" in kernel._decide()["why"]
    rec["pxd_sha256"] = kernel._digest(pxd)
    kernel.STAMP.write_text(json.dumps({"python": sys.implementation.cache_tag, "modules": {"pkg.mod": rec}}))
    assert kernel._decide()["path"] == "compiled"
    pxd.write_text("cdef class A:\n    cdef public double x\n")          # edited
    assert "pkg/mod.pxd changed" in kernel._decide()["why"]
    pxd.unlink()                                                         # removed
    assert "pkg/mod.pxd changed" in kernel._decide()["why"]


def test_an_edited_import_or_a_missing_mypyc_library_makes_the_kernel_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # mypyc compiles against the annotations of the batfeed modules the group imports (build.json "deps"),
    # and its modules load the group's shared library
    src, dep, kdir = tmp_path / "pkg" / "mod.py", tmp_path / "pkg" / "dep.py", tmp_path / "pkg" / "_kernel"
    kdir.mkdir(parents=True)
    src.write_text("from pkg.dep import y\n")
    dep.write_text("y = 1\n")
    (kdir / "m.so").write_bytes(b"")
    (kdir / "lib.so").write_bytes(b"")
    for name, value in (("DIR", kdir), ("STAMP", kdir / "build.json"), ("ROOT", tmp_path),
                        ("MODULES", ("pkg.mod",)), ("_choice", None)):
        monkeypatch.setattr(kernel, name, value)
    monkeypatch.delenv(kernel.ENV, raising=False)
    rec = {"source": "pkg/mod.py", "sha256": kernel._digest(src), "so": "m.so", "backend": "mypyc"}
    kernel.STAMP.write_text(json.dumps({"python": sys.implementation.cache_tag, "mypyc": "2", "mypyc_lib": "lib.so",
                                        "deps": {"pkg/dep.py": kernel._digest(dep)}, "modules": {"pkg.mod": rec}}))
    fresh = kernel._decide()
    assert fresh["path"] == "compiled" and fresh["why"] == "mypyc 2"
    dep.write_text("y = 1.0\n")
    assert "pkg/dep.py changed" in kernel._decide()["why"]
    dep.write_text("y = 1\n")
    (kdir / "lib.so").unlink()
    assert "lib.so changed" in kernel._decide()["why"]


def test_sources_are_staged_at_their_module_path_with_their_pxd(tmp_path: Path) -> None:
    # schedulers/x.py is installed as batfeed.schedulers.x: Cython finds x.pxd (and a .pxd cimporting
    # another) only in that package layout, which kernel_build recreates in its build directory
    (tmp_path / "schedulers").mkdir()
    (tmp_path / "schedulers" / "a.py").write_text("x = 1\n")
    (tmp_path / "schedulers" / "a.pxd").write_text("cdef object x\n")
    (tmp_path / "schedulers" / "b.py").write_text("y = 2\n")
    staged = _stage({"batfeed.schedulers.a": str(tmp_path / "schedulers" / "a.py"),
                     "batfeed.schedulers.b": str(tmp_path / "schedulers" / "b.py")}, tmp_path / "src")
    pkg = tmp_path / "src" / "batfeed" / "schedulers"
    assert staged == {"batfeed.schedulers.a": str(pkg / "a.py"), "batfeed.schedulers.b": str(pkg / "b.py")}
    assert (pkg / "a.pxd").read_text() == "cdef object x\n" and not (pkg / "b.pxd").exists()
    assert (pkg / "__init__.py").is_file() and (pkg.parent / "__init__.py").is_file()


def test_select_refuses_to_switch_after_the_kernel_is_imported() -> None:
    importlib.import_module("batfeed.engine.simulator")
    current = kernel.state()["path"] == "pure"
    kernel.select(current)                                      # the same path: accepted
    if kernel.state()["modules"] or current:
        with pytest.raises(RuntimeError, match="before any kernel import|was imported"):
            kernel.select(not current)


def _strip_wall_clock(schedule: Path) -> list[dict[str, str]]:
    rows = list(csv.DictReader(schedule.open()))
    for r in rows:
        del r["scheduling_time"], r["simulation_time"]
    return rows


@pytest.fixture(scope="module")
def kth_head(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("kth")
    subprocess.run([*BATFEED, "convert", "swf", str(REPO / "data/swf/KTH-SP2-1996-2.1-cln.swf.gz"), "-o", str(d),
                    "--max-jobs", "3000", "--name", "kth"], check=True, capture_output=True)
    (d / "cluster.xml").write_text(CLUSTER)
    return d / "kth.json", d / "cluster.xml"


@pytest.mark.parametrize("sched", ["easy", "conservative", "fcfs"])
def test_compiled_and_pure_write_the_same_files(kth_head: tuple[Path, Path], tmp_path: Path, sched: str) -> None:
    if not CAN_BUILD:
        pytest.skip("no compiled kernel here: both runs would be pure")
    workload, platform = kth_head
    for pure in (False, True):
        subprocess.run([*BATFEED, "simulate", str(platform), str(workload), "--scheduler", sched, "--no-progress",
                        "-o", str(tmp_path / f"p{int(pure)}")], env=_env(pure), check=True, capture_output=True)
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert (tmp_path / f"p0{suffix}").read_bytes() == (tmp_path / f"p1{suffix}").read_bytes(), suffix
    assert _strip_wall_clock(tmp_path / "p0_schedule.csv") == _strip_wall_clock(tmp_path / "p1_schedule.csv")
    manifests = [json.loads((tmp_path / f"p{i}_manifest.json").read_text()) for i in (0, 1)]
    assert manifests[0]["kernel"].startswith("compiled kernel (")
    assert manifests[1]["kernel"] == "pure Python (BATFEED_PURE=1)"
