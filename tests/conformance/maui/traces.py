"""Maui 3's simulator inputs and output for a scenario: v230 traces, maui.cfg, ``stats/simstat.out``.

Field layouts follow Maui's trace readers (MTrace.c ``MTraceLoadComputeNode`` for the 21-field
resource line, ``MTraceLoadWorkload`` for the 44-field workload line, version 230); the simulator runs
each job for exactly completion − start of its line.
"""

from __future__ import annotations

import socket
from pathlib import Path

from conformance.maui.scenarios import Job, Scenario, jobs

NONE = "[NONE]"

# the simulator's own lines: trace-driven clock (the patched NORMAL policy), one initial job
SIM_CFG = """\
SERVERHOST            {host}
ADMIN1                root
SERVERPORT            {port}
SERVERMODE            SIMULATION
LOGFILE               maui.log
LOGLEVEL              0
RMPOLLINTERVAL        {poll}
SIMRESOURCETRACEFILE  traces/resource.trace
SIMWORKLOADTRACEFILE  traces/workload.trace
SIMJOBSUBMISSIONPOLICY NORMAL
SIMINITIALQUEUEDEPTH  1
SIMAUTOSHUTDOWN       TRUE
# --- policy under test ---
"""


def node_name(i: int) -> str:
    """Maui's name of node ``i`` (0-based): n001…; batfeed's machine ``i`` is the same node."""
    return f"n{i + 1:03d}"


def resource_line(name: str, procs: int = 1, classes: tuple[str, ...] = ("batch",), state: str = "AVAILABLE") -> str:
    """COMPUTENODE line (21 fields): state, event time, name, RM, swap/mem/disk MB, procs, frame, slot,
    slots used, opsys, arch, features, classes (``[c:procs]`` each), network, GRES, RES1-3.  ``state``:
    AVAILABLE (Idle), DEFINED (Down) or DRAINED (Drained) for the whole run (MTrace.c
    ``MTraceLoadComputeNode`` reads no later event: the event time is parsed and not used)."""
    f = ["COMPUTENODE", state, "0", name, "sim", "1024", "1024", "1024", str(procs), "-1", "-1", "1",
         NONE, NONE, NONE, "".join(f"[{c}:{procs}]" for c in classes), NONE, NONE, NONE, NONE, NONE]
    return " ".join(f)


def workload_line(j: Job, node_request: bool = False) -> str:
    """Completed-job line (44 fields); start = submit, completion = submit + runtime; field 24 (0-based 23)
    is the requested QOS (MTrace.c ``MTraceLoadWorkload``'s ``tmpQReq``), field 26 the account.  The nodes
    requested (field 2, ``J->Request.NC``: what MAXNODE limits count, MPolicy.c ``MPolicyCheckLimit``) are 0,
    or with ``node_request`` the task count (whole-node jobs)."""
    end = j.submit + j.runtime
    f = [j.name, str(j.tasks) if node_request else "0", str(j.tasks), j.user, j.group, str(j.wclimit), "Completed",
         f"[{j.cls}:1]",
         str(j.submit), str(j.submit), str(j.submit), str(end), NONE, NONE, NONE, ">=", "0", ">=", "0", NONE,
         str(j.submit), str(j.tasks), "-1", j.qos or NONE, NONE, j.account or NONE, NONE, NONE, "0", "0",
         "[DEFAULT]", "1", "0", "0", "0", "0", "0", NONE, NONE, NONE, NONE, NONE, NONE, NONE]
    assert len(f) == 44
    return " ".join(f)


def write_home(sc: Scenario, home: Path, port: int) -> None:
    """A fresh Maui home directory for scenario ``sc`` (:func:`write_jobs_home`)."""
    write_jobs_home(jobs(sc), sc.nodes, sc.poll, sc.cfg_text(), home, port, sc)


def node_lines(sc: Scenario | None, nodes: int, classes: tuple[str, ...]) -> list[str]:
    """The resource trace's node lines: every node in every job class, unless ``sc.node_classes`` says
    which nodes serve which classes; ``sc.down``/``sc.drained`` nodes DEFINED/DRAINED."""
    out = []
    for i in range(nodes):
        cl = classes
        state = "AVAILABLE"
        if sc is not None:
            if sc.node_classes:
                cl = next(c for a, b, c in sc.node_classes if a <= i <= b)
            state = "DEFINED" if i in sc.down else "DRAINED" if i in sc.drained else state
        out.append(resource_line(node_name(i), 1, cl, state))
    return out


def write_jobs_home(js: list[Job], nodes: int, poll: int, cfg_text: str, home: Path, port: int,
                    sc: Scenario | None = None) -> None:
    """A fresh Maui home directory: traces/ (``nodes`` nodes, states and classes of scenario ``sc`` if
    given, jobs ``js`` in submission order), stats/, log/, spool/, tools/ and maui.cfg (the simulator's
    lines, then ``cfg_text``)."""
    for d in ("traces", "stats", "log", "spool", "tools"):
        (home / d).mkdir(parents=True, exist_ok=True)
    classes = tuple(sorted({j.cls for j in js}))
    (home / "traces" / "resource.trace").write_text(
        "VERSION 230\n" + "".join(line + "\n" for line in node_lines(sc, nodes, classes)))
    (home / "traces" / "workload.trace").write_text(
        "VERSION 230\n" + "".join(workload_line(j, sc is not None and sc.node_request) + "\n"
                                   for j in sorted(js, key=lambda j: j.submit)))
    (home / "maui.cfg").write_text(SIM_CFG.format(host=socket.gethostname(), port=port, poll=poll) + cfg_text)


def parse_simstat(path: Path) -> list[dict]:
    """Records of Maui's ``stats/simstat.out``: job, tasks, submit, start, end, hosts (node names)."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith(("#", "VERSION")):
            continue
        f = line.split()
        if len(f) < 44:
            raise ValueError(f"{path}: short simstat record ({len(f)} fields): {line[:80]}")
        out.append({"job": f[0], "tasks": int(f[2]), "submit": int(f[8]), "start": int(f[10]),
                    "end": int(f[11]), "hosts": f[37]})
    return out
