"""Reading and validating a Batsim 4.2 ``_jobs.csv`` (Batsim's own or batfeed's) for :mod:`batfeed.metrics`."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from batfeed.errors import InputError

JOBS_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
    "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata",
)  # fmt: skip
STRING_COLUMNS = ("job_id", "workload_name", "profile", "final_state", "allocated_resources", "metadata")
NUMERIC_COLUMNS = tuple(c for c in JOBS_COLUMNS if c not in STRING_COLUMNS)
FINAL_STATES = (
    "COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED",
    "REJECTED",
)  # fmt: skip
REJECTED = "REJECTED"
# Columns every row needs, and the ones every non-rejected row needs.
_REQUIRED_ALL = ("submission_time", "requested_number_of_resources")
_REQUIRED_EXECUTED = ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time")
_USED_COLUMNS = ("final_state", "allocated_resources", *_REQUIRED_ALL, *_REQUIRED_EXECUTED, "stretch")

_ALLOC = r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*"
_ALLOC_RE = re.compile(_ALLOC)
_ALLOC_TEXT_RE = re.compile(rf"(?:{_ALLOC})?(?:\n(?:{_ALLOC})?)*")
_NAN_TEXT = ["", "nan", "-nan", "NaN", "-NaN"]
BATSIM_MIN_RUNTIME = 1e-5  # Batsim replaces a zero runtime by this in its stretch


# --------------------------------------------------------------------------- reading


def read_jobs_csv(path: str | Path) -> pd.DataFrame:
    """Read and validate a Batsim ``_jobs.csv``; numeric columns are float, the others str.

    Raises :class:`InputError` for a missing file, a wrong header or an unparsable row (with its line).
    """
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("file not found", name)
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            first = f.readline()
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", name) from None
    if not first.strip():
        raise InputError("empty file: expected the _jobs.csv header", name, 1)
    _check_header([c.strip() for c in next(csv.reader([first]))], name)
    try:
        df = pd.read_csv(
            path, encoding="utf-8-sig", skip_blank_lines=False, keep_default_na=False,
            dtype={c: ("float64" if c in NUMERIC_COLUMNS else str) for c in JOBS_COLUMNS},
            na_values={c: _NAN_TEXT for c in NUMERIC_COLUMNS},
        )  # fmt: skip
    except UnicodeDecodeError as err:
        raise InputError(f"not a UTF-8 text file ({err.reason})", name) from None
    except pd.errors.ParserError as err:
        message, line = _parser_error(err)
        raise InputError(message, name, line) from None
    except ValueError:  # a numeric field that is not a number: find it on the slow path
        line, message = _locate_bad_number(path)
        raise InputError(message, name, line) from None
    df = df.loc[:, list(JOBS_COLUMNS)]
    blank = df.index[df["job_id"].eq("")]
    if len(blank):
        sub = df.loc[blank]
        empty = (sub[list(STRING_COLUMNS)] == "").all(axis=1) & sub[list(NUMERIC_COLUMNS)].isna().all(axis=1)
        df = df.drop(index=blank[empty.to_numpy()])
    _validate_rows(df, name)
    return df.reset_index(drop=True)


def _parser_error(err: pd.errors.ParserError) -> tuple[str, int | None]:
    """(message, line) of a pandas parser error: its C tokenizer says "Expected 17 fields in line 5, saw 18"."""
    text = " ".join(str(err).split())
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if fields:
        want, line, got = (int(g) for g in fields.groups())
        return f"unparsable row: {got} fields, the header has {want}", line
    line = re.search(r"line (\d+)", text)
    return f"unparsable row ({text})", int(line.group(1)) if line else None


def _check_header(header: list[str], name: str) -> None:
    missing = [c for c in JOBS_COLUMNS if c not in header]
    unexpected = [c for c in header if c not in JOBS_COLUMNS]
    problems = []
    if missing:
        problems.append("missing columns: " + ", ".join(missing))
    if unexpected:
        problems.append("unexpected columns: " + ", ".join(repr(c) for c in unexpected))
    if not problems and len(set(header)) != len(header):
        problems.append("duplicate columns")
    if problems:
        raise InputError("not a Batsim _jobs.csv header (" + "; ".join(problems) + ")", name, 1)


def _locate_bad_number(path: Path) -> tuple[int | None, str]:
    """Slow path: (line, message) of the first numeric field that does not parse."""
    raw = pd.read_csv(path, encoding="utf-8-sig", dtype=str, na_filter=False, skip_blank_lines=False)
    best: tuple[int, str] | None = None
    for col in NUMERIC_COLUMNS:
        text = raw[col].str.strip()
        num = pd.to_numeric(text, errors="coerce")
        bad = np.flatnonzero(num.isna().to_numpy() & text.ne("").to_numpy() & ~text.isin(_NAN_TEXT))
        if len(bad) and (best is None or bad[0] < best[0]):
            best = (int(bad[0]), f"column {col}: not a number: {raw[col].iloc[bad[0]]!r}")
    if best is None:
        return None, "unparsable numeric field"
    return best[0] + 2, best[1]


def _validate_rows(df: pd.DataFrame, name: str) -> None:
    """Raise InputError for the first row (lowest line) that breaks a rule."""
    # (mask of bad rows, message template, column whose value fills {})
    state = df["final_state"]
    checks: list[tuple[np.ndarray, str, str]] = [
        (~state.isin(FINAL_STATES).to_numpy(), "unknown final_state {!r}", "final_state"),
        (df["job_id"].eq("").to_numpy(), "empty job_id", "job_id"),
    ]
    checks += [(df[c].isna().to_numpy(), f"empty {c}", c) for c in _REQUIRED_ALL]
    executed = state.ne(REJECTED).to_numpy()
    checks += [
        (executed & df[c].isna().to_numpy(), f"empty {c} for a {{}} job", "final_state")
        for c in _REQUIRED_EXECUTED
    ]
    bad_alloc = _bad_allocations(df["allocated_resources"])
    if bad_alloc is not None:
        checks.append((bad_alloc, "malformed allocated_resources {!r}", "allocated_resources"))
    first: tuple[int, str, str] | None = None
    for mask, template, col in checks:
        idx = np.flatnonzero(mask)
        if len(idx) and (first is None or idx[0] < first[0]):
            first = (int(idx[0]), template, col)
    if first is not None:
        pos, template, col = first
        raise InputError(template.format(df[col].iloc[pos]), name, int(df.index[pos]) + 2)


def _bad_allocations(alloc: pd.Series) -> np.ndarray | None:
    """Mask of malformed interval-set strings, or None when all are well formed (fast path)."""
    try:
        interval_stats(alloc)
        return None
    except ValueError:
        codes, uniques = pd.factorize(alloc.fillna("").astype(str))
        ok = np.array([_valid_interval_set(s.strip()) for s in uniques], dtype=bool)
        return ~ok[codes]


def _valid_interval_set(text: str) -> bool:
    if text == "":
        return True
    if _ALLOC_RE.fullmatch(text) is None:
        return False
    bounds = [part.partition("-") for part in text.split(" ")]
    return all(not hi or int(lo) <= int(hi) for lo, _, hi in bounds)


def _tokens(alloc: pd.Series) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(codes, unique strings, empty mask, owner, lo, hi): the intervals of the unique interval-set strings.

    Vectorised: unique strings are joined into one text, one token per line, and tokenised by pandas' C
    parser. Raises ValueError on a malformed string.
    """
    codes, uniques = pd.factorize(alloc.fillna("").astype(str), sort=False)
    strings = [s.strip() for s in uniques.tolist()]
    if not strings:
        nothing = np.zeros(0)
        return codes, strings, nothing.astype(bool), nothing.astype(int), nothing, nothing
    joined = "\n".join(strings)
    if _ALLOC_TEXT_RE.fullmatch(joined) is None:
        raise ValueError("malformed interval set")
    empty = np.array([s == "" for s in strings])
    placeheld = [s or "0" for s in strings]  # placeholder token, masked by the callers
    ntok = np.array([s.count(" ") + 1 for s in placeheld])
    text = "\n".join(placeheld).replace(" ", "\n").replace("-", ",")
    tokens = pd.read_csv(io.StringIO(text), header=None, names=["lo", "hi"], dtype="float64")
    lo = tokens["lo"].to_numpy()
    hi = tokens["hi"].to_numpy()
    hi = np.where(np.isnan(hi), lo, hi)
    if len(lo) != ntok.sum() or np.isnan(lo).any() or np.any(hi < lo):
        raise ValueError("malformed interval set")
    owner = np.repeat(np.arange(len(strings)), ntok)
    return codes, strings, empty, owner, lo, hi


def allocation_intervals(alloc: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, lo, hi): one entry per machine interval ``lo-hi`` (inclusive) of each row's allocation
    (``"0-3 7"`` gives two); empty allocations give none.  Raises ValueError on a malformed string."""
    codes, strings, empty, owner, lo, hi = _tokens(alloc)
    if not strings:
        return np.zeros(0, dtype=int), np.zeros(0), np.zeros(0)
    keep = ~empty[owner]
    owner, lo, hi = owner[keep], lo[keep], hi[keep]
    order = np.argsort(owner, kind="stable")
    owner, lo, hi = owner[order], lo[order], hi[order]
    starts = np.searchsorted(owner, np.arange(len(strings)))
    ends = np.searchsorted(owner, np.arange(len(strings)), side="right")
    n_of = (ends - starts)[codes]                       # intervals of each row
    rows = np.repeat(np.arange(len(codes)), n_of)
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(n_of) - n_of, n_of)
    idx = np.repeat(starts[codes], n_of) + offset
    return rows, lo[idx], hi[idx]


def interval_stats(alloc: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(count, max id) of each interval-set string like ``"0-3 7 9-12"``; NaN where empty.
    Raises ValueError on a malformed string."""
    codes, strings, empty, owner, lo, hi = _tokens(alloc)
    if not strings:
        return np.full(len(alloc), np.nan), np.full(len(alloc), np.nan)
    count = np.bincount(owner, weights=hi - lo + 1, minlength=len(strings))
    top = np.full(len(strings), -np.inf)
    np.maximum.at(top, owner, hi)
    count[empty] = np.nan
    top[empty] = np.nan
    return count[codes], top[codes]


def coerce_frame(jobs: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in _USED_COLUMNS if c not in jobs.columns]
    if missing:
        raise InputError("jobs table lacks columns: " + ", ".join(missing))
    out = pd.DataFrame(index=jobs.index)
    out["final_state"] = jobs["final_state"].astype(str)
    out["allocated_resources"] = jobs["allocated_resources"].fillna("").astype(str)
    for col in (*_REQUIRED_ALL, *_REQUIRED_EXECUTED, "stretch"):
        out[col] = pd.to_numeric(jobs[col], errors="coerce").astype("float64")
    return out
