"""Builds the compiled kernel: ``python -m batfeed.kernel_build [--force] [--jobs N]``.

The modules of :data:`batfeed.kernel.MYPYC_MODULES` are compiled, unchanged, by mypyc (``mypycify``,
one group: per module a small extension that loads the group's library ``mypyc__mypyc``); those of
:data:`batfeed.kernel.CYTHON_MODULES` by Cython (``cythonize``), with the augmenting ``.pxd`` next to
its ``.py`` when there is one (C types for its classes, docs/kernel.md).  The C compiler is the one
setuptools finds (``build_ext``); the results go to ``batfeed/_kernel/<module><EXT_SUFFIX>``.
``build.json`` records the Python, the compilers, the SHA-256 of each source and ``.pxd`` and of the
batfeed modules the mypyc group imports (see batfeed/kernel.py).  Nothing to do when the kernel is up
to date.  Without mypy, Cython, setuptools or a C compiler, or when a compilation fails, one warning
line says so and the exit status is 0: batfeed then runs on the pure-Python path.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from batfeed import kernel

#: Cython directives: the compiled module computes exactly what the source does (no C typing
#: from annotations; Python semantics for division, indexing and overflow).
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True, "embedsignature": True}


def sources() -> dict[str, str]:
    """Module name -> path of its ``.py`` (found with the pure path, whatever is installed)."""
    kernel.select(pure=True)
    out = {}
    for name in kernel.MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            raise SystemExit(f"batfeed.kernel_build: no source for {name}")
        out[name] = spec.origin
    return out


def _rel(path: str) -> str:
    return Path(path).resolve().relative_to(kernel.ROOT).as_posix()


def up_to_date(srcs: dict[str, str]) -> bool:
    stamp = kernel._read_stamp()
    if stamp is None or stamp.get("python") != sys.implementation.cache_tag:
        return False
    mods = stamp.get("modules", {})
    if set(mods) != set(srcs):
        return False
    if not all(mods[n]["source"] == _rel(p) and (kernel.DIR / mods[n]["so"]).is_file()
               and kernel._digest(p) == mods[n]["sha256"] and kernel._pxd_digest(p) == mods[n].get("pxd_sha256")
               for n, p in srcs.items()):
        return False
    lib = stamp.get("mypyc_lib")
    if kernel.MYPYC_MODULES and (lib is None or not (kernel.DIR / lib).is_file()):
        return False
    deps = stamp.get("deps", {})
    return deps == _deps(srcs) if kernel.MYPYC_MODULES else not deps


def _module_file(name: str) -> str | None:
    spec = importlib.util.find_spec(name)
    return spec.origin if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def _deps(srcs: dict[str, str]) -> dict[str, str]:
    """Relative path -> SHA-256 of the batfeed modules the mypyc group imports, directly or through one
    another, that it does not compile: mypyc compiles against their annotations (e.g. it checks the type
    of a value read from one of their classes), so an edit there sets the kernel aside too."""
    todo = [srcs[n] for n in kernel.MYPYC_MODULES]
    seen: set[str] = set(todo)
    out: dict[str, str] = {}
    while todo:
        path = todo.pop()
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name.split(".")[0] != "batfeed" or name in kernel.MYPYC_MODULES:
                    continue
                try:
                    file = _module_file(name)
                except (ImportError, ValueError):
                    file = None
                if file is not None and file not in seen:
                    seen.add(file)
                    todo.append(file)
                    out[_rel(file)] = kernel._digest(file)
    return dict(sorted(out.items()))


def _stage(srcs: dict[str, str], root: Path) -> dict[str, str]:
    """Copy each ``.py`` (and its augmenting ``.pxd``) under ``root`` at its module's dotted path, with
    empty ``__init__.py`` files, so that Cython finds the ``.pxd`` files of the source package layout
    (``schedulers/`` is installed as ``batfeed.schedulers``) and one ``.pxd`` can ``cimport`` another."""
    out = {}
    for name, path in srcs.items():
        parts = name.split(".")
        d = root.joinpath(*parts[:-1])
        d.mkdir(parents=True, exist_ok=True)
        for k in range(1, len(parts)):
            root.joinpath(*parts[:k], "__init__.py").touch()
        out[name] = str(shutil.copyfile(path, d / (parts[-1] + ".py")))
        pxd = Path(path).with_suffix(".pxd")
        if pxd.is_file():
            shutil.copyfile(pxd, d / pxd.name)
    return out


def _missing_tool() -> str | None:
    try:
        import Cython  # noqa: F401
        import mypy  # noqa: F401
        import mypyc  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed"
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return f"no C compiler ({cc} not found)"
    return None


def build(jobs: int = 2, force: bool = False, quiet: bool = False) -> int:
    srcs = sources()
    if not force and up_to_date(srcs):
        if not quiet:
            print(f"batfeed kernel: up to date ({len(srcs)} modules in {kernel.DIR})")
        return 0
    why = _missing_tool()
    if why is not None:
        print(f"batfeed: warning: compiled kernel not built ({why}): batfeed runs on pure Python",
              file=sys.stderr)
        return 0
    import Cython
    import mypy.version
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    t0 = time.perf_counter()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    kernel.DIR.mkdir(exist_ok=True)
    cy_srcs = {n: p for n, p in srcs.items() if n in kernel.CYTHON_MODULES}
    with tempfile.TemporaryDirectory(prefix="batfeed-kernel-") as tmp:
        try:
            exts = _mypyc_extensions(Path(tmp, "mypyc"), jobs) if kernel.MYPYC_MODULES else []
            staged = _stage(cy_srcs, Path(tmp, "src"))
            cy_exts = [Extension(n, [p], extra_compile_args=["-O2", "-g0"]) for n, p in staged.items()]
            if cy_exts:
                exts += cythonize(cy_exts, build_dir=os.path.join(tmp, "c"), compiler_directives=DIRECTIVES,
                                  include_path=[os.path.join(tmp, "src")], nthreads=jobs, quiet=True)
            lib = Path(tmp, "lib")
            dist = Distribution({"ext_modules": exts, "script_args": [
                "build_ext", "--build-lib", str(lib), "--build-temp", os.path.join(tmp, "o"), "-j", str(jobs)]})
            dist.parse_command_line()
            dist.run_commands()
        except (Exception, SystemExit) as e:      # mypyc and distutils report failures by SystemExit
            print(f"batfeed: warning: compiled kernel not built ({type(e).__name__}: {e}): "
                  "batfeed runs on pure Python", file=sys.stderr)
            return 0
        for old in kernel.DIR.glob("*" + suffix):
            old.unlink()
        modules = {}
        for n, p in srcs.items():
            built = lib.joinpath(*n.split(".")[:-1], n.rsplit(".", 1)[1] + suffix)
            so = n + suffix
            shutil.move(str(built), kernel.DIR / so)
            modules[n] = {"source": _rel(p), "sha256": kernel._digest(p), "so": so}
            if n in kernel.MYPYC_MODULES:
                modules[n]["backend"] = "mypyc"
            if kernel._pxd_digest(p) is not None:
                modules[n]["pxd_sha256"] = kernel._pxd_digest(p)
        stamp: dict[str, object] = {"python": sys.implementation.cache_tag, "cython": Cython.__version__}
        if kernel.MYPYC_MODULES:
            group_lib = kernel.MYPYC_GROUP + "__mypyc"
            mypyc_lib = group_lib.rsplit(".", 1)[1] + suffix
            shutil.move(str(lib.joinpath(*group_lib.split(".")[:-1], mypyc_lib)), kernel.DIR / mypyc_lib)
            stamp.update(mypyc=mypy.version.__version__, mypyc_lib=mypyc_lib, deps=_deps(srcs))
        stamp["modules"] = modules
    tmp_stamp = kernel.STAMP.with_suffix(".tmp")
    tmp_stamp.write_text(json.dumps(stamp, indent=1) + "\n")
    tmp_stamp.replace(kernel.STAMP)
    if not quiet:
        print(f"batfeed kernel: {len(modules)} modules compiled in {time.perf_counter() - t0:.0f} s "
              f"({kernel._tools(stamp)}) into {kernel.DIR}")
    return 0


def _mypyc_extensions(root: Path, jobs: int) -> list[Any]:
    """mypyc's extensions for :data:`batfeed.kernel.MYPYC_MODULES` (one group), compiled from a copy of
    the batfeed package with ``batfeed.schedulers`` inside it, where mypy finds every module they import."""
    from mypyc.build import mypycify

    pkg = root / "batfeed"
    skip = shutil.ignore_patterns("_kernel", "__pycache__", "*.so", "*.c")
    shutil.copytree(kernel.DIR.parent, pkg, ignore=skip)
    spec = importlib.util.find_spec("batfeed.schedulers")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("batfeed.kernel_build: batfeed.schedulers not found")
    sched = Path(list(spec.submodule_search_locations)[0])
    if sched.resolve() != (kernel.DIR.parent / "schedulers").resolve():   # the source layout: schedulers/
        shutil.rmtree(pkg / "schedulers", ignore_errors=True)
        shutil.copytree(sched, pkg / "schedulers", ignore=skip)
    paths = [str(Path(*n.split(".")).with_suffix(".py")) for n in kernel.MYPYC_MODULES]
    here = os.getcwd()
    os.chdir(root)              # mypy finds the staged batfeed first; its cache stays in the build directory
    try:
        return list(mypycify(paths + ["--ignore-missing-imports"], opt_level="3", debug_level="0",
                             group_name=kernel.MYPYC_GROUP, target_dir=str(root / "c")))
    finally:
        os.chdir(here)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m batfeed.kernel_build", description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compilations")
    ap.add_argument("--quiet", action="store_true", help="print only warnings")
    a = ap.parse_args(argv)
    return build(a.jobs, a.force, a.quiet)


if __name__ == "__main__":
    sys.exit(main())
