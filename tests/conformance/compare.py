"""Load recordings of real Batsim, replay them on batfeed's engine with the same probe, compare.

A recording is a directory with the Batsim inputs, ``scenario.json``, ``messages.jsonl.gz`` (one
``{"recv": <Batsim message>, "sent": <probe reply>}`` per line) and Batsim's ``out_jobs.csv``,
``out_machine_states.csv``, ``out_schedule.csv`` (each possibly ``.gz``).  The golden recordings
(``tests/data/batsim_golden``, copied from ``shared/data/batsim_golden``) use their own file names and are
described by :data:`GOLDEN`.

Comparison rules (the only normalisations):

- messages: equal as JSON values *with their types* (``1`` ≠ ``1.0``, ``true`` ≠ ``1``), except the
  workload paths of SIMULATION_BEGINS' ``workloads``, compared by file name (Batsim sends the absolute
  path it was given, which depends on where the recording was made);
- ``_jobs.csv`` and ``_machine_states.csv``: byte-identical;
- ``_schedule.csv``: identical except the wall-clock fields ``scheduling_time`` and ``simulation_time``
  and ``batsim_version`` (Batsim writes ``4.2.1``; the engine deliberately writes
  ``4.2.1+batfeed-<version>`` to tell its outputs apart).
"""

from __future__ import annotations

import gzip
import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.probe import Probe

TESTS = Path(__file__).resolve().parent.parent
CONFORMANCE_DATA = TESTS / "data" / "conformance"
GOLDEN_DATA = TESTS / "data" / "batsim_golden"

# golden prefix -> (workloads, events files, probe options); all on platform_100.xml, no Batsim switches
GOLDEN = {
    "s1_kth300": (["kth300.json"], [], {}),
    "s2_kth200_events": (["kth200.json"], ["kth200_events.txt"], {}),
    "s3_kth300_call_me_later": (["kth300.json"], [], {"call_me_later": 60}),
}
SCHEDULE_IGNORED = ("scheduling_time", "simulation_time", "batsim_version")
TRUNC = 900


@dataclass
class Recording:
    name: str
    dir: Path
    platform: Path
    workloads: list[Path]
    events: list[Path]
    probe_options: dict[str, Any]
    engine_config: dict[str, Any] = field(default_factory=dict)
    master_host: str = "master_host"
    mmax: int | None = None
    messages_file: Path | None = None
    outputs: dict[str, Path] = field(default_factory=dict)   # "_jobs.csv" -> file (maybe .gz)

    def messages(self) -> list[dict[str, Any]]:
        assert self.messages_file is not None
        with gzip.open(self.messages_file, "rt") as f:
            return [json.loads(line) for line in f]


def _output_files(dir: Path, prefix: str) -> dict[str, Path]:
    out = {}
    for suffix in ("_jobs.csv", "_machine_states.csv", "_schedule.csv"):
        for cand in (dir / f"{prefix}{suffix}", dir / f"{prefix}{suffix}.gz"):
            if cand.exists():
                out[suffix] = cand
    return out


def load_recording(dir: Path) -> Recording:
    from conformance.scenarios import Scenario

    sc = Scenario.load(dir)
    return Recording(name=sc.name, dir=dir, platform=dir / sc.platform, workloads=[dir / w for w in sc.workloads],
                     events=[dir / e for e in sc.events], probe_options=sc.probe_options,
                     engine_config=sc.engine_config(), master_host=sc.master_host, mmax=sc.mmax,
                     messages_file=dir / "messages.jsonl.gz", outputs=_output_files(dir, "out"))


def load_golden(name: str, dir: Path = GOLDEN_DATA) -> Recording:
    wls, evs, opts = GOLDEN[name]
    return Recording(name=name, dir=dir, platform=dir / "platform_100.xml", workloads=[dir / w for w in wls],
                     events=[dir / e for e in evs], probe_options=opts,
                     messages_file=dir / f"{name}.messages.jsonl.gz", outputs=_output_files(dir, name))


def recorded_names(data: Path = CONFORMANCE_DATA) -> list[str]:
    return sorted(p.parent.name for p in data.glob("*/scenario.json"))


# ---------------------------------------------------------------------- running the engine
class ProbeTransport:
    """The engine's transport: JSON round-trips every message both ways, as over Batsim's socket,
    and logs ``{"recv", "sent"}`` exactly like :func:`conformance.probe.serve`."""

    def __init__(self, probe: Probe):
        self.probe = probe
        self.log: list[dict[str, Any]] = []

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        msg = json.loads(json.dumps(message))
        reply = json.loads(json.dumps(self.probe.handle(msg)))
        self.log.append({"recv": msg, "sent": reply})
        return json.loads(json.dumps(reply))

    def close(self) -> None:
        pass


@dataclass
class EngineRun:
    log: list[dict[str, Any]]
    prefix: Path
    error: str | None   # the exception raised by the engine (or the probe), if any


def run_engine(rec: Recording, out_dir: Path) -> EngineRun:
    from batfeed.engine import EngineConfig, load_simulation

    transport = ProbeTransport(Probe(rec.probe_options))
    prefix = out_dir / "out"
    error = None
    try:
        sim = load_simulation(rec.platform, rec.workloads, rec.events, EngineConfig(**rec.engine_config),
                              master_host=rec.master_host, mmax=rec.mmax)
        sim.run(transport, prefix)
    except Exception as err:  # reported with the first message difference
        tb = traceback.format_exception(err)
        error = f"{type(err).__name__}: {err}\n" + "".join(tb[-3:])
    return EngineRun(transport.log, prefix, error)


# ---------------------------------------------------------------------- comparing
def normalise(entry: dict[str, Any]) -> dict[str, Any]:
    """The only message normalisation: SIMULATION_BEGINS' workload paths -> file names."""
    entry = json.loads(json.dumps(entry))
    for e in entry.get("recv", {}).get("events", []):
        if e.get("type") == "SIMULATION_BEGINS" and isinstance(e.get("data", {}).get("workloads"), dict):
            e["data"]["workloads"] = {k: str(v).rsplit("/", 1)[-1] for k, v in e["data"]["workloads"].items()}
    return entry


def _kind(x: Any) -> str:
    return "bool" if isinstance(x, bool) else type(x).__name__


def where(a: Any, b: Any) -> list[str | int] | None:
    """Path (keys / indexes) of the first difference between JSON values ``a`` (expected) and ``b``
    (got), types included (``1`` ≠ ``1.0``); None if they are equal."""
    if _kind(a) != _kind(b):
        return []
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return [k]
            w = where(a[k], b[k])
            if w is not None:
                return [k, *w]
        return None
    if isinstance(a, list):
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                return [i]
            w = where(a[i], b[i])
            if w is not None:
                return [i, *w]
        return None
    return None if a == b else []


def path_str(path: list[str | int]) -> str:
    out = "$"
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(p)}]"
    return out


def _get(x: Any, path: list[str | int]) -> Any:
    for p in path:
        try:
            x = x[p]
        except (KeyError, IndexError, TypeError):
            return "<absent>"
    return x


def _trunc(x: Any, n: int = TRUNC) -> str:
    s = x if isinstance(x, str) else json.dumps(x, sort_keys=True)
    return s if len(s) <= n else s[:n] + f"… ({len(s)} chars)"


def _brief(msg: dict[str, Any] | None) -> str:
    if msg is None:
        return "<none>"
    evs = []
    for e in msg.get("events", []):
        d = e.get("data", {})
        tag = d.get("job_id") or d.get("type") or d.get("job_ids") or ""
        evs.append(f"{e.get('type')}({tag})@{e.get('timestamp')!r}")
    return f"now={msg.get('now')!r} [{', '.join(evs)}]"


def first_message_difference(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> str | None:
    for i in range(max(len(expected), len(got))):
        x = normalise(expected[i]) if i < len(expected) else None
        g = normalise(got[i]) if i < len(got) else None
        if x is not None and g is not None and where(x, g) is None:
            continue
        lines = [f"messages: first difference at message index {i} "
                 f"(real Batsim sent {len(expected)} messages, the engine {len(got)})"]
        if i > 0:
            lines.append(f"  previous (identical) message {i - 1}: Batsim→ {_brief(expected[i - 1]['recv'])}"
                         f"  probe→ {_brief(expected[i - 1]['sent'])}")
        if x is None or g is None:
            lines.append(f"  Batsim: {_brief(x['recv']) if x else '<no more messages>'}")
            lines.append(f"  engine: {_brief(g['recv']) if g else '<no more messages>'}")
            return "\n".join(lines)
        path = where(x, g)
        assert path is not None
        lines.append(f"  at {path_str(path)}: Batsim {_trunc(_get(x, path), 300)} ({_kind(_get(x, path))}) | "
                     f"engine {_trunc(_get(g, path), 300)} ({_kind(_get(g, path))})")
        lines.append(f"  Batsim sent: {_brief(x['recv'])}")
        lines.append(f"  engine sent: {_brief(g['recv'])}")
        if path[0] == "sent":
            lines.append("  (the messages received are equal; the probe replied differently)")
        lines.append(f"  Batsim message: {_trunc(x['recv'])}")
        lines.append(f"  engine message: {_trunc(g['recv'])}")
        return "\n".join(lines)
    return None


def read_output(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def schedule_fields(text: str) -> dict[str, str]:
    lines = text.splitlines()
    if len(lines) < 2:
        return {"<malformed>": text}
    return dict(zip(lines[0].split(","), lines[1].split(","), strict=False))


def output_differences(rec: Recording, prefix: Path) -> list[str]:
    diffs = []
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        got_path = Path(f"{prefix}{suffix}")
        if not got_path.exists():
            diffs.append(f"{suffix}: not written by the engine")
            continue
        exp, got = read_output(rec.outputs[suffix]).decode(), got_path.read_text()
        if exp == got:
            continue
        el, gl = exp.splitlines(), got.splitlines()
        i = next((i for i, (a, b) in enumerate(zip(el, gl, strict=False)) if a != b), min(len(el), len(gl)))
        diffs.append(f"{suffix}: first difference at line {i + 1} (Batsim {len(el)} lines, engine {len(gl)})\n"
                     f"  Batsim: {el[i] if i < len(el) else '<end of file>'}\n"
                     f"  engine: {gl[i] if i < len(gl) else '<end of file>'}")
    got_path = Path(f"{prefix}_schedule.csv")
    if not got_path.exists():
        diffs.append("_schedule.csv: not written by the engine")
    else:
        exp_f = schedule_fields(read_output(rec.outputs["_schedule.csv"]).decode())
        got_f = schedule_fields(got_path.read_text())
        if list(exp_f) != list(got_f):
            diffs.append(f"_schedule.csv: columns differ\n  Batsim: {list(exp_f)}\n  engine: {list(got_f)}")
        else:
            bad = [f"{k}: Batsim {exp_f[k]} engine {got_f[k]}" for k in exp_f
                   if k not in SCHEDULE_IGNORED and exp_f[k] != got_f[k]]
            if bad:
                diffs.append("_schedule.csv: " + "; ".join(bad))
    return diffs


def compare(rec: Recording, out_dir: Path) -> str | None:
    """Run the engine on ``rec`` and describe every kind of difference (None if it conforms)."""
    run = run_engine(rec, out_dir)
    parts = []
    if run.error:
        parts.append(f"the run raised {run.error}")
    msg = first_message_difference(rec.messages(), run.log)
    if msg:
        parts.append(msg)
    if not run.error:
        parts.extend(output_differences(rec, run.prefix))
    if not parts:
        return None
    return f"{rec.name}: the engine differs from real Batsim 4.2.1\n" + "\n".join(parts)


def probe_replay_difference(rec: Recording) -> str | None:
    """Kit self-check: a fresh Probe fed the recorded Batsim messages must give the recorded replies."""
    probe = Probe(rec.probe_options)
    for i, entry in enumerate(rec.messages()):
        reply = json.loads(json.dumps(probe.handle(json.loads(json.dumps(entry["recv"])))))
        path = where(entry["sent"], reply)
        if path is not None:
            return (f"{rec.name}: message {i}: the probe now replies differently at {path_str(path)}\n"
                    f"  recorded: {_trunc(entry['sent'])}\n  now:      {_trunc(reply)}")
    return None
