"""The facade of the direct driver (:mod:`batfeed.engine.direct`): what a batfeed scheduler may use of
pybatsim's ``Batsim`` and ``Job``.  A module of its own, never compiled, so that these protocols keep
their ``__annotations__`` (``tests/test_direct_driver.py`` checks both implementations against them)."""

from __future__ import annotations

from typing import Any, Protocol


class JobFacade(Protocol):
    """The fields of pybatsim's ``Job`` a batfeed scheduler reads or sets."""

    id: str
    submit_time: float
    requested_time: float
    requested_resources: int
    profile: str
    json_dict: dict[str, Any]
    allocation: Any
    job_state: Any
    finish_time: float | None
    return_code: int | None
    progress: Any
    metadata: Any

    @property
    def profile_dict(self) -> dict[str, Any]: ...

    @property
    def workload(self) -> str: ...


class BatsimFacade(Protocol):
    """The part of pybatsim 3.2.1's ``Batsim`` a batfeed scheduler may use (both classes satisfy it)."""

    jobs: dict[str, Any]
    nb_compute_resources: int
    nb_resources: int
    nb_storage_resources: int
    batconf: dict[str, Any]
    profiles: dict[str, dict[str, Any]]
    workloads: dict[str, str]
    dynamic_job_registration_enabled: bool
    ack_of_dynamic_jobs: bool
    profiles_forwarded_on_submission: bool
    forward_unknown_events: bool
    allow_compute_sharing: bool
    allow_storage_sharing: bool
    no_more_static_jobs: bool
    no_more_external_events: bool
    _events_to_send: list[Any]

    def time(self) -> float: ...
    def consume_time(self, t: float) -> float: ...
    def execute_jobs(self, jobs: list[Any], io_jobs: Any = None) -> None: ...
    def execute_job(self, job: Any, io_job: Any = None) -> None: ...
    def reject_jobs(self, jobs: list[Any]) -> None: ...
    def reject_jobs_by_id(self, job_ids: list[str]) -> None: ...
    def kill_jobs(self, jobs: list[Any]) -> None: ...
    def change_job_state(self, job: Any, state: Any) -> None: ...
    def wake_me_up_at(self, time: float) -> None: ...
    def notify_registration_finished(self) -> None: ...
    def notify_registration_continue(self) -> None: ...
    def register_profiles(self, workload_name: str, profiles: dict[str, dict[str, Any]]) -> None: ...
    def register_job(self, id: str, res: int, walltime: float, profile_name: str,
                     subtime: float | None = None) -> Any: ...
    def set_job_metadata(self, job_id: str, metadata: Any) -> None: ...
