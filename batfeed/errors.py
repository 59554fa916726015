"""Error types shared by every batfeed component.

Every error a user can trigger with bad input derives from :class:`BatfeedError`; the CLI
prints ``str(err)`` on one line and exits non-zero, never a traceback.
"""

from __future__ import annotations


class BatfeedError(Exception):
    """Base class of every error batfeed reports to a user."""


class InputError(BatfeedError):
    """Bad input file: names the file and, when known, the line (``file:line: message``)."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class UnsupportedInput(InputError):
    """Valid Batsim input that the embedded engine cannot model (use real Batsim)."""


class ProtocolError(BatfeedError):
    """A scheduler sent a decision that Batsim 4.2 would abort on.

    The message names the job (or event) and the rule that was broken.
    """
