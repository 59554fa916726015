"""How the engine talks to a scheduler: in-process (no socket, no JSON) or ZeroMQ (Batsim's REQ side).

:class:`InProcessTransport` drives an unmodified pybatsim ``Batsim``/``BatsimScheduler`` pair:
pybatsim's own ``Batsim.__init__`` and ``_read_bat_msg`` run, only its ZeroMQ ``NetworkHandler``
is replaced by a mailbox that hands over the message dicts.  :class:`ZmqTransport` connects to a
scheduler bound at an endpoint (``tcp://localhost:28000`` by default), exactly like Batsim does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import zmq

from batfeed.errors import BatfeedError


class _Message(dict):
    """A message dict whose str() is short: pybatsim formats every message for a debug log
    before the logger decides to drop it, which would otherwise dominate in-process runs."""

    def __repr__(self) -> str:
        return f"<Batsim message now={self.get('now')} with {len(self.get('events', ()))} events>"

    __str__ = __repr__


class _QuietList(list):
    def __repr__(self) -> str:
        return f"<{len(self)} events>"

    __str__ = __repr__


class _Mailbox:
    """Stands in for pybatsim's NetworkHandler (same method names)."""

    def __init__(self) -> None:
        self.inbox: dict[str, Any] | None = None
        self.outbox: dict[str, Any] | None = None

    def bind(self) -> None:
        pass

    def connect(self) -> None:
        pass

    def recv(self, blocking: bool = False) -> dict[str, Any] | None:
        msg, self.inbox = self.inbox, None
        return msg

    def send(self, msg: dict[str, Any]) -> None:
        self.outbox = msg
        # pybatsim then formats the sent dict for a debug log; keep that cheap
        msg["events"] = _QuietList(msg["events"])

    def close(self) -> None:
        pass


class InProcessTransport:
    """Runs a pybatsim scheduler in this process; messages are passed as Python dicts."""

    name = "pybatsim"

    def __init__(self, scheduler: Any):
        self.scheduler = scheduler
        self.bs: Any = None
        self._box = _Mailbox()

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        box = self._box
        box.inbox, box.outbox = _Message(message), None
        if self.bs is None:
            self.bs = _make_batsim(self.scheduler, box)
        else:
            self.bs.do_next_event()
        if box.outbox is None:
            raise BatfeedError("the scheduler did not answer the message")
        return box.outbox

    def close(self) -> None:
        pass


def _make_batsim(scheduler: Any, box: _Mailbox) -> Any:
    """Build pybatsim's ``Batsim`` with its own constructor, swapping the socket for ``box``."""
    import batsim.batsim as pybatsim

    original = pybatsim.NetworkHandler
    pybatsim.NetworkHandler = lambda *args, **kwargs: box
    try:
        # the constructor reads SIMULATION_BEGINS and answers it, then calls onAfterBatsimInit
        return pybatsim.Batsim(scheduler, "inproc://batfeed", 0)
    finally:
        pybatsim.NetworkHandler = original


class ZmqTransport:
    """Batsim's side of the REQ/REP socket: connects to the scheduler's endpoint.

    Like Batsim it waits for answers without limit, unless ``timeout_s`` is given; ``check_alive``
    (called about twice a second while waiting) raises when a scheduler process has died.
    """

    name = "zmq"

    def __init__(self, endpoint: str = "tcp://localhost:28000", timeout_s: float | None = None,
                 check_alive: Callable[[], None] | None = None):
        self.endpoint = endpoint
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.timeout_s = timeout_s
        self.check_alive = check_alive
        self.socket.connect(endpoint)

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        self.socket.send_string(json.dumps(message))
        waited = 0.0
        while not self.socket.poll(500 if self.check_alive else None if self.timeout_s is None else 500):
            waited += 0.5
            if self.check_alive is not None:
                self.check_alive()
            if self.timeout_s is not None and waited >= self.timeout_s:
                raise BatfeedError(f"no answer from the scheduler at {self.endpoint} within {self.timeout_s} s")
        text = self.socket.recv_string()
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise BatfeedError(f"the scheduler at {self.endpoint} sent invalid JSON: {err}") from None

    def close(self) -> None:
        self.socket.close(linger=0)
