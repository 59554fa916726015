"""Conformance scenarios: Batsim inputs + Batsim switches + probe options, seeded or hand-written.

``make_scenario(seed, dir)`` writes a random but reproducible scenario (byte-for-byte the same files for
the same seed) into ``dir`` and returns its :class:`Scenario`; ``make_named(name, dir)`` does the same
for the hand-written scenarios of :data:`HAND` (each targets one tricky point of Batsim's event order);
``make(seed_or_name, dir)`` dispatches.  Recordings live in ``tests/data/conformance/<name>/`` with a
``scenario.json`` (:meth:`Scenario.to_json`) next to the inputs.

Seeded scenarios: a zero-latency platform of 8–40 hosts ``a0..aN`` (Batsim numbers hosts in *name*
order: a0, a1, a10, a11, …, a2, …, so ids differ from the numbers in the names) plus a master host;
1–3 workloads (≤ 150 jobs in all) of delay profiles (a few ``parallel_homogeneous(_total)`` with
``com`` = 0, a few with ``ret`` ≠ 0), integer and fractional subtimes drawn from a shared pool of
instants (ties inside and across workloads, jobs at 0, ids such as 2 and 10 at the same subtime,
shuffled job lists), delays chosen so that completions often fall on submission instants, walltimes
absent / -1 / above / equal to / below the run time, jobs larger than the platform, ``res`` = 0;
0–2 events files (machine outages, some at time 0 or at submission/completion instants, some touching
within a file, generic events with ``--forward-unknown-events``); and a random mix of Batsim switches
and probe options (see :mod:`conformance.probe`).

Link-less twins: ``make("<name>_nolink", dir)`` writes the same scenario (same workloads, events,
switches, probe options) on :func:`nolink_platform_xml` instead of :func:`cluster_platform_xml`: the same
hosts ``a0..aN`` + master host and properties, but one Vivaldi zone with every host at "0 0 0" and no
links, like batfeed's generated platforms, so that Batsim's internal messages take exactly 0 s (on the
cluster platform each is a 1-byte SimGrid communication of 1e-15 s, which makes SimGrid's clock drift by
a few ulps).  ``Scenario.links`` (``"links": false`` in ``scenario.json``; absent = true) tells them apart.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PLATFORM_FILE = "platform.xml"
SCENARIO_FILE = "scenario.json"
NOLINK = "_nolink"   # name suffix of the link-less twin of a scenario

# Batsim switch -> EngineConfig field (boolean switches)
BOOL_SWITCHES = {
    "--enable-dynamic-jobs": "enable_dynamic_jobs",
    "--acknowledge-dynamic-jobs": "acknowledge_dynamic_jobs",
    "--enable-profile-reuse": "enable_profile_reuse",
    "--forward-profiles-on-submission": "forward_profiles_on_submission",
    "--forward-unknown-events": "forward_unknown_events",
}


@dataclass
class Scenario:
    """One conformance scenario; file names are relative to ``dir``."""

    name: str
    dir: Path
    workloads: list[str]
    events: list[str] = field(default_factory=list)
    batsim_args: list[str] = field(default_factory=list)   # switches besides -p/-w/--events/-e/-s/-v
    probe_options: dict[str, Any] = field(default_factory=dict)
    platform: str = PLATFORM_FILE
    master_host: str = "master_host"                       # Batsim's -m (its default unless in batsim_args)
    mmax: int | None = None                                # Batsim's --mmax (None = not given)
    description: str = ""
    links: bool = True                                     # cluster platform with links, or link-less twin

    # -------------------------------------------------------------- derived
    def path(self, name: str) -> Path:
        return self.dir / name

    def engine_config(self) -> dict[str, Any]:
        """EngineConfig keyword arguments equivalent to ``batsim_args``."""
        cfg: dict[str, Any] = {}
        args = self.batsim_args
        for i, a in enumerate(args):
            if a in BOOL_SWITCHES:
                cfg[BOOL_SWITCHES[a]] = True
            elif a == "--sched-cfg":
                cfg["sched_config"] = args[i + 1]
        return cfg

    def batsim_command(self, batsim: str, export_prefix: str, endpoint: str) -> list[str]:
        cmd = [batsim, "-p", str(self.path(self.platform))]
        for w in self.workloads:
            cmd += ["-w", str(self.path(w))]
        for e in self.events:
            cmd += ["--events", str(self.path(e))]
        cmd += ["-e", export_prefix, "-s", endpoint, "--verbosity", "quiet", "--disable-schedule-tracing"]
        return cmd + list(self.batsim_args)

    def files(self) -> list[str]:
        return [self.platform, *self.workloads, *self.events]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("dir")
        if d["links"]:   # the default: absent, so the files of the cluster-platform scenarios are unchanged
            d.pop("links")
        return d

    def write_json(self) -> None:
        (self.dir / SCENARIO_FILE).write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, dir: Path) -> Scenario:
        d = json.loads((Path(dir) / SCENARIO_FILE).read_text())
        d.pop("recorded_with", None)   # added by record.py
        return cls(dir=Path(dir), **d)


# ====================================================================== file writers
def platform_xml(n: int, speed: str = "1Gf", master_prefix: str = "master_host", master_role: bool = True,
                 compute_props: dict[str, str] | None = None, prefix: str = "a", links: bool = True) -> str:
    """The platform of a scenario: :func:`cluster_platform_xml` (``links``) or :func:`nolink_platform_xml`."""
    make_xml = cluster_platform_xml if links else nolink_platform_xml
    return make_xml(n, speed, master_prefix=master_prefix, master_role=master_role, compute_props=compute_props,
                    prefix=prefix)


def cluster_platform_xml(n: int, speed: str = "1Gf", master_prefix: str = "master_host", master_role: bool = True,
                         compute_props: dict[str, str] | None = None, prefix: str = "a") -> str:
    """A zero-latency cluster ``{prefix}0..{prefix}{n-1}`` + a one-host master cluster (like platform_100.xml)."""
    props = "".join(f'\n    <prop id="{k}" value="{v}"/>' for k, v in (compute_props or {}).items())
    compute = (f'  <cluster id="c1" prefix="{prefix}" suffix="" radical="0-{n - 1}" speed="{speed}" bw="1000TBps" '
               f'lat="0us"\n           bb_bw="1000TBps" bb_lat="0us"')
    compute += f">{props}\n  </cluster>\n" if props else "/>\n"
    role = '\n    <prop id="role" value="master"/>\n  ' if master_role else ""
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            '<zone id="AS0" routing="Full">\n'
            + compute +
            f'  <cluster id="c2" prefix="{master_prefix}" suffix="" radical="0-0" speed="1Gf" bw="1000TBps"\n'
            f'           lat="0us" bb_bw="1000TBps" bb_lat="0us">{role}</cluster>\n'
            '  <link id="backbone" bandwidth="1000TBps" latency="0us"/>\n'
            f'  <zoneRoute src="c1" dst="c2" gw_src="{prefix}c1_router" gw_dst="{master_prefix}c2_router">\n'
            '    <link_ctn id="backbone"/>\n'
            '  </zoneRoute>\n'
            '</zone>\n'
            '</platform>\n')


def nolink_platform_xml(n: int, speed: str = "1Gf", master_prefix: str = "master_host", master_role: bool = True,
                        compute_props: dict[str, str] | None = None, prefix: str = "a") -> str:
    """The link-less twin of :func:`cluster_platform_xml`, written like ``platforms/generate.py``: one Vivaldi
    zone, every host at coordinates "0 0 0", no ``<link>`` (Batsim's internal messages take exactly 0 s).

    Same hosts (``{prefix}0..{prefix}{n-1}`` and ``{master_prefix}0``), speeds and properties: the cluster's
    properties are ``<prop>`` children of every compute host *and* of the zone (SimGrid 3.34 makes cluster
    properties both host and zone properties, so SIMULATION_BEGINS is the same as on the cluster platform).
    """
    zone_props = "".join(f'\n  <prop id="{k}" value="{v}"/>' for k, v in (compute_props or {}).items())
    host_props = "".join(f'<prop id="{k}" value="{v}"/>' for k, v in (compute_props or {}).items())
    role = '<prop id="role" value="master"/>' if master_role else ""
    master = f'  <host id="{master_prefix}0" speed="1Gf" coordinates="0 0 0"'
    master += f">{role}</host>\n" if role else "/>\n"
    end = f">{host_props}</host>\n" if host_props else "/>\n"
    compute = "".join(f'  <host id="{prefix}{i}" speed="{speed}" coordinates="0 0 0"{end}' for i in range(n))
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            '<!-- no links: Vivaldi routing, every host at "0 0 0" (like batfeed\'s generated platforms) -->\n'
            f'<zone id="AS0" routing="Vivaldi">{zone_props}\n'
            + master + compute +
            '</zone>\n'
            '</platform>\n')


def write_workload(path: Path, nb_res: int, jobs: list[dict[str, Any]], profiles: dict[str, Any]) -> None:
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": profiles}) + "\n")


def write_events(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def format_ids(ids: list[int] | set[int]) -> str:
    ids = sorted(set(ids))
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return " ".join(parts)


def parse_ids(text: str) -> list[int]:
    res: list[int] = []
    for part in text.split():
        a, _, b = part.partition("-")
        res.extend(range(int(a), int(b or a) + 1))
    return res


def volatile_of(events: list[list[dict[str, Any]]]) -> str:
    """All machines named by machine events (the probe avoids them in late decisions)."""
    ids: set[int] = set()
    for evs in events:
        for e in evs:
            if e["type"] in ("machine_unavailable", "machine_available"):
                ids |= set(parse_ids(e["resources"]))
    return format_ids(ids)


def finish(name: str, dir: Path, *, n: int, workloads: list[tuple[list[dict], dict]], events: list[list[dict]],
           batsim_args: list[str], probe: dict[str, Any], description: str, nb_res: int | None = None,
           links: bool = True, platform: dict[str, Any] | None = None, master_host: str = "master_host",
           mmax: int | None = None) -> Scenario:
    """Write all files of a scenario into ``dir`` and return it.  ``platform``: keyword arguments of
    :func:`platform_xml` besides ``n`` and ``links``; ``links=False`` gives the link-less twin of the
    scenario, named ``<name>_nolink`` (:data:`NOLINK`)."""
    dir = Path(dir)
    dir.mkdir(parents=True, exist_ok=True)
    (dir / PLATFORM_FILE).write_text(platform_xml(n, **(platform or {}), links=links))
    if not links:
        name += NOLINK
        description = f"{description.rstrip()} [link-less platform]"
    wnames = []
    for i, (jobs, profiles) in enumerate(workloads):
        wnames.append(f"w{i}.json")
        write_workload(dir / wnames[-1], nb_res if nb_res is not None else n, jobs, profiles)
    enames = []
    for i, evs in enumerate(events):
        enames.append(f"events{i}.txt")
        write_events(dir / enames[-1], evs)
    probe = dict(probe)
    dyn = probe.get("dynamic")
    args = list(batsim_args)
    if dyn:
        args.append("--enable-dynamic-jobs")
        if dyn.get("ack"):
            args.append("--acknowledge-dynamic-jobs")
        if dyn.get("reuse"):
            args.append("--enable-profile-reuse")
    if events and (probe.get("future_decisions") is not None):
        probe["volatile"] = volatile_of(events)
    if mmax is not None:
        args += ["--mmax", str(mmax)]
    if master_host != "master_host":
        args += ["-m", master_host]
    sc = Scenario(name=name, dir=dir, workloads=wnames, events=enames, batsim_args=args, probe_options=probe,
                  master_host=master_host, mmax=mmax, description=description, links=links)
    sc.write_json()
    return sc


# ====================================================================== seeded scenarios
def _num(x: float) -> float | int:
    return x


def make_scenario(seed: int, dir: Path, links: bool = True) -> Scenario:
    """A reproducible random scenario (see the module docstring)."""
    rng = random.Random(1_000_003 * seed + 17)
    n = rng.randint(8, 40)
    mmax = None
    if rng.random() < 0.1:
        mmax = n - rng.randint(1, 3)
    nm = mmax if mmax is not None else n          # machines Batsim exposes
    ptasks = rng.random() < 0.3

    # ---- instants (shared by all workloads -> ties across workloads)
    horizon = rng.choice([120, 400, 1500])
    instants = {0.0}
    for _ in range(rng.randint(5, 22)):
        k = rng.random()
        if k < 0.55:
            instants.add(float(rng.randint(1, horizon)))
        elif k < 0.85:
            instants.add(rng.randint(0, horizon) + rng.choice([0.5, 0.25, 0.75, 0.1, 0.2, 0.3, 0.7]))
        else:
            instants.add(round(rng.uniform(0, horizon), rng.choice([1, 3, 6])))
    if rng.random() < 0.3:
        instants |= {0.1, 0.2, 0.3}
    inst = sorted(instants)

    # ---- workloads
    nw = rng.choice([1, 1, 2, 2, 3])
    total = rng.randint(15, 120)
    counts = [max(3, total // nw + rng.randint(-5, 5)) for _ in range(nw)]
    workloads = []
    for wi, nj in enumerate(counts):
        base = rng.choice([0, 1, 1, 7, 95])
        ids: list[int] = []
        cur = base
        for _ in range(nj):
            ids.append(cur)
            cur += rng.choice([1, 1, 1, 2, 5])
        as_str = rng.random() < 0.4
        hot = rng.sample(inst, k=min(len(inst), rng.randint(2, 5)))
        subtimes = [rng.choice(hot) if rng.random() < 0.35 else rng.choice(inst) for _ in ids]
        # ids whose string order differs from their numeric order, at the same subtime (2 vs 10)
        for _ in range(rng.randint(1, 3)):
            short = [i for i, x in enumerate(ids) if len(str(x)) == len(str(ids[0]))]
            long_ = [i for i, x in enumerate(ids) if len(str(x)) > len(str(ids[0]))]
            if short and long_:
                a, b = rng.choice(short), rng.choice(long_)
                subtimes[b] = subtimes[a]
        profiles: dict[str, Any] = {}
        jobs = []
        for jid, st in zip(ids, subtimes, strict=True):
            r = rng.random()
            later = [t for t in inst if t > st]
            if r < 0.35 and later:
                delay = rng.choice(later) - st
                delay = round(delay, 9) if delay != int(delay) else delay
            elif r < 0.75:
                delay = float(rng.randint(1, max(2, horizon // 3)))
            else:
                delay = rng.randint(1, 200) + rng.choice([0.5, 0.25, 0.1, 0.01])
            if delay <= 0:
                delay = 1.0
            kind = rng.random()
            if ptasks and kind < 0.08:
                pname = f"ph{delay!r}"
                profiles[pname] = {"type": "parallel_homogeneous", "cpu": delay * 1e9, "com": 0}
            elif ptasks and kind < 0.14:
                pname = f"pt{delay!r}"
                profiles[pname] = {"type": "parallel_homogeneous_total", "cpu": delay * 1e9, "com": 0}
            elif kind < 0.2:
                pname = f"u{wi}_{jid}"
                profiles[pname] = {"type": "delay", "delay": delay}
            elif kind < 0.25:
                pname = f"f{delay!r}"
                profiles[pname] = {"type": "delay", "delay": delay, "ret": rng.choice([1, 3, 255])}
            else:
                pname = f"d{delay!r}"
                profiles[pname] = {"type": "delay", "delay": delay}
            rr = rng.random()
            if rr < 0.03:
                res = 0
            elif rr < 0.08:
                res = nm + rng.randint(1, 5)
            elif rr < 0.13:
                res = nm
            elif rr < 0.6:
                res = 1
            else:
                res = rng.randint(1, max(1, nm // 2))
            job: dict[str, Any] = {"id": str(jid) if as_str else jid, "subtime": st, "res": res, "profile": pname}
            if profiles[pname]["type"] == "parallel_homogeneous_total":
                runtime = delay / max(res, 1)
            else:
                runtime = delay
            w = rng.random()
            if w < 0.35:
                pass
            elif w < 0.45:
                job["walltime"] = -1
            elif w < 0.7:
                job["walltime"] = float(int(runtime * 2) + 1)
            elif w < 0.82:
                job["walltime"] = runtime
            else:
                job["walltime"] = max(0.5, round(runtime / 2, 2))
            if wi == 0 and rng.random() < 0.3:
                job["user"] = f"u{rng.randint(1, 4)}"
            jobs.append(job)
        for k in range(rng.randint(0, 2)):
            profiles[f"unused{k}"] = {"type": "delay", "delay": float(rng.randint(1, 50))}
        if rng.random() < 0.5:
            rng.shuffle(jobs)
        workloads.append((jobs, profiles))

    # ---- events files
    all_jobs = [j for jobs, _ in workloads for j in jobs]
    completions = sorted({j["subtime"] + workloads_delay(j, workloads) for j in all_jobs})
    nev = rng.choice([0, 0, 1, 1, 1, 2])
    forward_unknown = nev > 0 and rng.random() < 0.3
    busy: dict[int, list[tuple[float, float]]] = {}
    events: list[list[dict[str, Any]]] = []
    for _ in range(nev):
        evs: list[dict[str, Any]] = []
        last_in_file: dict[int, float] = {}
        for _ in range(rng.randint(1, 5)):
            if rng.random() < 0.6:
                a = rng.randrange(nm)
                ms = list(range(a, min(nm, a + rng.randint(1, 4))))
            else:
                ms = rng.sample(range(nm), k=min(nm, rng.randint(2, 3)))
            k = rng.random()
            if k < 0.15:
                start = 0.0
            elif k < 0.55:
                start = rng.choice(inst)
            elif k < 0.8:
                start = rng.choice(completions)
            else:
                start = float(rng.randint(0, horizon))
            # touching outages within one file: start exactly where a previous one of this file ended
            if rng.random() < 0.15 and last_in_file:
                m0 = rng.choice(sorted(last_in_file))
                ms, start = [m0], last_in_file[m0]
            k = rng.random()
            if k < 0.4:
                later = [t for t in inst + completions if t > start]
                end = rng.choice(later) if later else start + 10.0
            elif k < 0.8:
                end = start + float(rng.randint(1, 200))
            else:
                end = start + rng.randint(1, 100) + 0.5
            ok = True
            for m in ms:
                for (s0, e0) in busy.get(m, []):
                    touching_same_file = last_in_file.get(m) == start and e0 == start
                    if not (end < s0 or start > e0 or touching_same_file):
                        ok = False
            if not ok:
                continue
            for m in ms:
                busy.setdefault(m, []).append((start, end))
                last_in_file[m] = end
            r = format_ids(ms)
            evs.append({"timestamp": start, "type": "machine_unavailable", "resources": r})
            evs.append({"timestamp": end, "type": "machine_available", "resources": r})
        if forward_unknown:
            for _ in range(rng.randint(1, 2)):
                evs.append({"timestamp": rng.choice(inst), "type": "ping", "what": rng.choice(["x", "y"]),
                            "n": rng.randint(0, 9)})
        if rng.random() < 0.5:
            rng.shuffle(evs)
        events.append(evs)
    # busy.setdefault: each (machine, file) sequence stays valid because outages never overlap

    # ---- probe options
    probe: dict[str, Any] = {"seed": seed, "on_full": rng.choice(["reject", "queue"]),
                             "alloc_style": rng.choice(["list", "ranges"])}
    if rng.random() < 0.6:
        probe["call_me_later"] = rng.choice([1e-6, 1e-5, 0.5, 7.0, 30.0, 100.0, 2.5])
        probe["cml_every"] = rng.choice([1, 1, 2, 3])
    if rng.random() < 0.3:
        probe["future_decisions"] = rng.choice([[5.0], [0.5, 3.0], [1e-6, 2.0], [12.0]])
        probe["future_every"] = rng.choice([2, 3])
    if rng.random() < 0.3:
        probe["advance_now"] = rng.choice([0.25, 3.0, 20.0, 1e-6])
        probe["advance_every"] = rng.choice([2, 3, 5])
    if rng.random() < 0.3:
        ons = ["call"] if "call_me_later" in probe else []
        ons += rng.sample(["submit", "static_end"], k=rng.randint(1, 2))
        probe["kill"] = {"every": rng.choice([1, 2, 3]), "on": ons, "multi": rng.random() < 0.5}
    if rng.random() < 0.35:
        dyn = {"total": rng.randint(2, 12), "every": rng.choice([2, 3, 5]), "ack": rng.random() < 0.5,
               "reuse": rng.random() < 0.3, "static_profiles": rng.random() < 0.5}
        dyn["start_now"] = dyn["ack"] and rng.random() < 0.5
        if "kill" in probe:
            probe["kill"]["then_register"] = rng.random() < 0.6
        probe["dynamic"] = dyn
    if rng.random() < 0.3:
        probe["metadata"] = rng.choice([2, 3, 5])

    # ---- Batsim switches
    args: list[str] = []
    if rng.random() < 0.25:
        args.append("--forward-profiles-on-submission")
    if forward_unknown:
        args.append("--forward-unknown-events")
    if rng.random() < 0.2:
        args += ["--sched-cfg", json.dumps({"seed": seed, "name": f"s{seed}"})]
    master = "master_host"
    speed = rng.choice(["1Gf", "1Gf", "2Gf"])
    props = {"tier": f"t{seed % 3}"} if rng.random() < 0.3 else None
    if rng.random() < 0.15:
        master = "boss0"
        platform = {"speed": speed, "master_prefix": "boss", "master_role": False, "compute_props": props}
    else:
        platform = {"speed": speed, "compute_props": props}
    desc = (f"seed {seed}: {n} hosts{f' (mmax {mmax})' if mmax else ''}, {nw} workload(s), "
            f"{sum(len(j) for j, _ in workloads)} jobs, {len(events)} events file(s)")
    return finish(f"seed{seed:03d}", dir, links=links, n=n, workloads=workloads, events=events, batsim_args=args,
                  probe=probe, description=desc, platform=platform, master_host=master, mmax=mmax)


def workloads_delay(job: dict[str, Any], workloads: list[tuple[list[dict], dict]]) -> float:
    for jobs, profiles in workloads:
        if any(j is job for j in jobs):
            p = profiles[job["profile"]]
            return p.get("delay", p.get("cpu", 0.0) / 1e9)
    raise KeyError(job["id"])


# ====================================================================== hand-written scenarios
def _d(delay: float) -> dict[str, Any]:
    return {"type": "delay", "delay": delay}


def _jobs(spec: list[tuple], profiles: dict[str, Any]) -> list[dict[str, Any]]:
    """spec items: (id, subtime, res, delay[, walltime[, extra dict]]); profiles named d<delay>."""
    jobs = []
    for item in spec:
        jid, st, res, delay = item[:4]
        pname = f"d{delay!r}"
        profiles.setdefault(pname, _d(delay))
        job: dict[str, Any] = {"id": jid, "subtime": st, "res": res, "profile": pname}
        if len(item) > 4 and item[4] is not None:
            job["walltime"] = item[4]
        if len(item) > 5:
            job.update(item[5])
        jobs.append(job)
    return jobs


def _wl(spec: list[tuple], extra_profiles: dict[str, Any] | None = None) -> tuple[list[dict], dict]:
    profiles: dict[str, Any] = dict(extra_profiles or {})
    return _jobs(spec, profiles), profiles


def _unav(t: float, r: str) -> dict[str, Any]:
    return {"timestamp": t, "type": "machine_unavailable", "resources": r}


def _av(t: float, r: str) -> dict[str, Any]:
    return {"timestamp": t, "type": "machine_available", "resources": r}


def h_instant_pileup(dir: Path, links: bool = True) -> Scenario:
    """Submissions of three workloads + completions + events of two files + REQUESTED_CALLs at 100, 200, 300."""
    w0 = _wl([(1, 0.0, 2, 100.0), (2, 0.0, 2, 50.0), (10, 0.0, 1, 100.0), (3, 50.0, 2, 50.0),
              (4, 100.0, 1, 100.0), (11, 100.0, 3, 100.0), (5, 100.0, 2, 20.0), (20, 200.0, 2, 100.0),
              (6, 200.0, 1, 100.0), (7, 300.0, 4, 10.0), (30, 300.0, 1, 5.0)])
    w1 = _wl([("2", 100.0, 1, 100.0), ("10", 100.0, 2, 10.0), ("9", 100.0, 1, 200.0), ("1", 200.0, 12, 1.0),
              ("11", 200.0, 3, 100.0), ("3", 300.0, 2, 50.0)])
    w2 = _wl([(0, 0.0, 1, 200.0), (1, 100.0, 1, 100.0), (2, 200.0, 2, 100.0), (12, 300.0, 1, 100.0)])
    e0 = [_unav(100.0, "5-6"), _av(200.0, "5-6"), _unav(300.0, "0")]
    e0 += [_av(300.0, "5"), _unav(200.0, "5")][::-1] + [_av(400.0, "0")]
    e1 = [_unav(100.0, "7"), _av(300.0, "7"), {"timestamp": 200.0, "type": "tick", "n": 1}]
    return finish("h_instant_pileup", dir, links=links, n=12, workloads=[w0, w1, w2], events=[e0, e1],
                  batsim_args=["--forward-unknown-events"],
                  probe={"seed": 1, "on_full": "queue", "call_me_later": 100.0},
                  description=h_instant_pileup.__doc__)


def h_last_static_single(dir: Path, links: bool = True) -> Scenario:
    """The last static submission (t=60) at the same instant as completions, an outage and a REQUESTED_CALL."""
    w0 = _wl([(1, 0.0, 2, 60.0), (2, 0.0, 1, 30.0), (3, 30.0, 1, 30.0), (4, 60.0, 2, 10.0), (10, 60.0, 1, 5.0)])
    e0 = [_unav(60.0, "3"), _av(80.0, "3")]
    return finish("h_last_static_single", dir, links=links, n=10, workloads=[w0], events=[e0], batsim_args=[],
                  probe={"seed": 2, "on_full": "reject", "call_me_later": 60.0, "cml_every": 4},
                  description=h_last_static_single.__doc__)


def h_last_static_multi(dir: Path, links: bool = True) -> Scenario:
    """Two workloads whose last submissions coincide (t=90) with completions; another ends earlier."""
    w0 = _wl([(1, 0.0, 2, 90.0), (2, 30.0, 1, 60.0), (3, 90.0, 1, 10.0)])
    w1 = _wl([(5, 0.0, 1, 45.0), (6, 45.0, 1, 45.0), (7, 90.0, 2, 1.0), (17, 90.0, 1, 2.0)])
    w2 = _wl([(1, 0.0, 1, 90.0), (2, 10.0, 1, 80.0)])
    return finish("h_last_static_multi", dir, links=links, n=8, workloads=[w0, w1, w2], events=[], batsim_args=[],
                  probe={"seed": 3, "on_full": "queue"}, description=h_last_static_multi.__doc__)


def h_time0(dir: Path, links: bool = True) -> Scenario:
    """Time-0 submissions of three workloads with time-0 outages and generic events in two files."""
    w0 = _wl([(1, 0.0, 2, 10.0), (2, 0.0, 9, 5.0), (10, 0.0, 1, 40.0), (3, 0.0, 0, 1.0), (4, 10.0, 3, 10.0)])
    w1 = _wl([(7, 0.0, 1, 10.0), (8, 0.0, 12, 10.0)])
    w2 = _wl([(0, 0.0, 2, 0.5), (1, 0.5, 2, 0.5)])
    e0 = [_unav(0.0, "0-1"), _av(40.0, "0-1"), {"timestamp": 0.0, "type": "boot", "ok": True}]
    e1 = [_unav(0.0, "5"), {"timestamp": 0.0, "type": "boot", "ok": False}]
    return finish("h_time0", dir, links=links, n=10, workloads=[w0, w1, w2], events=[e0, e1],
                  batsim_args=["--forward-unknown-events", "--forward-profiles-on-submission"],
                  probe={"seed": 4, "on_full": "reject", "alloc_style": "ranges"}, description=h_time0.__doc__)


def h_busy_scheduler(dir: Path, links: bool = True) -> Scenario:
    """Replies with now > clock: submissions, completions, outages and calls pile up while the probe 'thinks'."""
    spec = [(i, float(i), 1 + i % 3, float(3 + (i * 7) % 11)) for i in range(1, 30)]
    spec += [(100 + i, float(2 * i) + 0.5, 1, 4.0) for i in range(10)]
    w0 = _wl(spec)
    e0 = [_unav(6.0, "2-3"), _av(13.0, "2-3"), _unav(14.0, "9"), _av(21.5, "9")]
    return finish("h_busy_scheduler", dir, links=links, n=10, workloads=[w0], events=[e0], batsim_args=[],
                  probe={"seed": 5, "on_full": "queue", "advance_now": 7.0, "advance_every": 2,
                         "call_me_later": 2.0, "cml_every": 3}, description=h_busy_scheduler.__doc__)


def h_future_decisions(dir: Path, links: bool = True) -> Scenario:
    """Starts stamped now+10 / now+5 landing on instants with submissions, completions and outages."""
    w0 = _wl([(1, 0.0, 1, 10.0), (2, 0.0, 1, 20.0), (3, 0.0, 2, 5.0), (4, 5.0, 1, 5.0), (5, 10.0, 1, 10.0),
              (6, 10.0, 2, 10.0), (7, 15.0, 1, 5.0), (8, 20.0, 1, 1.0), (9, 20.0, 3, 2.0), (10, 25.0, 1, 5.0),
              (11, 30.0, 1, 5.0), (12, 30.0, 1, 5.0)])
    w1 = _wl([(1, 10.0, 1, 10.0), (2, 15.0, 2, 5.0), (3, 20.0, 1, 10.0)])
    e0 = [_unav(10.0, "7"), _av(20.0, "7"), _unav(15.0, "6"), _av(30.0, "6")]
    return finish("h_future_decisions", dir, links=links, n=8, workloads=[w0, w1], events=[e0], batsim_args=[],
                  probe={"seed": 6, "on_full": "queue", "future_decisions": [10.0, 5.0], "future_every": 2,
                         "call_me_later": 3.0, "cml_every": 2}, description=h_future_decisions.__doc__)


def h_kills(dir: Path, links: bool = True) -> Scenario:
    """Kills on REQUESTED_CALL, on submissions and at the end of static submissions; queued jobs reuse the
    victims' machines in the same reply; some kills name two jobs; some victims have zero runtime."""
    spec = [(i, float(5 * (i // 3)), 1 + i % 3, float(20 + (i * 13) % 40), None if i % 4 else 30.0)
            for i in range(24)]
    w0 = _wl(spec)
    return finish("h_kills", dir, links=links, n=9, workloads=[w0], events=[], batsim_args=[],
                  probe={"seed": 7, "on_full": "queue", "call_me_later": 5.0, "cml_every": 2,
                         "kill": {"every": 2, "on": ["call", "submit", "static_end"], "multi": True}},
                  description=h_kills.__doc__)


def h_kill_then_start(dir: Path, links: bool = True) -> Scenario:
    """Every 2nd submission kills the earliest-started job; the submitted job then starts on its machines."""
    spec = [(i, float(3 * i), 2, 100.0) for i in range(1, 16)] + [(40, 45.0, 2, 1.0), (41, 45.0, 1, 100.0)]
    w0 = _wl(spec)
    e0 = [_unav(9.0, "6"), _av(30.0, "6")]
    return finish("h_kill_then_start", dir, links=links, n=7, workloads=[w0], events=[e0], batsim_args=[],
                  probe={"seed": 8, "on_full": "reject", "alloc_style": "ranges",
                         "kill": {"every": 2, "on": ["submit"], "multi": False}}, description=h_kill_then_start.__doc__)


def h_dyn_ack(dir: Path, links: bool = True) -> Scenario:
    """Dynamic jobs with acknowledgements (decided at the ack), kills followed by REGISTER_JOB, calls."""
    spec = [(i, float(4 * i), 1 + i % 2, float(10 + (i * 7) % 25)) for i in range(1, 20)]
    w0 = _wl(spec)
    return finish("h_dyn_ack", dir, links=links, n=8, workloads=[w0], events=[], batsim_args=[],
                  probe={"seed": 9, "on_full": "queue", "call_me_later": 6.0, "cml_every": 3,
                         "kill": {"every": 2, "on": ["call"], "then_register": True},
                         "dynamic": {"total": 10, "every": 4, "ack": True, "start_now": False}},
                  description=h_dyn_ack.__doc__)


def h_dyn_noack_gc(dir: Path, links: bool = True) -> Scenario:
    """Dynamic jobs without ack, some registered into w0 with live static profiles (profile GC), metadata."""
    profiles = {"shared10": _d(10.0), "shared25": _d(25.0)}
    jobs = []
    for i in range(1, 25):
        jobs.append({"id": i, "subtime": float(3 * i), "res": 1 + i % 3,
                     "profile": "shared10" if i % 2 else "shared25", "walltime": 20.0 if i % 5 == 0 else -1})
    return finish("h_dyn_noack_gc", dir, links=links, n=8, workloads=[(jobs, profiles)], events=[], batsim_args=[],
                  probe={"seed": 10, "on_full": "queue", "metadata": 3,
                         "dynamic": {"total": 12, "every": 2, "ack": False, "static_profiles": True}},
                  description=h_dyn_noack_gc.__doc__)


def h_dyn_reuse_reopen(dir: Path, links: bool = True) -> Scenario:
    """Profile reuse, acked dynamic jobs started in the registration reply, continue_registration."""
    w0 = _wl([(i, float(5 * i), 1, float(7 + i % 4)) for i in range(1, 15)] + [(99, 0.0, 1, 400.0)])
    return finish("h_dyn_reuse_reopen", dir, links=links, n=6, workloads=[w0], events=[], batsim_args=[],
                  probe={"seed": 11, "on_full": "reject", "call_me_later": 4.0, "cml_every": 5,
                         "dynamic": {"total": 7, "every": 3, "ack": True, "start_now": True, "reuse": True,
                                     "static_profiles": True, "reopen": True}},
                  description=h_dyn_reuse_reopen.__doc__)


def h_tiny_cml(dir: Path, links: bool = True) -> Scenario:
    """CALL_ME_LATER at now+1e-6 (Batsim's waiter sleeps at least 1e-5 s), submissions at t and t+1e-5."""
    w0 = _wl([(1, 0.0, 1, 1.0), (2, 5.0, 1, 1e-5), (3, 5.00001, 1, 2.0), (4, 5.00001, 1, 1e-6),
              (5, 1e6, 1, 1.0), (6, 1000000.00001, 2, 1.0)])
    return finish("h_tiny_cml", dir, links=links, n=4, workloads=[w0], events=[], batsim_args=[],
                  probe={"seed": 12, "on_full": "queue", "call_me_later": 1e-6}, description=h_tiny_cml.__doc__)


def h_cml_floor(dir: Path, links: bool = True) -> Scenario:
    """CALL_ME_LATER at now+1e-5 and kills on the calls; submissions exactly 1e-5 apart."""
    w0 = _wl([(1, 0.0, 1, 1.0), (2, 0.0, 1, 3.0), (3, 1e-5, 1, 2.0), (4, 2e-5, 2, 1.0), (5, 1.0, 1, 1.0),
              (6, 1.00001, 1, 1.0)])
    return finish("h_cml_floor", dir, links=links, n=4, workloads=[w0], events=[], batsim_args=[],
                  probe={"seed": 13, "on_full": "queue", "call_me_later": 1e-5,
                         "kill": {"every": 3, "on": ["call"]}}, description=h_cml_floor.__doc__)


def h_walltime(dir: Path, links: bool = True) -> Scenario:
    """Walltime equal to / below the run time, failing profiles, ptasks, completions at the same instants."""
    profiles = {"fail": {"type": "delay", "delay": 10.0, "ret": 2}, "ph": {"type": "parallel_homogeneous",
                "cpu": 2e10, "com": 0}, "pt": {"type": "parallel_homogeneous_total", "cpu": 4e10, "com": 0}}
    w0 = _wl([(1, 0.0, 1, 10.0, 10.0), (2, 0.0, 1, 20.0, 10.0), (3, 0.0, 1, 10.0), (4, 10.0, 1, 5.0, 5.0),
              (5, 10.0, 2, 7.5, 2.5), (6, 12.5, 1, 2.5)], profiles)
    w0[0].extend([{"id": 7, "subtime": 0.0, "res": 1, "profile": "fail"},
                  {"id": 8, "subtime": 0.0, "res": 2, "profile": "ph", "walltime": 20.0},
                  {"id": 9, "subtime": 0.0, "res": 4, "profile": "pt"},
                  {"id": 10, "subtime": 10.0, "res": 1, "profile": "ph", "walltime": 15.0},
                  {"id": 11, "subtime": 10.0, "res": 1, "profile": "fail", "walltime": 10.0}])
    return finish("h_walltime", dir, links=links, n=10, workloads=[w0], events=[], batsim_args=[],
                  probe={"seed": 14, "on_full": "queue", "metadata": 2, "call_me_later": 2.5},
                  description=h_walltime.__doc__)


def h_master_mmax(dir: Path, links: bool = True) -> Scenario:
    """Master chosen with -m (no role property), --mmax, cluster properties, sched-cfg, profiles forwarded."""
    n = 14
    plat = {"speed": "1Gf", "master_prefix": "boss", "master_role": False, "compute_props": {"rack": "r1"}}
    w0 = _wl([(i, float(i // 2), 1 + i % 4, float(5 + i)) for i in range(12)] + [(12, 3.0, 13, 1.0)])
    e0 = [_unav(2.0, "10-11"), _av(9.0, "10-11"), _unav(9.0, "0"), _av(12.0, "0")]
    return finish("h_master_mmax", dir, links=links, n=n, workloads=[w0], events=[e0],
                  batsim_args=["--forward-profiles-on-submission", "--sched-cfg", '{"policy": "probe", "k": 2}'],
                  probe={"seed": 15, "on_full": "queue"}, platform=plat, master_host="boss0", mmax=12,
                  description=h_master_mmax.__doc__)


def h_fractional(dir: Path, links: bool = True) -> Scenario:
    """Fractional subtimes and delays whose sums are not exact in binary (0.1 + 0.2 vs 0.3)."""
    w0 = _wl([(1, 0.1, 1, 0.2), (2, 0.3, 1, 0.1), (3, 0.3, 1, 0.4), (4, 0.4, 1, 0.3), (5, 0.7, 2, 0.1),
              (6, 1 / 3, 1, 1 / 3), (7, 2 / 3, 1, 1 / 3), (8, 1.0, 1, 0.1), (9, 0.1, 1, 0.6)])
    w1 = _wl([(1, 0.2, 1, 0.1), (2, 0.30000000000000004, 1, 0.5), (3, 0.8, 1, 0.2)])
    e0 = [_unav(0.3, "3"), _av(0.7, "3"), _unav(0.30000000000000004, "2"), _av(1.0, "2")]
    return finish("h_fractional", dir, links=links, n=5, workloads=[w0, w1], events=[e0], batsim_args=[],
                  probe={"seed": 16, "on_full": "queue", "call_me_later": 0.1}, description=h_fractional.__doc__)


HAND = {f.__name__: f for f in (h_instant_pileup, h_last_static_single, h_last_static_multi, h_time0,
                                h_busy_scheduler, h_future_decisions, h_kills, h_kill_then_start, h_dyn_ack,
                                h_dyn_noack_gc, h_dyn_reuse_reopen, h_tiny_cml, h_cml_floor, h_walltime,
                                h_master_mmax, h_fractional)}


def make_named(name: str, dir: Path, links: bool = True) -> Scenario:
    return HAND[name](Path(dir), links=links)


def split_name(seed_or_name: str | int) -> tuple[str, bool]:
    """``"seed042_nolink"`` -> ``("seed042", False)``; ``42`` -> ``("seed042", True)``: base name, links."""
    s = str(seed_or_name)
    links = not s.endswith(NOLINK)
    if not links:
        s = s[:-len(NOLINK)]
    if s.startswith("seed"):
        s = s[4:]
    return (f"seed{int(s):03d}" if s.isdigit() else s), links


def make(seed_or_name: str | int, dir: Path) -> Scenario:
    """``42`` / ``"42"`` / ``"seed042"`` -> make_scenario(42); a name of :data:`HAND` -> that scenario; with
    the suffix ``_nolink`` (``"seed042_nolink"``, ``"h_kills_nolink"``), the same on the link-less platform."""
    base, links = split_name(seed_or_name)
    if base.startswith("seed") and base[4:].isdigit():
        return make_scenario(int(base[4:]), Path(dir), links=links)
    return make_named(base, Path(dir), links=links)


def scenario_name(seed_or_name: str | int) -> str:
    base, links = split_name(seed_or_name)
    return base if links else base + NOLINK
