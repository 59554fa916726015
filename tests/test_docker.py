"""Docker integration (issue 7): docker/Dockerfile, docker/docker-compose.yml (+ the events and
dynamic-jobs override files), docker/run-integration.sh and its scenarios (docker/scenarios/*).

Three kinds of tests:

- static checks that run everywhere: the compose files parse (docker/compose_config.py: PyYAML plus the
  part of Compose's merge and interpolation rules they use), every file they and the Dockerfile reference exists and
  enters the build context, the Batsim image tag is pinned to a 4.x release, the Batsim command line
  of the compose file is the one of docs/docker.md (the block after ``<!-- batsim-command -->``), the
  variants only add their flags, the Dockerfile installs like docs/install.md (uv + uv.lock, non-root user,
  entry point ``batfeed``);
- the scenario checker and run-integration.sh, run here on batfeed's embedded engine (``--embedded``,
  two processes over ZeroMQ as in compose) and through a stand-in ``docker`` (tests/data/docker/bin)
  that plays ``docker compose`` with the same engine, plus broken outputs the checker must catch;
- the real integration runs, marked ``docker`` (needs a Docker engine with Compose >= 2.27) and
  ``batsim`` (needs a Batsim 4.x binary on PATH), skipped with the reason otherwise.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCKER = REPO / "docker"
sys.path.insert(0, str(DOCKER))
import batsim_embedded  # noqa: E402
import compose_config  # noqa: E402
import scenario_tool  # noqa: E402
from compose_config import ComposeError, MissingVariable, interpolate, load, merge  # noqa: E402

from batfeed.errors import BatfeedError  # noqa: E402
from batfeed.registry import make_scheduler  # noqa: E402

COMPOSE = DOCKER / "docker-compose.yml"
OVERRIDES = {"events": DOCKER / "compose.events.yml", "dynamic": DOCKER / "compose.dynamic.yml"}
VARIANT_FLAGS = {"events": ["--events", "/data/events.txt"], "dynamic": ["--enable-dynamic-jobs"]}
SCRIPT = DOCKER / "run-integration.sh"
EMBEDDED = DOCKER / "compose.embedded.yml"
CI_SCRIPT = DOCKER / "ci.sh"
FAKE_DOCKER_BIN = Path(__file__).resolve().parent / "data" / "docker" / "bin"
SCENARIOS = sorted(p.parent.name for p in (DOCKER / "scenarios").glob("*/scenario.json"))
BATFEED = str(Path(sys.executable).parent / "batfeed")
BASH = shutil.which("bash") or "/bin/bash"
README_MARKER = "<!-- batsim-command -->"
PINNED_BATSIM = re.compile(r"\$\{BATSIM_IMAGE:-oarteam/batsim:(\d+)\.(\d+)\.(\d+)\}")


def base_model() -> dict:
    return load(COMPOSE)


def batsim_command(*files: Path) -> list[str]:
    return compose_config.service_command([COMPOSE, *files], "batsim")


def script_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHON=sys.executable, BATFEED=BATFEED)
    env.update(extra)
    return env


def run_script(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([BASH, str(SCRIPT), *args], capture_output=True, text=True,
                          env=env or script_env(), timeout=timeout)


def scheduler_unavailable(name: str) -> str | None:
    """Why the scenario's scheduler cannot be built here (None: it can)."""
    scenario = scenario_tool.Scenario(DOCKER / "scenarios" / name)
    if scenario.scheduler_file:
        return None
    try:
        make_scheduler(scenario.spec["scheduler"], scenario.spec["options"])
    except BatfeedError as err:
        return f"scheduler {scenario.spec['scheduler']!r} of scenario {name} is not available: {err}"
    return None


# =============================================================================== compose: parsing
def test_scenarios_cover_the_issue():
    # FCFS, EASY(SQF), external events, dynamic jobs (user-model variant)
    assert {"fcfs_small", "easy_sqf", "fcfs_events", "dynamic_resubmit"} <= set(SCENARIOS)
    variants = {scenario_tool.Scenario(DOCKER / "scenarios" / s).variant for s in SCENARIOS}
    assert variants == {"base", "events", "dynamic"}
    easy = scenario_tool.Scenario(DOCKER / "scenarios" / "easy_sqf").spec
    assert (easy["scheduler"], easy["options"]) == ("easy", {"policy": "SQF"})


@pytest.mark.parametrize("path", sorted(DOCKER.glob("*.yml")), ids=lambda p: p.name)
def test_compose_files_parse(path):
    model = load(path)
    assert isinstance(model, dict) and isinstance(model.get("services"), dict)


def leaves(value, path=""):
    """(path, scalar) of every leaf of a parsed model."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


@pytest.mark.parametrize("path", sorted(DOCKER.glob("*.yml")), ids=lambda p: p.name)
def test_compose_values_are_strings(path):
    # every value is a string (or an empty mapping): nothing that YAML 1.1 (PyYAML) and YAML 1.2 (the Go
    # parser of Compose) read differently, such as yes/no/on/off, 0755 or 1_000
    bad = [(where, v) for where, v in leaves(load(path)) if not isinstance(v, str)]
    assert bad == [], f"{path.name}: quote these values: {bad}"


YAML = """\
# comment
x-common: &common
  image: "img:${TAG:-1.0}"
  user: nobody  # inline comment
name: x
services:
  a:
    <<: *common
    command: ["-p", "/data/p.xml"]
    list:
      - word
      - "quoted: yes"
    script: |
      line 1
      line 2
    empty: {}
"""


def test_reader_is_a_yaml_parser():
    # anchors, merge keys, inline comments and block scalars: real YAML, not a subset
    model = compose_config.loads(YAML)
    assert model["services"] == {"a": {
        "image": "img:${TAG:-1.0}", "user": "nobody", "command": ["-p", "/data/p.xml"],
        "list": ["word", "quoted: yes"], "script": "line 1\nline 2\n", "empty": {}}}
    assert compose_config.interpolate_model(model, {"TAG": "2"})["services"]["a"]["image"] == "img:2"


@pytest.mark.parametrize("text, message", [
    ("a:\n\tb: c\n", r"f.yml:2: invalid YAML"),
    ('a: "open\n', r"f.yml:2: invalid YAML"),
    ("a: b\n c: d\n", r"f.yml:2: invalid YAML"),
    ("services:\n  a:\n    command: !reset []\n", r"f.yml:3: invalid YAML"),
    ("- a\n- b\n", "a compose file is a mapping"),
    ("", "a compose file is a mapping"),
], ids=["tab", "unclosed-quote", "indent", "compose-tag", "sequence", "empty"])
def test_reader_errors_name_the_file_and_line(text, message):
    with pytest.raises(ComposeError, match=message):
        compose_config.loads(text, "f.yml")


def test_service_command_must_be_an_exec_form_list(tmp_path):
    (tmp_path / "a.yml").write_text('services:\n  batsim:\n    command: "batsim -p x"\n')
    (tmp_path / "b.yml").write_text('services:\n  other: {}\n')
    with pytest.raises(ComposeError, match="must be a list of strings"):
        compose_config.service_command([tmp_path / "a.yml"], "batsim")
    with pytest.raises(ComposeError, match="no services.batsim.command"):
        compose_config.service_command([tmp_path / "b.yml"], "batsim")


def test_whole_model_interpolation_is_docker_compose_config():
    env = {"BATFEED_DATA": "/host/exp", "BATFEED_SCHEDULER": "easy"}
    model = compose_config.config([COMPOSE, OVERRIDES["events"]], env)
    assert model["services"]["scheduler"]["volumes"] == ["/host/exp:/data"]
    assert model["services"]["scheduler"]["command"][:2] == ["schedule", "easy"]
    assert model["services"]["batsim"]["command"] == batsim_command() + VARIANT_FLAGS["events"]
    assert model["services"]["batsim"]["image"] == "oarteam/batsim:4.0.0"
    with pytest.raises(MissingVariable, match="BATFEED_DATA"):
        compose_config.config([COMPOSE], {})


def blocked_yaml(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python cannot import PyYAML (a yaml module that raises ImportError)."""
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "yaml.py").write_text("raise ImportError('PyYAML hidden by the test')\n")
    return script_env(PYTHONPATH=str(tmp_path / "block"))


def test_without_pyyaml_errors_are_one_line(tmp_path):
    env = blocked_yaml(tmp_path)
    tool = [sys.executable, str(DOCKER / "scenario_tool.py")]
    scenario = str(DOCKER / "scenarios" / "fcfs_small")
    # the subcommands that do not read the compose files still work
    result = subprocess.run([*tool, "get", scenario, "name"], capture_output=True, text=True, env=env)
    assert (result.returncode, result.stdout) == (0, "fcfs_small\n")
    result = subprocess.run([*tool, "simulate-args", scenario, str(tmp_path)], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "PyYAML is not installed" in result.stderr
    result = run_script("--embedded", "--workdir", str(tmp_path / "w"), "fcfs_small", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "has no PyYAML" in result.stderr, result.stderr
    assert not (tmp_path / "w").exists()


@pytest.mark.docker
def test_reader_agrees_with_docker_compose_config():
    """Where a Docker engine exists, `docker compose config` is the reference for the Batsim command."""
    reason = docker_engine_problem()
    if reason:
        pytest.skip(f"needs Docker Compose: {reason}")
    env = dict(os.environ, BATFEED_DATA="/tmp")
    v2 = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30).returncode == 0
    for files in ([COMPOSE], [COMPOSE, OVERRIDES["events"]], [COMPOSE, OVERRIDES["dynamic"]], [COMPOSE, EMBEDDED]):
        options = [a for f in files for a in ("-f", str(f))]
        argv = (["docker", "compose", *options, "config", "--format", "json"] if v2
                else ["docker-compose", *options, "config"])  # Compose v1: YAML
        out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=True).stdout
        reference = (json.loads(out) if v2 else compose_config.loads(out))["services"]["batsim"]["command"]
        assert compose_config.service_command(files, "batsim", env) == reference, files


def test_interpolation_and_merge_follow_compose():
    env = {"SET": "v", "EMPTY": ""}
    assert interpolate("${SET:-d} ${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d} $SET $$SET ${SET}", env) == \
        "v d d  d v $SET v"
    assert interpolate("${SET:?need it}", env) == "v"
    with pytest.raises(MissingVariable, match="need it"):
        interpolate("${EMPTY:?need it}", env)
    # command/entrypoint replaced, other lists appended, mappings merged
    merged = merge({"s": {"command": ["a"], "volumes": ["x"], "image": "i", "env": {"A": "1"}}},
                   {"s": {"command": ["b"], "volumes": ["y"], "env": {"B": "2"}}})
    assert merged == {"s": {"command": ["b"], "volumes": ["x", "y"], "image": "i", "env": {"A": "1", "B": "2"}}}
    assert merge({"healthcheck": {"test": ["CMD", "a"]}}, {"healthcheck": {"test": ["CMD", "b"]}}) == \
        {"healthcheck": {"test": ["CMD", "b"]}}


# ============================================================================ compose: structure
def test_compose_has_batsim_and_scheduler_on_a_user_network():
    model = base_model()
    services = model["services"]
    assert set(services) == {"batsim", "scheduler"}
    batsim, sched = services["batsim"], services["scheduler"]
    # the scheduler binds tcp://*:28000, Batsim connects to the scheduler service
    s_cmd, b_cmd = sched["command"], batsim["command"]
    assert s_cmd[0] == "schedule"
    assert s_cmd[s_cmd.index("--socket") + 1] == "tcp://*:28000"
    assert b_cmd[b_cmd.index("-s") + 1] == "tcp://scheduler:28000"
    assert batsim["depends_on"] == ["scheduler"]
    # a user-defined network shared by both (not the default one)
    networks = set(model["networks"])
    assert networks and "default" not in networks
    assert batsim["networks"] == sched["networks"] and set(batsim["networks"]) <= networks
    # one shared data directory as /data: platform, workload and outputs
    env = {"BATFEED_DATA": "/host/exp"}
    mounts = [[interpolate(v, env) for v in svc["volumes"]] for svc in (batsim, sched)]
    assert mounts[0] == mounts[1] == ["/host/exp:/data"]
    with pytest.raises(MissingVariable, match="BATFEED_DATA"):
        interpolate(batsim["volumes"][0], {})
    for arg in ("-p", "-w", "-e"):
        assert b_cmd[b_cmd.index(arg) + 1].startswith("/data/")
    # Batsim runs as the host user so that its outputs are the user's files
    assert interpolate(batsim["user"], {"BATFEED_UID": "1234", "BATFEED_GID": "56"}) == "1234:56"
    # the scheduler's name and options come from the environment
    assert interpolate(" ".join(s_cmd), {}) == "schedule fcfs --socket tcp://*:28000 --options "
    assert interpolate(" ".join(s_cmd), {"BATFEED_SCHEDULER": "easy", "BATFEED_OPTIONS": '{"policy": "SQF"}'}) == \
        'schedule easy --socket tcp://*:28000 --options {"policy": "SQF"}'


def test_batsim_image_tag_is_pinned_to_a_4x_release():
    batsim = base_model()["services"]["batsim"]
    m = PINNED_BATSIM.fullmatch(batsim["image"])
    assert m, f"batsim image must be ${{BATSIM_IMAGE:-oarteam/batsim:X.Y.Z}}, got {batsim['image']}"
    assert m.group(1) == "4", "batfeed speaks the Batsim 4 protocol (Batsim 5 is incompatible)"
    assert interpolate(batsim["image"], {"BATSIM_IMAGE": "oarteam/batsim:4.2.0"}) == "oarteam/batsim:4.2.0"
    # no floating Batsim image anywhere in docker/
    for path in DOCKER.rglob("*"):
        if path.is_file() and path.suffix in ("", ".yml", ".sh", ".md", ".py", ".json"):
            text = path.read_text(errors="replace")
            assert "oarteam/batsim:latest" not in text, path
            assert not re.search(r"oarteam/batsim(?![:_\w-])", text), f"{path}: oarteam/batsim without a tag"


def test_variants_only_add_their_flags():
    base = batsim_command()
    for variant, path in OVERRIDES.items():
        assert batsim_command(path) == base + VARIANT_FLAGS[variant], variant
        # an override changes Batsim's command line only
        assert load(path) == {"services": {"batsim": {"command": base + VARIANT_FLAGS[variant]}}}
        assert scenario_tool.VARIANTS[variant] == [path]


def readme_batsim_command(text: str) -> list[str] | None:
    """The command of the first fenced block after README_MARKER (None without the marker)."""
    at = text.find(README_MARKER)
    if at < 0:
        return None
    m = re.search(r"^```[a-z]*\n(.*?)^```", text[at:], re.S | re.M)
    assert m, f"no fenced code block after {README_MARKER}"
    body = m.group(1).replace("\\\n", " ")
    first = next(line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    return shlex.split(first, comments=True)


def test_readme_block_parser():
    text = f"x\n{README_MARKER}\n```sh\n# c\nbatsim -p /data/a.xml \\\n   -w /data/w.json  # note\n```\n"
    assert readme_batsim_command(text) == ["batsim", "-p", "/data/a.xml", "-w", "/data/w.json"]
    assert readme_batsim_command("no marker") is None


def test_compose_batsim_command_is_the_one_in_readme():
    documented = readme_batsim_command((REPO / "docs" / "docker.md").read_text())
    expected = ["batsim", *batsim_command()]
    assert documented is not None, (
        f"docs/docker.md lacks the Batsim command block: add the line {README_MARKER} followed by\n"
        f"```sh\n{shlex.join(expected)}\n```")
    assert documented == expected, "docs/docker.md's Batsim command and docker/docker-compose.yml differ"


# ============================================================================ files and the image
def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DOCKER / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def dockerignore_included(rel: str, patterns: list[str]) -> bool:
    """Moby's .dockerignore rule: the last pattern matching the path or one of its parents wins."""

    def regex(p: str) -> re.Pattern[str]:
        out, i = "", 0
        while i < len(p):
            if p.startswith("**/", i):
                out, i = out + "(?:.*/)?", i + 3
            elif p.startswith("**", i):
                out, i = out + ".*", i + 2
            elif p[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif p[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(p[i]), i + 1
        return re.compile(out)

    parts = rel.split("/")
    candidates = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    included = True
    for pattern in patterns:
        negate = pattern.startswith("!")
        rx = regex(pattern[1:] if negate else pattern)
        if any(rx.fullmatch(c) for c in candidates):
            included = negate
    return included


def test_dockerfile_installs_the_lock_offline():
    ins = dockerfile_instructions()
    words = [w for w, _ in ins]
    args = dict(a.split("=", 1) for w, a in ins if w == "ARG" and "=" in a)
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", args["PYTHON_IMAGE"]), "slim Python >= 3.11 base"
    assert ("FROM", "${PYTHON_IMAGE} AS base") in ins
    # the wheels of docker/wheelhouse.sh (uv.lock exported with hashes), installed with no network,
    # in a stage of their own (they never reach the final image)
    runs = " ".join(a for w, a in ins if w == "RUN")
    assert ("COPY", "docker/.build/wheelhouse/ /wheels/") in ins
    assert runs.count("--no-index --find-links /wheels") == 2  # dependencies layer, then the project
    assert "--require-hashes -r /wheels/requirements.txt" in runs and "-e ." in runs
    assert ("COPY", "--from=install /app /app") in ins
    froms = [a for w, a in ins if w == "FROM"]
    assert froms[-1] == "base" and words.index("COPY") > words.index("FROM")
    wheelhouse = (DOCKER / "wheelhouse.sh").read_text()
    assert "export --frozen --no-dev --no-group kernel --no-emit-project" in wheelhouse
    assert "pip download" in wheelhouse and "--require-hashes" in wheelhouse
    # non-root user, batfeed as the entry point
    user = [a for w, a in ins if w == "USER"]
    assert user == ["batfeed"] and "useradd --uid 1000" in runs
    assert words.index("USER") > max(i for i, w in enumerate(words) if w == "RUN"), "USER after the last RUN"
    assert ("ENTRYPOINT", '["batfeed"]') in ins
    # every package folder of pyproject.toml, the lock, and data/ (batfeed demo) are copied
    copied = {src.rstrip("/") for w, a in ins if w == "COPY" for src in a.split()[:-1] if not src.startswith("--")}
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(setuptools["package-dir"].values()) | {"pyproject.toml", "uv.lock", "README.md", "data"} <= copied


GENERATED = "docker/.build/"  # docker/wheelhouse.sh output, not in the repository


def test_everything_referenced_exists_and_enters_the_build_context():
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    # files the Dockerfile copies: present, and not excluded by .dockerignore
    for word, rest in dockerfile_instructions():
        if word != "COPY" or rest.startswith("--from="):
            continue
        for src in (s for s in rest.split()[:-1] if not s.startswith("--")):
            if src.startswith(GENERATED):
                assert dockerignore_included(src + "requirements.txt", patterns), src
                continue
            path = REPO / src
            assert path.exists(), f"Dockerfile copies {src}, which does not exist"
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            kept = [f for f in files if dockerignore_included(f.relative_to(REPO).as_posix(), patterns)]
            assert kept, f".dockerignore excludes everything of {src}"
            assert all("__pycache__" not in f.parts for f in kept)
    for local in (".venv", ".tools", "runs/x.csv", ".git/HEAD", "tests/test_docker.py", "batfeed.egg-info/PKG-INFO",
                  "docker/ci.sh", "docker/scenarios/fcfs_small/workload.json"):
        assert not dockerignore_included(local, patterns), local
    # compose: the build context and Dockerfile, the override files
    build = base_model()["services"]["scheduler"]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert context == REPO and (context / build["dockerfile"]).resolve() == DOCKER / "Dockerfile"
    assert all(p.is_file() for p in OVERRIDES.values())
    # scenarios: their inputs (Scenario() checks each file it names)
    for name in SCENARIOS:
        scenario = scenario_tool.Scenario(DOCKER / "scenarios" / name)
        assert scenario.input("platform").is_file() and scenario.input("workload").is_file()
    assert os.access(SCRIPT, os.X_OK) and os.access(FAKE_DOCKER_BIN / "docker", os.X_OK)
    assert all(os.access(DOCKER / f, os.X_OK) for f in ("ci.sh", "wheelhouse.sh"))
    assert GENERATED.rstrip("/") in (REPO / ".gitignore").read_text(), "the wheelhouse is not committed"


@pytest.mark.parametrize("script", [SCRIPT, DOCKER / "ci.sh", DOCKER / "wheelhouse.sh"], ids=lambda p: p.name)
def test_scripts_are_strict_bash(script):
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in text
    subprocess.run([BASH, "-n", str(script)], check=True)
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck not installed: bash -n only")
    result = subprocess.run([shellcheck, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


# ====================================================================== scenarios and the checker
def test_scenario_commands_for_each_mode(tmp_path):
    events = scenario_tool.Scenario(DOCKER / "scenarios" / "fcfs_events")
    d = str(tmp_path)
    assert scenario_tool.batsim_args(events, d, "tcp://localhost:29000") == [
        "-p", f"{d}/platform.xml", "-w", f"{d}/workload.json", "-e", f"{d}/out/batsim",
        "-s", "tcp://localhost:29000", "--events", f"{d}/events.txt"]
    assert scenario_tool.simulate_args(events, d) == [
        "simulate", f"{d}/platform.xml", f"{d}/workload.json", "--export", f"{d}/out/batsim",
        "--events", f"{d}/events.txt"]
    dynamic = scenario_tool.Scenario(DOCKER / "scenarios" / "dynamic_resubmit")
    assert scenario_tool.simulate_args(dynamic, d)[-1] == "--enable-dynamic-jobs"
    assert dynamic.scheduler_arg("/data") == "/data/resubmit.py"
    with pytest.raises(scenario_tool.ScenarioError, match="no equivalent"):
        scenario_tool.translate_to_simulate(["-p", "/data/p.xml", "-w", "/data/w.json", "--energy"], d)


@pytest.mark.parametrize("change, message", [
    ({"variant": "turbo"}, "variant must be one of"),
    ({"variant": "events"}, "'events' file goes with"),
    ({"workload": "nope.json"}, "workload file not found"),
    ({"scheduler": "missing.py"}, "scheduler file not found"),
    ({"options": "{}"}, "'options' must be a dict"),
    ({"extra": 1}, "unknown keys"),
])
def test_scenario_files_are_validated(tmp_path, change, message):
    folder = tmp_path / "bad"
    shutil.copytree(DOCKER / "scenarios" / "fcfs_small", folder)
    spec = json.loads((folder / "scenario.json").read_text())
    spec["platform"] = str(REPO / "platforms" / "small_4.xml")
    spec.update(change)
    (folder / "scenario.json").write_text(json.dumps(spec))
    with pytest.raises(scenario_tool.ScenarioError, match=message):
        scenario_tool.Scenario(folder)


@pytest.fixture(scope="module")
def fcfs_outputs(tmp_path_factory):
    """fcfs_small run once on the embedded engine (via run-integration.sh)."""
    workdir = tmp_path_factory.mktemp("fcfs_small")
    result = run_script("--embedded", "--workdir", str(workdir), "fcfs_small")
    assert result.returncode == 0, result.stdout + result.stderr
    return workdir


def _rewrite(path: Path, edit) -> None:
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")


BROKEN = {
    "header": (lambda ls: [ls[0].replace("allocated_resources,consumed_energy", "consumed_energy,allocated_resources")]
               + ls[1:], "header differs from Batsim's"),
    "missing-job": (lambda ls: ls[:2] + ls[3:], "w0!2 of the workload is missing"),
    "duplicate-job": (lambda ls: ls + [ls[2]], "appears twice"),
    "unknown-job": (lambda ls: ls + [ls[2].replace("2,w0,", "99,w0,", 1)], "w0!99 is not in the workload"),
    "other-allocation": (lambda ls: [ls[0]] + [ls[1]] + [ls[2].replace("2-3", "0-1")] + ls[3:],
                      "allocated_resources = '0-1', reference"),
    "bad-state": (lambda ls: [ls[0], ls[1].replace("REJECTED", "LOST")] + ls[2:], "unknown final_state 'LOST'"),
    "success-flag": (lambda ls: [ls[0], ls[1], ls[2].replace(",1,COMPLETED_SUCCESSFULLY", ",0,COMPLETED_SUCCESSFULLY")]
                     + ls[3:], "success=0 does not match"),
    "times": (lambda ls: [ls[0], ls[1], ls[2].replace(",50.000000,50.000000,0.0", ",50.000000,70.000000,0.0")]
              + ls[3:], "inconsistent times"),
}


def test_checker_accepts_the_run(fcfs_outputs):
    scenario = scenario_tool.Scenario(DOCKER / "scenarios" / "fcfs_small")
    problems, summary = scenario_tool.check_outputs(scenario, fcfs_outputs)
    assert problems == []
    assert summary.startswith("6 jobs accounted for (6 static, 0 dynamic)")
    lines = (fcfs_outputs / "out" / "batsim_jobs.csv").read_text().splitlines()
    assert lines[1].startswith("5,w0,d10,20.000000,5,20.000000,0,REJECTED,")  # the row the edits below rely on
    assert lines[2].startswith("2,w0,d50,0.000000,2,100.000000,1,COMPLETED_SUCCESSFULLY,0.000000,50.000000,50.000000,0")


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_checker_catches_broken_outputs(fcfs_outputs, tmp_path, case):
    edit, message = BROKEN[case]
    workdir = tmp_path / "w"
    shutil.copytree(fcfs_outputs, workdir)
    _rewrite(workdir / "out" / "batsim_jobs.csv", edit)
    scenario = scenario_tool.Scenario(DOCKER / "scenarios" / "fcfs_small")
    problems, _ = scenario_tool.check_outputs(scenario, workdir)
    assert any(message in p for p in problems), problems
    # the command line reports it and fails
    result = subprocess.run([sys.executable, str(DOCKER / "scenario_tool.py"), "check",
                             str(DOCKER / "scenarios" / "fcfs_small"), str(workdir)], capture_output=True, text=True)
    assert result.returncode == 1 and "FAILED fcfs_small" in result.stderr


def test_checker_catches_missing_and_inconsistent_files(fcfs_outputs, tmp_path):
    scenario = scenario_tool.Scenario(DOCKER / "scenarios" / "fcfs_small")
    workdir = tmp_path / "w"
    shutil.copytree(fcfs_outputs, workdir)
    schedule = workdir / "out" / "batsim_schedule.csv"
    rows = list(csv.DictReader(schedule.read_text().splitlines()))
    rows[0]["nb_jobs"] = "7"
    with schedule.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    problems, _ = scenario_tool.check_outputs(scenario, workdir)
    assert problems == ["batsim_schedule.csv: nb_jobs=7, batsim_jobs.csv says 6"]
    schedule.unlink()
    (workdir / "out" / "batsim_jobs.csv").unlink()
    problems, _ = scenario_tool.check_outputs(scenario, workdir)
    assert len(problems) == 1 and "batsim_jobs.csv: missing" in problems[0]


# ================================================================ run-integration.sh, here
@pytest.mark.parametrize("name", SCENARIOS)
def test_embedded_scenario(tmp_path, name):
    """The same scenario, Batsim command line and checks, with batfeed's engine playing Batsim."""
    reason = scheduler_unavailable(name)
    if reason:
        pytest.skip(reason)
    result = run_script("--embedded", "--workdir", str(tmp_path / name), name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ok {name}: " in result.stdout
    assert "scheduler exit status:   0" in result.stdout


@pytest.mark.parametrize("name", ["fcfs_small", "fcfs_events", "dynamic_resubmit"])
def test_docker_mode_with_a_stand_in_docker(tmp_path, name):
    """run-integration.sh --docker drives `docker compose` as intended (fake docker playing compose)."""
    log = tmp_path / "docker.log"
    env = script_env(PATH=f"{FAKE_DOCKER_BIN}{os.pathsep}{os.environ['PATH']}", FAKE_DOCKER_LOG=str(log),
                     FAKE_DOCKER_STATE=str(tmp_path))
    workdir = tmp_path / "work"
    result = run_script("--docker", "--workdir", str(workdir), name, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ok {name}: " in result.stdout
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    up = next(c for c in calls if "up" in c["argv"])
    variant = scenario_tool.Scenario(DOCKER / "scenarios" / name).variant
    files = [up["argv"][i + 1] for i, a in enumerate(up["argv"]) if a == "-f"]
    assert files == [str(COMPOSE)] + ([str(OVERRIDES[variant])] if variant in OVERRIDES else [])
    assert up["argv"][-3:] == ["--build", "--abort-on-container-failure", "--no-color"]
    assert up["env"]["BATFEED_DATA"] == str(workdir)
    assert up["env"]["BATFEED_UID"] == str(os.getuid())
    expected_sched = "/data/resubmit.py" if name == "dynamic_resubmit" else "fcfs"
    assert up["env"]["BATFEED_SCHEDULER"] == expected_sched
    assert "down" in calls[-1]["argv"]


def test_docker_mode_fails_when_a_container_fails(tmp_path):
    log = tmp_path / "docker.log"
    env = script_env(PATH=f"{FAKE_DOCKER_BIN}{os.pathsep}{os.environ['PATH']}", FAKE_DOCKER_LOG=str(log),
                     FAKE_DOCKER_STATE=str(tmp_path), FAKE_DOCKER_FAIL="scheduler")
    result = run_script("--docker", "--workdir", str(tmp_path / "work"), "fcfs_small", env=env)
    assert result.returncode == 1
    assert "scheduler container exit status: 3" in result.stdout
    assert "down" in json.loads(log.read_text().splitlines()[-1])["argv"]


def test_script_usage_and_missing_prerequisites(tmp_path):
    result = run_script("no_such_scenario")
    assert result.returncode == 2 and "known:" in result.stderr and "fcfs_small" in result.stderr
    assert run_script().returncode == 2
    assert run_script("--bogus", "fcfs_small").returncode == 2
    # a PATH with the basic tools but neither batsim nor docker
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("dirname", "basename", "rm", "mkdir", "cp", "tr", "sed", "head", "tail", "sleep", "id", "timeout"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    env = script_env(PATH=str(bare))
    result = run_script("--local", "fcfs_small", env=env)
    assert result.returncode == 2 and "--local: no batsim binary on PATH" in result.stderr
    result = run_script("--docker", "fcfs_small", env=env)
    assert result.returncode == 2 and "--docker: no docker command on PATH" in result.stderr


# ===================================================================== the real integration runs
def docker_engine_problem() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no docker command on PATH"
    if Path(docker).resolve().parent == FAKE_DOCKER_BIN.resolve():
        return "the docker on PATH is the test stand-in"
    try:
        if subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
            return "the Docker engine is not reachable (docker info failed)"
        version = subprocess.run([docker, "compose", "version", "--short"], capture_output=True, text=True,
                                 timeout=30)
    except subprocess.TimeoutExpired:
        return "docker did not answer within 30 s"
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", version.stdout.strip())
    if version.returncode != 0 or not m:
        if shutil.which("docker-compose") is None:
            return "no Docker Compose ('docker compose' v2 or 'docker-compose' v1)"
    return None


def docker_image_problem() -> str | None:
    """The docker tests run the images docker/ci.sh builds (they do not build: no network there)."""
    image = os.environ.get("BATFEED_IMAGE", "batfeed:local")
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=60).returncode != 0:
        return f"no {image} image (docker/ci.sh builds it)"
    batsim = os.environ.get("BATSIM_IMAGE")
    if batsim and subprocess.run(["docker", "image", "inspect", batsim], capture_output=True,
                                 timeout=60).returncode != 0:
        return f"no {batsim} image (BATSIM_IMAGE; docker pull it first)"
    return None


def batsim_problem() -> str | None:
    batsim = shutil.which("batsim")
    if batsim is None:
        return "no batsim binary on PATH"
    try:
        out = subprocess.run([batsim, "--version"], capture_output=True, text=True, timeout=30).stdout
    except subprocess.TimeoutExpired:
        return "batsim --version did not answer"
    m = re.search(r"(\d+)\.\d+\.\d+", out)
    if m and m.group(1) != "4":
        return f"batsim {m.group(0)} is not a Batsim 4.x (batfeed speaks the Batsim 4 protocol)"
    return None


@pytest.mark.docker
@pytest.mark.parametrize("name", SCENARIOS)
def test_docker_scenario(tmp_path, name):
    """Batsim container + batfeed container (image built from docker/Dockerfile) under compose."""
    reason = docker_engine_problem() or docker_image_problem()
    if reason:
        pytest.skip(f"needs a Docker engine: {reason}")
    # BATSIM_IMAGE: a real Batsim container; otherwise batfeed's embedded engine in its own container
    embedded = [] if os.environ.get("BATSIM_IMAGE") else ["--batsim-embedded"]
    result = run_script("--docker", "--no-build", *embedded, "--workdir", str(tmp_path / name), name, timeout=3600)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert f"ok {name}: " in result.stdout


@pytest.mark.batsim
@pytest.mark.parametrize("name", SCENARIOS)
def test_local_batsim_scenario(tmp_path, name):
    """A batsim binary on PATH with the compose command line, beside `batfeed schedule`."""
    reason = batsim_problem() or scheduler_unavailable(name)
    if reason:
        pytest.skip(f"needs a Batsim 4.x binary: {reason}")
    result = run_script("--local", "--workdir", str(tmp_path / name), name, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"ok {name}: " in result.stdout


# ========================================== the embedded-engine batsim service and docker/ci.sh
def test_embedded_variant_only_changes_the_batsim_image_and_entry_point():
    """compose.embedded.yml keeps Batsim's command line, volume, user, network: scenarios run unchanged."""
    assert load(EMBEDDED) == {"services": {"batsim": {
        "image": "${BATFEED_IMAGE:-batfeed:local}",
        "entrypoint": ["/app/.venv/bin/python", "/app/docker/batsim_embedded.py"]}}}
    for files in ([COMPOSE], [COMPOSE, OVERRIDES["events"]], [COMPOSE, OVERRIDES["dynamic"]]):
        env = {"BATFEED_DATA": "/host/exp"}
        plain = compose_config.config(files, env)["services"]
        embedded = compose_config.config([*files, EMBEDDED], env)["services"]
        assert embedded["scheduler"] == plain["scheduler"]
        assert {k: v for k, v in embedded["batsim"].items() if k not in ("image", "entrypoint")} == \
            {k: v for k, v in plain["batsim"].items() if k != "image"}
        assert embedded["batsim"]["image"] == plain["scheduler"]["image"] == "batfeed:local"


@pytest.mark.parametrize("variant", ["base", *OVERRIDES])
def test_batsim_embedded_entry_point_runs_the_zmq_engine(variant):
    command = batsim_command(*([OVERRIDES[variant]] if variant in OVERRIDES else []))
    argv = batsim_embedded.simulate_argv(command)
    assert argv[:4] == ["batfeed", "simulate", "/data/platform.xml", "/data/workload.json"]
    assert argv[-5:] == ["--transport", "zmq", "--socket", "tcp://scheduler:28000", "--no-progress"]
    assert argv[argv.index("--export") + 1] == "/data/out/batsim"
    assert argv[1:-5] == scenario_tool.translate_to_simulate(
        [a for i, a in enumerate(command) if "-s" not in command[max(i - 1, 0):i + 1]], "/data")
    if variant == "events":
        assert argv[argv.index("--events") + 1] == "/data/events.txt"
    if variant == "dynamic":
        assert "--enable-dynamic-jobs" in argv
    result = subprocess.run([sys.executable, str(DOCKER / "batsim_embedded.py"), "-p", "/data/p.xml", "--bogus"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--bogus" in result.stderr


def bare_path(tmp_path: Path) -> str:
    """A PATH with basic tools but no docker, dockerd, apt-get."""
    bare = tmp_path / "bin"
    bare.mkdir(exist_ok=True)
    for tool in ("bash", "dirname", "date", "id", "mkdir", "cat", "seq", "sleep", "timeout", "grep", "tail", "cut"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    return str(bare)


@pytest.mark.parametrize("how", ["BATFEED_DOCKER=off", "no docker on PATH"])
def test_ci_script_skips_in_one_line_without_an_engine(tmp_path, how):
    """No engine to be had: one line saying why, exit 0 (never installs or starts anything here)."""
    env = dict(os.environ, BATFEED_DOCKER="off") if how.startswith("BATFEED") else \
        dict(os.environ, PATH=bare_path(tmp_path), BATFEED_DOCKER="")
    result = subprocess.run([BASH, str(CI_SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("docker/ci.sh: Docker stage skipped: "), lines


# ================================================================ self-sufficient stages (issue 25)

def test_wheelhouse_uses_the_projects_own_pip(tmp_path):
    """docker/wheelhouse.sh downloads with the pip of .tools/ (scripts/bootstrap.sh), not with `python3` or
    $PYTHON: here both are the project's uv venv, which has no pip (the fresh-clone failure of issue 25)."""
    assert subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0, \
        "the test's Python has pip: it would not show the failure"
    venv_bin = tmp_path / "bin"                     # `python3` on PATH is the pip-less venv Python
    venv_bin.mkdir()
    (venv_bin / "python3").symlink_to(sys.executable)
    env = dict(os.environ, PYTHON=sys.executable, PATH=f"{venv_bin}{os.pathsep}{os.environ['PATH']}")
    env.pop("WHEELHOUSE_PYTHON", None)
    result = subprocess.run([BASH, str(DOCKER / "wheelhouse.sh")], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^wheelhouse: docker/\.build/wheelhouse \(\d+ files", result.stdout, re.M), result.stdout
    wheels = DOCKER / ".build" / "wheelhouse"
    from packaging.markers import Marker

    pinned = [req.strip() for line in (wheels / "requirements.txt").read_text().splitlines()
              if "==" in line and not line.startswith(" ")
              for req, _, marker in [line.rstrip(" \\").partition(";")] if not marker or Marker(marker).evaluate()]
    have = {p.name.split("-")[0].lower().replace("_", "-") for p in wheels.iterdir()}
    missing = [r for r in pinned if r.split("==")[0].lower().replace("_", "-") not in have]
    assert pinned and not missing, missing


APT_STAND_IN = """#!/usr/bin/env bash
# stand-in apt-get: the lock is held for the first $LOCKED_CALLS calls, then it succeeds (or fails: $FAIL)
n=$(( $(cat "$STATE" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$STATE"
echo "apt-get $*" >> "$CALLS"
if [ "$n" -le "$LOCKED_CALLS" ]; then
    echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2; exit 100
fi
[ -z "${FAIL:-}" ] || [[ " $* " == *" update "* ]] || { echo "E: Unable to locate package $FAIL" >&2; exit 100; }
echo "Setting up $*"
"""


def _apt(tmp_path: Path, locked_calls: int, wait: int, fail: str = "") -> tuple[subprocess.CompletedProcess, list]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "apt-get").write_text(APT_STAND_IN)
    (bin_dir / "apt-get").chmod(0o755)
    calls = tmp_path / "calls"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", STATE=str(tmp_path / "n"),
               CALLS=str(calls), LOCKED_CALLS=str(locked_calls), FAIL=fail, APT_LOCK_WAIT=str(wait),
               APT_LOCK_POLL="0.05", APT_LOG=str(tmp_path / "apt.log"))
    script = f'set -euo pipefail; . {shlex.quote(str(DOCKER / "apt.sh"))}; rc=0; apt_install docker.io || rc=$?; ' \
             'echo "rc=$rc"'
    result = subprocess.run([BASH, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    return result, calls.read_text().splitlines() if calls.exists() else []


def test_apt_waits_for_the_dpkg_lock(tmp_path):
    """docker/ci.sh's apt_install waits while another apt holds the lock (bounded) instead of giving up."""
    result, calls = _apt(tmp_path, locked_calls=3, wait=30)
    assert result.stdout.strip() == "rc=0", result.stdout + result.stderr
    assert len(calls) == 4 and all(c.startswith("apt-get -o DPkg::Lock::Timeout=") for c in calls)
    assert all(c.endswith("install -y -q --no-install-recommends docker.io") for c in calls)
    assert result.stderr.strip().splitlines() == \
        ["apt.sh: another apt or dpkg holds the lock; waiting up to 30s"], result.stderr


def test_apt_gives_up_when_the_lock_stays_held(tmp_path):
    # 3 s, not 1: apt.sh's clock has whole seconds, so under load a 1 s budget can expire during the first call
    result, calls = _apt(tmp_path, locked_calls=10**6, wait=3)
    assert result.stdout.strip() == "rc=2"
    assert result.stderr.strip().splitlines()[-1] == (
        "apt.sh: the apt/dpkg lock stayed held for 3s: E: Could not get lock /var/lib/dpkg/lock-frontend. "
        "It is held by process 4242 (apt-get)")
    assert 2 <= len(calls) < 300, "bounded, and polled"


def test_apt_other_failures_do_not_wait(tmp_path):
    """A missing package fails at once (install, update, install again: no lock wait)."""
    result, calls = _apt(tmp_path, locked_calls=0, wait=300, fail="docker.io")
    assert result.stdout.strip() == "rc=1" and result.stderr == ""
    assert [c.split("=", 1)[1].split(" ", 1)[1] for c in calls] == \
        ["install -y -q --no-install-recommends docker.io", "update -q",
         "install -y -q --no-install-recommends docker.io"]
