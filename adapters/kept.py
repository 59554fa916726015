"""Read-only views of a streamed conversion's output: the kept jobs' Batsim entries and their delay
profiles, built on demand from the records as the workload writer iterates them (no list of dicts
for the whole trace)."""

from __future__ import annotations

import itertools
import operator
from collections.abc import ItemsView, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from batfeed.adapters.common import BadRecord, TraceJob

if TYPE_CHECKING:
    from batfeed.adapters.cleaning import Cleaner

__all__ = ["DelayProfiles", "JobProfiles", "KeptJobs"]


class KeptJobs(Sequence[dict[str, Any]]):
    """The Batsim jobs of the kept records of an in-memory record list, built as they are read.

    Only the cleaner's bit per record is kept; each iteration builds the dicts again (indexing
    walks the list: use iteration).
    """

    def __init__(self, cleaner: Cleaner, items: Sequence[TraceJob | BadRecord]):
        self._cleaner, self._items = cleaner, items

    def __len__(self) -> int:
        return self._cleaner.nb_kept

    def entries(self) -> Iterator[tuple[dict[str, Any], str, float]]:
        jobs = (it for it in self._items if isinstance(it, TraceJob))
        for n, job in enumerate(self._cleaner.kept_of(jobs), start=1):
            yield self._cleaner.entry(job, n)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (entry for entry, _, _ in self.entries())

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("job index out of range")
        return next(itertools.islice(iter(self), i, None))


class DelayProfiles(Mapping[str, dict[str, Any]]):
    """Delay profiles by name, stored as name -> delay; the profile dicts are built on access."""

    def __init__(self, delays: dict[str, float]):
        self._delays = delays

    def __getitem__(self, name: str) -> dict[str, Any]:
        return {"type": "delay", "delay": self._delays[name]}

    def __iter__(self) -> Iterator[str]:
        return iter(self._delays)

    def __len__(self) -> int:
        return len(self._delays)


class _ProfileItems(ItemsView):
    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        return self._mapping.pairs()  # type: ignore[attr-defined]


class JobProfiles(Mapping[str, dict[str, Any]]):
    """``profiles="job"``: one delay profile per kept job, built from :class:`KeptJobs` as read."""

    def __init__(self, jobs: KeptJobs):
        self._jobs = jobs

    def pairs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for _, name, delay in self._jobs.entries():
            yield name, {"type": "delay", "delay": float(delay)}

    def items(self) -> ItemsView[str, dict[str, Any]]:
        return _ProfileItems(self)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.pairs())

    def __len__(self) -> int:
        return len(self._jobs)

    def __getitem__(self, name: str) -> dict[str, Any]:
        for key, profile in self.pairs():
            if key == name:
                return profile
        raise KeyError(name)


