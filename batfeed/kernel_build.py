"""Builds the compiled kernel: ``python -m batfeed.kernel_build [--force] [--jobs N]``.

Each module of :data:`batfeed.kernel.MODULES` is compiled, unchanged, by Cython (``cythonize``) and
the C compiler setuptools finds (``build_ext``), into ``batfeed/_kernel/<module><EXT_SUFFIX>``, with
the augmenting ``.pxd`` next to its ``.py`` when there is one (C types for its classes, docs/kernel.md);
``build.json`` records the Python, Cython and the SHA-256 of each source and ``.pxd`` (see batfeed/kernel.py).
Nothing to do when the kernel is up to date.  Without Cython, setuptools or a C compiler, one
warning line says so and the exit status is 0: batfeed then runs on the pure-Python path.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

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
    return all(mods[n]["source"] == _rel(p) and (kernel.DIR / mods[n]["so"]).is_file()
               and kernel._digest(p) == mods[n]["sha256"] and kernel._pxd_digest(p) == mods[n].get("pxd_sha256")
               for n, p in srcs.items())


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
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    t0 = time.perf_counter()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    kernel.DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="batfeed-kernel-") as tmp:
        staged = _stage(srcs, Path(tmp, "src"))
        exts = [Extension(n, [p], extra_compile_args=["-O2", "-g0"]) for n, p in staged.items()]
        exts = cythonize(exts, build_dir=os.path.join(tmp, "c"), compiler_directives=DIRECTIVES,
                         include_path=[os.path.join(tmp, "src")], nthreads=jobs, quiet=True)
        lib = Path(tmp, "lib")
        dist = Distribution({"ext_modules": exts, "script_args": [
            "build_ext", "--build-lib", str(lib), "--build-temp", os.path.join(tmp, "o"), "-j", str(jobs)]})
        dist.parse_command_line()
        try:
            dist.run_commands()
        except (Exception, SystemExit) as e:      # distutils reports a compiler failure by SystemExit
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
            if kernel._pxd_digest(p) is not None:
                modules[n]["pxd_sha256"] = kernel._pxd_digest(p)
    stamp = {"python": sys.implementation.cache_tag, "cython": Cython.__version__, "modules": modules}
    tmp_stamp = kernel.STAMP.with_suffix(".tmp")
    tmp_stamp.write_text(json.dumps(stamp, indent=1) + "\n")
    tmp_stamp.replace(kernel.STAMP)
    if not quiet:
        print(f"batfeed kernel: {len(modules)} modules compiled in {time.perf_counter() - t0:.0f} s "
              f"(Cython {Cython.__version__}) into {kernel.DIR}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m batfeed.kernel_build", description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compilations")
    ap.add_argument("--quiet", action="store_true", help="print only warnings")
    a = ap.parse_args(argv)
    return build(a.jobs, a.force, a.quiet)


if __name__ == "__main__":
    sys.exit(main())
