"""Enumerate Batsim 4.2.1's own test scenarios (``test/test_*.py``) as its pytest would, without running them.

Batsim's ``test/conftest.py`` parametrises fixtures in ``pytest_generate_tests`` and some tests add
``@pytest.mark.parametrize``; each test then builds a ``batsim ...`` command line (``helper.gen_batsim_cmd``)
and a scheduler command line, writes a scheduler configuration file and hands both to robin
(``helper.run_robin``).  Here the conftest, ``helper.py`` and the test modules are executed in private
module objects (``pytest``, ``pandas`` and ``numpy`` replaced by stubs, nothing added to ``sys.modules``),
``pytest_generate_tests`` runs on a fake metafunc, and each test function is *called* for every combination
with robin, file writes and result analysis intercepted: what it would have run is recorded, exactly.

A test that raises after a successful robin run (``test_energy_forgot_cli_flag``, ``test_generic_events_fail``)
expects Batsim to fail; that is recorded as ``expects_failure``.  Redis combinations are left out.
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

OUT = "/@OUT@"                 # placeholder for the output directory a test would get from init_instance
EXCLUDED_FILES = ("test_redis.py",)


@dataclass
class Scenario:
    """One parametrised Batsim test: what it runs, with the output directory left as ``OUT``."""

    id: str                             # test_simple.py::test_basic1[small-delays-fcfs]
    test_file: str
    test: str
    params: dict[str, str]              # argument -> parameter name, in signature order
    instance: str                       # the test's own instance name (test-out/<instance>)
    batsim_args: list[str]              # after "batsim", without -s
    sched_args: list[str]               # ["batsched", "-v", ...], ["pybatsim", ...] or [] (no scheduler)
    files: dict[str, str] = field(default_factory=dict)     # file name in OUT -> content
    expects_failure: str = ""           # the test's error when Batsim succeeds ("" if it expects success)

    def _opt(self, *flags: str) -> list[str]:
        a = self.batsim_args
        return [a[i + 1] for i in range(len(a) - 1) if a[i] in flags]

    @property
    def platform(self) -> str:
        return next(iter(self._opt("-p")), "")

    @property
    def workloads(self) -> list[str]:
        return self._opt("-w", "-W")

    @property
    def events(self) -> list[str]:
        return self._opt("--events")

    def resolved(self, out: str) -> tuple[list[str], list[str], dict[str, str]]:
        """Batsim's arguments, the scheduler's and the files to write, for the output directory ``out``."""
        def sub(s: str) -> str:
            return s.replace(OUT, out)
        return ([sub(a) for a in self.batsim_args], [sub(a) for a in self.sched_args],
                {name: sub(text) for name, text in self.files.items()})


class AnalysisReached(Exception):
    """Raised by the stubs when a test goes on to analyse Batsim's outputs: it expected success."""


class _Stub(ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AnalysisReached(f"{self.__name__}.{name}")


def _pytest_stub() -> ModuleType:
    def parametrize(argnames: str | list[str], argvalues: list[Any], **_: Any) -> Callable[[Any], Any]:
        def mark(func: Any) -> Any:
            func.__dict__.setdefault("_suite_marks", []).append((argnames, list(argvalues)))
            return func
        return mark

    def fixture(*args: Any, **_: Any) -> Any:
        return args[0] if args and callable(args[0]) else (lambda f: f)

    mod = ModuleType("pytest")
    mod.mark = SimpleNamespace(parametrize=parametrize)        # type: ignore[attr-defined]
    mod.fixture = fixture                                       # type: ignore[attr-defined]
    return mod


def _load(path: Path, stubs: dict[str, ModuleType]) -> ModuleType:
    """Execute ``path`` in a fresh module whose imports of the ``stubs`` names get the stubs."""
    real = builtins.__import__

    def imp(name: str, globs: Any = None, locs: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        return stubs[name] if name in stubs and level == 0 else real(name, globs, locs, fromlist, level)

    mod = ModuleType(path.stem)
    mod.__file__ = str(path)
    mod.__dict__["__builtins__"] = {**vars(builtins), "__import__": imp}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), mod.__dict__)
    return mod


class _Metafunc:
    def __init__(self, fixturenames: list[str]) -> None:
        self.fixturenames = fixturenames
        self.config = SimpleNamespace(option=SimpleNamespace(with_valgrind=False))
        self.params: dict[str, list[Any]] = {}

    def parametrize(self, argnames: str | list[str], argvalues: list[Any], **_: Any) -> None:
        if not isinstance(argnames, str) or "," in argnames:     # Batsim's tests parametrise one name at a time
            raise NotImplementedError(f"parametrize({argnames!r}): only single names are handled")
        self.params[argnames.strip()] = list(argvalues)


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


def _is_redis(value: Any) -> bool:
    return type(value).__name__ == "RedisMode" and bool(getattr(value, "enabled", False))


class _Capture:
    """Stands in for robin and the file helpers while a test function runs."""

    def __init__(self, helper: ModuleType) -> None:
        self.instance_name = ""
        self.files: dict[str, str] = {}
        self.robin: Any = None
        base = helper.RobinInstance
        cap = self

        class Robin(base):                              # type: ignore[misc, valid-type]
            def to_file(self, filename: str) -> None:
                cap.robin = self

        self.Robin = Robin

    def init_instance(self, test_name: str) -> tuple[str, str, str]:
        self.instance_name = test_name
        return OUT, f"{OUT}/instance.yaml", f"{OUT}/schedconf.json"

    def write_file(self, filename: str, content: str) -> None:
        if not filename.startswith(OUT + "/"):
            raise RuntimeError(f"the test writes outside its output directory: {filename}")
        self.files[filename[len(OUT) + 1:]] = content

    def run_robin(self, filename: str) -> SimpleNamespace:
        if self.robin is None:
            raise RuntimeError("run_robin without a robin instance")
        return SimpleNamespace(returncode=0)

    @staticmethod
    def open(*_: Any, **__: Any) -> Any:
        raise AnalysisReached("open")

    def patch(self, mod: ModuleType) -> None:
        for name in ("init_instance", "write_file", "run_robin", "open"):
            mod.__dict__[name] = getattr(self, name)
        mod.__dict__["RobinInstance"] = self.Robin


def _call(mod: ModuleType, helper: ModuleType, func: Any, kwargs: dict[str, Any]) -> tuple[_Capture, str]:
    cap = _Capture(helper)
    cap.patch(mod)
    expects = ""
    try:
        func(**kwargs)
    except AnalysisReached:
        pass
    except Exception as err:                        # raised after a "successful" robin run: expects failure
        if cap.robin is None:
            raise
        expects = str(err).split(" (")[0] or type(err).__name__
    if cap.robin is None:
        raise RuntimeError(f"{func.__name__} ran no robin instance")
    return cap, expects


def _scenario(file: str, func: Any, names: list[str], combo: tuple[Any, ...], cap: _Capture,
              expects: str) -> Scenario:
    params = {n: _name(v) for n, v in zip(names, combo, strict=True)}
    batcmd = shlex.split(cap.robin.batcmd)
    if not batcmd or batcmd[0] != "batsim":
        raise RuntimeError(f"{func.__name__}: unexpected batsim command {cap.robin.batcmd!r}")
    return Scenario(id=f"{file}::{func.__name__}[{'-'.join(params.values())}]", test_file=file,
                    test=func.__name__, params=params, instance=cap.instance_name, batsim_args=batcmd[1:],
                    sched_args=shlex.split(cap.robin.schedcmd), files=dict(cap.files), expects_failure=expects)


def enumerate_scenarios(test_dir: Path, exclude: tuple[str, ...] = EXCLUDED_FILES) -> list[Scenario]:
    """Every (non-Redis) scenario of the Batsim tests in ``test_dir``, in collection order."""
    stubs: dict[str, ModuleType] = {"pytest": _pytest_stub(), "pandas": _Stub("pandas"), "numpy": _Stub("numpy")}
    helper = _load(test_dir / "helper.py", stubs)
    stubs["helper"] = helper
    conftest = _load(test_dir / "conftest.py", stubs)
    scenarios: list[Scenario] = []
    for path in sorted(test_dir.glob("test_*.py")):
        if path.name in exclude:
            continue
        mod = _load(path, stubs)
        for fname, func in list(vars(mod).items()):
            if not (fname.startswith("test") and inspect.isfunction(func)
                    and func.__code__.co_filename == str(path)):
                continue
            argnames = list(inspect.signature(func).parameters)
            meta = _Metafunc(argnames)
            conftest.pytest_generate_tests(meta)
            for argn, values in func.__dict__.get("_suite_marks", []):
                meta.parametrize(argn, values)
            names = [n for n in argnames if n in meta.params]
            missing = [n for n in argnames if n not in meta.params]
            if missing:
                raise RuntimeError(f"{path.name}::{fname}: no parameters for {missing}")
            for combo in itertools.product(*(meta.params[n] for n in names)):
                if any(_is_redis(v) for v in combo):
                    continue
                cap, expects = _call(mod, helper, func, dict(zip(names, combo, strict=True)))
                scenarios.append(_scenario(path.name, func, names, combo, cap, expects))
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        raise RuntimeError("duplicate scenario ids")
    return scenarios
