"""One week's result of ``batfeed validate`` (:mod:`batfeed.validate`), which
:mod:`batfeed.validate_plots` draws: its own module, below both."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from batfeed.contention import summarise


@dataclass
class WeekResult:
    week: int
    jobs: int                   # scored jobs
    mean: float
    median: float
    std: float
    wall: float
    unscored: int = 0           # target-week jobs without recorded wait or not started
    recorded: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    simulated: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    room: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)

    @property
    def contention(self) -> tuple[int, float, float, float]:
        """(jobs, mean, median, std) of the error over contention-bound jobs (not "room" ones)."""
        err = (self.simulated - self.recorded)[~self.room] if len(self.room) else np.zeros(0)
        return (len(err), *summarise(err))
