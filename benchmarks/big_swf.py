"""Build a large SWF trace by repeating the data lines of a real one (for memory/scale measurements).

    .venv/bin/python benchmarks/big_swf.py -o /tmp/big.swf                       # 2,000,000 lines from CEA-Curie
    .venv/bin/python benchmarks/big_swf.py -o /tmp/big.swf.gz --lines 500000 --source other.swf.gz

The source's header is copied; its data lines are then written again and again, copy ``k`` with job
ids (and ``preceding_job`` references) shifted by ``k`` times the largest id and submit times by
``k`` times the trace's span (plus one day), until ``--lines`` data lines are written.  Fields are
written as in the source, only fields 1, 2 and 17 change.  ``.gz`` output is gzip-compressed.
Prints the path and the number of data lines written.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CURIE = REPO.parent / "shared/data/swf/CEA-Curie-2011-2.1-cln.swf.gz"
DAY = 86_400


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def build(source: Path, out: Path, lines: int) -> int:
    """Write ``lines`` data lines (repeated copies of ``source``'s) to ``out``; returns the count."""
    from batfeed.adapters.common import read_lines

    header: list[str] = []
    data: list[list[str]] = []
    for _, text in read_lines(source):
        stripped = text.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            if not data:
                header.append(text)
            continue
        data.append(stripped.split())
    if not data:
        raise SystemExit(f"{source}: no data line")
    id_shift = max(int(float(t[0])) for t in data) + 1
    submits = [float(t[1]) for t in data]
    time_shift = max(submits) - min(submits) + DAY
    opener = gzip.open if out.name.endswith(".gz") else open
    written = 0
    with opener(out, "wt", encoding="utf-8") as f:  # type: ignore[operator]
        f.write("\n".join(header) + "\n")
        f.write(f"; Note: {source.name} data lines repeated to {lines} lines by benchmarks/big_swf.py\n")
        k = 0
        while written < lines:
            chunk = []
            for tokens in data[: lines - written]:
                t = list(tokens)
                t[0] = str(int(float(t[0])) + k * id_shift)
                t[1] = _fmt(float(t[1]) + k * time_shift)
                if len(t) > 16 and float(t[16]) > 0:
                    t[16] = str(int(float(t[16])) + k * id_shift)
                chunk.append(" ".join(t))
            f.write("\n".join(chunk) + "\n")
            written += len(chunk)
            k += 1
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="output SWF (.gz: compressed)")
    ap.add_argument("--lines", type=int, default=2_000_000, help="data lines to write (default 2,000,000)")
    ap.add_argument("--source", default=str(CURIE), help="SWF trace to repeat (default: CEA-Curie in ../shared)")
    args = ap.parse_args()
    source = Path(args.source)
    if not source.exists():
        print(f"{source}: not found (give --source)", file=sys.stderr)
        return 1
    n = build(source, Path(args.output), args.lines)
    print(f"{args.output}: {n} data lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
