"""Reader for the strict YAML subset used by batfeed's compose files (standard library only).

The repository does not depend on PyYAML, yet the tests must parse ``docker/*.yml`` and
``docker/run-integration.sh --local`` must read the Batsim command line from the compose file (the
single place where it is written).  The compose files are therefore written in a small subset of
YAML that this module reads *exactly*: anything outside it is refused with the file and line, so a
file accepted here means the same thing to this reader, to any YAML parser and to Docker Compose.

The subset:

- block mappings ``key: value`` / ``key:`` + a more-indented block, keys ``[A-Za-z_][A-Za-z0-9_.-]*``;
- block sequences ``- value`` (items are scalars or flow collections, not nested blocks), indented
  more than their key;
- scalars: double-quoted JSON strings (``"tcp://*:28000"``), or plain words matching
  ``[A-Za-z_][A-Za-z0-9_./-]*`` that YAML does not read as something else (``true``, ``no``, ``null``,
  numbers … must be quoted);
- flow collections written in JSON syntax (``["-p", "/data/platform.xml"]``, ``{}``);
- full-line comments and blank lines; spaces only (no tabs), no inline comments, no anchors, tags,
  multi-line strings or multiple documents.

Also: ``interpolate`` (Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``$$``) and
``merge`` (Compose's rules for ``-f base.yml -f override.yml``: mappings merged, ``command`` and
``entrypoint`` replaced, other sequences appended).

Command line (used by run-integration.sh)::

    python3 docker/compose_subset.py command SERVICE FILE [FILE...]   # one argument per line
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
# Plain words that YAML 1.1 or 1.2 (the Go parser Compose uses reads 1.1 booleans in some places)
# would not read as strings.
NOT_STRINGS = {
    "true", "false", "yes", "no", "on", "off", "y", "n", "null",
    "True", "False", "Yes", "No", "On", "Off", "Y", "N", "Null",
    "TRUE", "FALSE", "YES", "NO", "ON", "OFF", "NULL",
}
REPLACED_ON_MERGE = {"command", "entrypoint"}


class ComposeSyntaxError(ValueError):
    """The file uses YAML outside the supported subset (message names file and line)."""


def _scalar(text: str, where: str) -> Any:
    if text[0] in '"[{':
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise ComposeSyntaxError(f"{where}: not a JSON string or flow collection ({err.msg}): {text}") from None
        if text[0] == '"' and not isinstance(value, str):
            raise ComposeSyntaxError(f"{where}: bad quoted string: {text}")
        return value
    if not PLAIN.fullmatch(text) or text in NOT_STRINGS:
        raise ComposeSyntaxError(f"{where}: quote this value (outside the plain-word subset): {text}")
    return text


class _Reader:
    def __init__(self, text: str, name: str):
        self.name = name
        self.lines: list[tuple[int, int, str]] = []  # (line number, indent, content)
        for number, raw in enumerate(text.splitlines(), start=1):
            if "\t" in raw:
                raise ComposeSyntaxError(f"{name}:{number}: tab character (use spaces)")
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped in ("---", "...") or stripped[0] in "&*!|>%@`'?":
                raise ComposeSyntaxError(f"{name}:{number}: unsupported YAML construct: {stripped}")
            self.lines.append((number, len(raw) - len(raw.lstrip(" ")), stripped))
        self.pos = 0

    def where(self, number: int) -> str:
        return f"{self.name}:{number}"

    def parse(self) -> Any:
        if not self.lines:
            raise ComposeSyntaxError(f"{self.name}: empty document")
        first_indent = self.lines[0][1]
        if first_indent != 0:
            raise ComposeSyntaxError(f"{self.where(self.lines[0][0])}: the document must start at column 0")
        value = self.block(0)
        if self.pos != len(self.lines):
            number, _, content = self.lines[self.pos]
            raise ComposeSyntaxError(f"{self.where(number)}: unexpected indentation: {content}")
        return value

    def block(self, indent: int) -> Any:
        _, _, content = self.lines[self.pos]
        if content == "-" or content.startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent)

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.pos < len(self.lines):
            number, ind, content = self.lines[self.pos]
            if ind < indent:
                break
            if ind > indent:
                raise ComposeSyntaxError(f"{self.where(number)}: unexpected indentation: {content}")
            if not (content.startswith("- ") and content[2:].strip()):
                raise ComposeSyntaxError(f"{self.where(number)}: expected '- value' in a sequence: {content}")
            item = content[2:].strip()
            if re.match(r"[A-Za-z_][A-Za-z0-9_.-]*:( |$)", item):
                raise ComposeSyntaxError(f"{self.where(number)}: no mappings inside sequences: {content}")
            items.append(_scalar(item, self.where(number)))
            self.pos += 1
        return items

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self.pos < len(self.lines):
            number, ind, content = self.lines[self.pos]
            if ind < indent:
                break
            if ind > indent:
                raise ComposeSyntaxError(f"{self.where(number)}: unexpected indentation: {content}")
            key, sep, rest = content.partition(":")
            if not sep or not KEY.fullmatch(key) or (rest and not rest.startswith(" ")):
                raise ComposeSyntaxError(f"{self.where(number)}: expected 'key: value' or 'key:': {content}")
            if key in result:
                raise ComposeSyntaxError(f"{self.where(number)}: duplicate key '{key}'")
            rest = rest.strip()
            self.pos += 1
            if rest:
                result[key] = _scalar(rest, self.where(number))
                continue
            if self.pos == len(self.lines) or self.lines[self.pos][1] <= indent:
                raise ComposeSyntaxError(f"{self.where(number)}: '{key}:' needs a value or an indented block")
            result[key] = self.block(self.lines[self.pos][1])
        return result


def loads(text: str, name: str = "<string>") -> Any:
    return _Reader(text, name).parse()


def load(path: str | Path) -> Any:
    path = Path(path)
    return loads(path.read_text(encoding="utf-8"), str(path))


def merge(base: Any, override: Any, key: str | None = None) -> Any:
    """Compose's merge of an override file into a base file (docs.docker.com/reference/compose-file/merge/)."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            out[k] = merge(base[k], v, k) if k in base else v
        return out
    if isinstance(base, list) and isinstance(override, list) and key not in REPLACED_ON_MERGE:
        return base + [v for v in override if v not in base]
    return override


def load_merged(paths: list[str | Path]) -> dict[str, Any]:
    model: Any = {}
    for path in paths:
        model = merge(model, load(path))
    if not isinstance(model, dict):
        raise ComposeSyntaxError(f"{paths[0]}: a compose file is a mapping")
    return model


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class MissingVariable(ValueError):
    """A ``${VAR:?message}`` whose variable is unset (or empty), as Compose reports it."""


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution: ``$$``, ``$VAR``, ``${VAR}``, ``${VAR:-default}``,
    ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}`` (no nesting)."""

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


def service_command(paths: list[str | Path], service: str, env: dict[str, str] | None = None) -> list[str]:
    """The (interpolated) ``command`` list of ``service`` in the merged files."""
    model = load_merged(paths)
    try:
        command = model["services"][service]["command"]
    except (KeyError, TypeError):
        raise ComposeSyntaxError(f"{paths[0]}: no services.{service}.command") from None
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        raise ComposeSyntaxError(f"{paths[0]}: services.{service}.command must be a list of strings (exec form)")
    return [interpolate(a, env or {}) for a in command]


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "command":
        print("usage: compose_subset.py command SERVICE FILE [FILE...]", file=sys.stderr)
        return 2
    try:
        args = service_command(argv[2:], argv[1])
    except (ComposeSyntaxError, OSError) as err:
        print(f"compose_subset.py: error: {err}", file=sys.stderr)
        return 1
    for arg in args:
        if "\n" in arg:
            print(f"compose_subset.py: error: argument with a newline: {arg!r}", file=sys.stderr)
            return 1
        print(arg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
