"""How the engine talks to a scheduler: in-process (no socket, no JSON) or ZeroMQ (Batsim's REQ side).

:class:`InProcessTransport` drives an unmodified pybatsim ``Batsim``/``BatsimScheduler`` pair:
pybatsim's own ``Batsim.__init__`` and ``_read_bat_msg`` run, only its ZeroMQ ``NetworkHandler``
is replaced by a mailbox that hands over the message dicts.  :class:`ZmqTransport` connects to a
scheduler bound at an endpoint (``tcp://localhost:28000`` by default), exactly like Batsim does.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
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


WAIT_NOTICE_S = 60.0
"""Without a timeout, a line on stderr says what is awaited after this long with no answer
(``BATFEED_WAIT_NOTICE`` overrides it, in seconds: for tests)."""


class ZmqTransport:
    """Batsim's side of the REQ/REP socket: connects to the scheduler's endpoint.

    Like Batsim it waits for answers without limit, unless ``timeout_s`` is given (then a
    :class:`BatfeedError` after ``timeout_s`` seconds without an answer to one message); without a
    limit it prints one line on stderr after :data:`WAIT_NOTICE_S` and keeps waiting.  ``check_alive``
    (called about twice a second while waiting) raises when a scheduler process has died.  Whether
    anything accepted the connection (a socket monitor) is read only when an answer is late.
    """

    name = "zmq"

    def __init__(self, endpoint: str = "tcp://localhost:28000", timeout_s: float | None = None,
                 check_alive: Callable[[], None] | None = None):
        if timeout_s is not None and not timeout_s > 0:
            raise BatfeedError(f"the timeout must be > 0 seconds (got {timeout_s:g})")
        self.endpoint = endpoint
        self.context: Any = zmq.Context.instance()
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.timeout_s = timeout_s
        self.check_alive = check_alive
        # the monitor (attached before connecting, not to miss the connection) tells a late answer's cause
        self.monitor = self.socket.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        self.connected = self.ever_connected = False
        try:
            self.socket.connect(endpoint)
        except zmq.ZMQError as err:
            self.close()
            raise BatfeedError(endpoint_error("connect to", endpoint, err)) from None
        self.notice_s = float(os.environ.get("BATFEED_WAIT_NOTICE", WAIT_NOTICE_S))

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        self.socket.send_string(json.dumps(message))
        if not self.socket.poll(500):
            self._wait(message)
        text = self.socket.recv_string()
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise BatfeedError(f"the scheduler at {self.endpoint} sent invalid JSON: {err}") from None

    def _wait(self, message: dict[str, Any]) -> None:
        """A late answer: check the scheduler process, warn once, give up after the timeout."""
        start = time.monotonic() - 0.5
        noticed = False
        while True:
            if self.check_alive is not None:
                self.check_alive()
            waited = time.monotonic() - start
            if self.timeout_s is not None and waited >= self.timeout_s:
                raise BatfeedError(f"no answer from the scheduler at {self.endpoint} within {self.timeout_s:g} s "
                                   f"(awaiting its reply to {_describe(message)}){self._state()}")
            if self.timeout_s is None and not noticed and waited >= self.notice_s:
                noticed = True
                print(f"batfeed: still waiting after {self.notice_s:g} s for the scheduler at {self.endpoint} to "
                      f"reply to {_describe(message)}{self._state()}; no --timeout: waiting on, like Batsim",
                      file=sys.stderr, flush=True)
            left = 0.5 if self.timeout_s is None else min(0.5, max(self.timeout_s - waited, 0.01))
            if self.socket.poll(int(left * 1000)):
                return

    def _state(self) -> str:
        """What the socket monitor saw: ``": nothing is listening there"`` and so on."""
        from zmq.utils.monitor import recv_monitor_message

        while self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)["event"]
            self.connected = event == zmq.EVENT_CONNECTED
            self.ever_connected = self.ever_connected or self.connected
        if self.connected:
            return ": it is connected but silent (stalled or busy)"
        if self.ever_connected:
            return ": the connection was lost"
        return ": nothing is listening there"

    def close(self) -> None:
        self.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.socket.close(linger=0)


def _describe(message: dict[str, Any]) -> str:
    """``the message at t=12.000000 (JOB_SUBMITTED x3, REQUESTED_CALL)``."""
    counts: dict[str, int] = {}
    for ev in message.get("events", ()):
        counts[ev.get("type", "?")] = counts.get(ev.get("type", "?"), 0) + 1
    kinds = ", ".join(k if n == 1 else f"{k} x{n}" for k, n in counts.items()) or "no events"
    return f"the message at t={float(message.get('now', 0.0)):f} ({kinds})"


def endpoint_error(action: str, endpoint: str, err: zmq.ZMQError) -> str:
    """A one-line reason a ZeroMQ ``bind``/``connect`` failed."""
    if err.errno == errno.EADDRINUSE:
        return f"cannot {action} {endpoint}: address already in use (another program, maybe another scheduler, " \
               "listens on that port)"
    if err.errno in (errno.EINVAL, errno.EPROTONOSUPPORT):
        return f"cannot {action} '{endpoint}': not a valid ZeroMQ endpoint (expected tcp://HOST:PORT, e.g. " \
               "tcp://*:28000 to bind, tcp://localhost:28000 to connect)"
    if err.errno == errno.ENODEV:
        return f"cannot {action} {endpoint}: no such network interface or address on this machine"
    return f"cannot {action} {endpoint}: {err.strerror}"
