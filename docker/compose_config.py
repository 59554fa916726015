"""Read batfeed's compose files as Docker Compose does, with PyYAML (``yaml.safe_load``).

Where a Docker engine exists, ``docker compose -f A -f B config`` is the reference; this module is
the part of it the project's checks and ``docker/run-integration.sh --local/--embedded`` need, on
machines without Docker.  The subset of the Compose specification implemented:

- parsing: YAML through ``yaml.safe_load`` (anchors, aliases, ``<<`` merge keys, block scalars …);
  a file must be a mapping; ``!reset``/``!override`` and other Compose tags are refused;
- ``merge`` (``-f base.yml -f override.yml``, docs.docker.com/reference/compose-file/merge/): mappings
  are merged key by key, ``command``, ``entrypoint`` and ``healthcheck.test`` are replaced, other
  sequences are appended without duplicates, scalars are replaced (no ``volumes``/``ports`` merge by
  target, no ``extends``/``include``, no ``.env`` file, no profiles);
- ``interpolate`` (docs.docker.com/reference/compose-file/interpolation/): ``$$``, ``$VAR``,
  ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}`` in string
  values (not keys); no nested ``${...}`` in defaults, no ``:+``/``+``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

try:
    import yaml
except ImportError:  # reported by load(), so that the standard-library parts stay usable
    yaml = None

REPLACED_ON_MERGE = {"command", "entrypoint", "test"}
PYYAML_MISSING = (f"PyYAML is not installed in {sys.executable} (it reads the compose files): use a Python with "
                  "PyYAML, e.g. the repository's .venv/bin/python (scripts/bootstrap.sh)")


class ComposeError(ValueError):
    """A compose file that cannot be read (message names the file, and the line for YAML errors)."""


def loads(text: str, name: str = "<string>") -> dict[str, Any]:
    if yaml is None:
        raise ComposeError(PYYAML_MISSING)
    try:
        model = yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{name}:{mark.line + 1}" if mark else name
        raise ComposeError(f"{where}: invalid YAML: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise ComposeError(f"{name}: invalid YAML: {err}") from None
    if not isinstance(model, dict):
        raise ComposeError(f"{name}: a compose file is a mapping (got {type(model).__name__})")
    return model


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    return loads(path.read_text(encoding="utf-8"), str(path))


def merge(base: Any, override: Any, key: str | None = None) -> Any:
    """Compose's merge of an override file into a base file."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = merge(base[k], v, k) if k in base else v
        return out
    if isinstance(base, list) and isinstance(override, list) and key not in REPLACED_ON_MERGE:
        return base + [v for v in override if v not in base]
    return override


def load_merged(paths: list[str | Path]) -> dict[str, Any]:
    if not paths:
        raise ComposeError("no compose file")
    model: dict[str, Any] = {}
    for path in paths:
        model = merge(model, load(path))
    return model


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class MissingVariable(ComposeError):
    """A ``${VAR:?message}`` whose variable is unset (or empty), as Compose reports it."""


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution in one string."""

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, arg = m.group(1) or m.group(4), m.group(2), m.group(3)
        value = env.get(name)
        missing = not value if op and op.startswith(":") else value is None
        if op in (":-", "-") and missing:
            return arg
        if op in (":?", "?") and missing:
            raise MissingVariable(f"required variable {name} is missing a value: {arg}")
        return value or ""

    return _VAR.sub(repl, text)


def interpolate_model(value: Any, env: dict[str, str]) -> Any:
    """``interpolate`` applied to every string value of a parsed model (keys are left alone)."""
    if isinstance(value, str):
        return interpolate(value, env)
    if isinstance(value, dict):
        return {k: interpolate_model(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_model(v, env) for v in value]
    return value


def config(paths: list[str | Path], env: dict[str, str]) -> dict[str, Any]:
    """The merged, interpolated model (what ``docker compose config`` prints, for this subset)."""
    return interpolate_model(load_merged(paths), env)


def service_command(paths: list[str | Path], service: str, env: dict[str, str] | None = None) -> list[str]:
    """The (interpolated) exec-form ``command`` of ``service`` in the merged files; only the command is
    interpolated, so other values' required variables (``${BATFEED_DATA:?…}``) need not be set."""
    model = load_merged(paths)
    try:
        command = model["services"][service]["command"]
    except (KeyError, TypeError):
        raise ComposeError(f"{paths[0]}: no services.{service}.command") from None
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise ComposeError(f"{paths[0]}: services.{service}.command must be a list of strings (exec form)")
    return [interpolate(a, env or {}) for a in command]
