"""HTML reports comparing simulation runs (``batfeed report``): figures with matplotlib, one page.

:func:`write_report` is the entry point; :mod:`batfeed.report.table` (the side-by-side metrics of
``batfeed metrics A B``) does not import matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_report"]


def write_report(inputs: Any, output: str | Path, **kwargs: Any) -> Path:
    """``OUTPUT/index.html`` from runs (see :func:`batfeed.report.build.write_report`)."""
    from batfeed.report.build import write_report as write

    return write(inputs, output, **kwargs)
