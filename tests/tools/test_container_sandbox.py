"""The container backend of code_interpreter and run_command, end to end on a real Docker
engine (started by tests/container_engine.py) with an image built here: files in and out,
no network, memory and process limits, timeouts and cancellation that leave no container,
the workspace's rules, and the errors when no engine or image is there."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raf.core.errors import ConfigurationError
from raf.core.tools import ToolContext
from raf.tools.code import CodeInterpreter
from raf.tools.container import mounts_from_bwrap
from raf.tools.sandbox import ContainerSandbox
from raf.tools.shell import RunCommand
from raf.tools.workspace import WorkspaceScope
from tests.container_engine import (
    Engine,
    EngineUnavailable,
    build_image,
    leftover_containers,
    start_engine,
)
from tests.tools.planting import (
    PLANT_NESTED,
    PLANT_REPOSITORY,
    REPLANT_CONFIG,
    git_runs_code,
    make_repository,
)


@pytest.fixture(scope="session")
def engine() -> Iterator[tuple[Engine, str]]:
    """A Docker engine and the test image; the tests FAIL (never skip) when it cannot
    start, with dockerd's own words."""
    try:
        started = start_engine()
    except EngineUnavailable as exc:
        pytest.fail(f"the container engine could not start: {exc}")
    try:
        tag, _ = build_image(started.address)
    except Exception as exc:
        started.stop()
        pytest.fail(f"the test image could not be built: {exc}\n{started.log_tail()}")
    try:
        yield started, tag
    finally:
        started.stop()


def box(engine: tuple[Engine, str], **settings: Any) -> ContainerSandbox:
    running, tag = engine
    return ContainerSandbox(image=tag, docker_host=running.address, **settings)


def workspace(tmp_path: Path, **kwargs: Any) -> WorkspaceScope:
    """A workspace folder that belongs to a non-root user, as a user's own would (when
    the tests run as root, `nobody`)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "in.txt").write_text("from the host\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "key.txt").write_text("s3cret\n")
    (root / "fixed.txt").write_text("keep me\n")
    if os.geteuid() == 0:
        for path in [root, *root.rglob("*")]:
            os.chown(path, 65534, 65534)
    return WorkspaceScope(root, **kwargs)


async def command(tool: RunCommand, line: str, **args: Any) -> Any:
    result = await tool.invoke({"command": line, **args}, ToolContext())
    return result


async def watched(engine: tuple[Engine, str], call: Any) -> tuple[Any, dict[str, Any]]:
    """Await `call` (which must run for a few seconds) and, while it runs, read its
    container's settings from the engine."""
    running, _ = engine
    task = asyncio.ensure_future(call)
    deadline = time.monotonic() + 60
    attrs: dict[str, Any] = {}
    while not attrs and time.monotonic() < deadline and not task.done():
        found = await asyncio.to_thread(leftover_containers, running.address)
        if found:
            attrs = found[0].attrs
        else:
            await asyncio.sleep(0.1)
    result = await task
    assert attrs, "the call's container was never seen"
    return result, attrs


# -- code_interpreter ---------------------------------------------------------------------


async def test_code_runs_in_a_container_with_files_in_and_out(engine):
    tool = CodeInterpreter(container=box(engine), timeout_s=60)
    try:
        result = await tool.run(
            "import os\n"
            "print(open('data.csv').read().strip(), os.getuid(), os.getcwd())\n"
            "open('report.txt', 'w').write('made inside')\n",
            files={"data.csv": "a,b"},
        )
    finally:
        await tool.aclose()
    assert result.exit_code == 0, result
    assert result.sandbox == "container"
    text, uid, cwd = result.stdout.split()
    assert text == "a,b" and cwd == "/work"
    assert int(uid) != 0  # never root in the container
    assert [(f.name, f.content) for f in result.files] == [("report.txt", b"made inside")]


async def test_the_container_is_set_up_as_the_sandbox_says(engine):
    tool = CodeInterpreter(
        container=box(engine, memory_mb=96, cpus=0.5, pids=20, tmpfs_mb=8), timeout_s=60
    )
    try:
        status = (
            "import time\n"
            "print(open('/proc/self/status').read())\n"
            "print(*[m for m in open('/proc/mounts') if m.split()[1] == '/tmp'])\n"
            "time.sleep(4)\n"
        )
        result, attrs = await watched(engine, tool.run(status))
    finally:
        await tool.aclose()
    assert result.exit_code == 0
    seen = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    assert seen["CapBnd"] == seen["CapEff"] == "0000000000000000"  # no capability at all
    assert seen["NoNewPrivs"] == "1"
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert (host["Memory"], host["MemorySwap"]) == (96 << 20, 96 << 20)
    assert (host["NanoCpus"], host["PidsLimit"]) == (500_000_000, 20)
    assert attrs["Config"]["User"] not in ("", "0", "root")
    (tmp,) = [line for line in result.stdout.splitlines() if line.startswith("tmpfs /tmp ")]
    assert "size=8192k" in tmp


async def test_code_has_no_network_by_default(engine):
    tool = CodeInterpreter(container=box(engine), timeout_s=60)
    code = (
        "import os, socket\n"
        "print(sorted(os.listdir('/sys/class/net')))\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=5)\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    try:
        result = await tool.run(code)
    finally:
        await tool.aclose()
    assert result.exit_code == 0, result
    interfaces, outcome = result.stdout.splitlines()
    assert interfaces == "['lo']"  # no interface but loopback
    assert outcome.startswith("refused")


async def test_the_root_filesystem_is_read_only_and_tmp_is_scratch(engine):
    tool = CodeInterpreter(container=box(engine), timeout_s=60)
    try:
        result = await tool.run(
            "touch /usr/planted 2>&1 || echo ro\ntouch /tmp/scratch && echo tmp-ok\n",
            language="shell",
        )
    finally:
        await tool.aclose()
    assert "Read-only file system" in result.stdout
    assert "tmp-ok" in result.stdout


async def test_memory_limit_holds(engine):
    tool = CodeInterpreter(container=box(engine, memory_mb=64), timeout_s=60)
    try:
        result = await tool.run("blob = bytearray(400 * 1024 * 1024)\nprint('survived')\n")
    finally:
        await tool.aclose()
    assert "survived" not in result.stdout
    assert result.exit_code != 0
    assert any("memory limit of 64 MB" in note for note in result.notes), result


async def test_process_limit_holds(engine):
    tool = CodeInterpreter(container=box(engine, pids=12), timeout_s=60)
    code = (
        "import os, time\n"
        "made = 0\n"
        "for _ in range(60):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(20)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print(made, flush=True)\n"
        "os._exit(0)\n"
    )
    try:
        result = await tool.run(code)
    finally:
        await tool.aclose()
    assert result.stdout.strip().isdigit(), result
    assert int(result.stdout) < 12


async def test_a_timeout_kills_the_container_and_leaves_none(engine):
    running, _ = engine
    tool = CodeInterpreter(container=box(engine), timeout_s=3)
    started = time.monotonic()
    try:
        result = await tool.run("import time\nprint('begun', flush=True)\ntime.sleep(300)\n")
    finally:
        await tool.aclose()
    assert result.timed_out and result.exit_code is None
    assert "begun" in result.stdout  # output before the kill is kept
    assert time.monotonic() - started < 60
    assert any("container killed" in note for note in result.notes)
    assert leftover_containers(running.address) == []


async def test_a_cancelled_call_removes_its_container(engine):
    running, _ = engine
    tool = CodeInterpreter(container=box(engine), timeout_s=300)
    task = asyncio.create_task(tool.run("import time\ntime.sleep(300)\n"))
    deadline = time.monotonic() + 60
    while not leftover_containers(running.address) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert leftover_containers(running.address), "the container never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await tool.aclose()
    assert leftover_containers(running.address) == []


async def test_output_is_bounded(engine):
    tool = CodeInterpreter(container=box(engine), timeout_s=60, output_cap=1000)
    try:
        result = await tool.run("print('x' * 50000)")
    finally:
        await tool.aclose()
    assert len(result.stdout) == 1000
    assert any("output cut at 1000 bytes" in note for note in result.notes)


async def test_standard_input_reaches_the_code(engine):
    tool = CodeInterpreter(container=box(engine), timeout_s=60)
    try:
        result = await tool.run("import sys\nprint(sys.stdin.read().upper())", stdin=b"fed")
    finally:
        await tool.aclose()
    assert result.stdout.strip() == "FED"


# -- run_command --------------------------------------------------------------------------


async def test_command_reads_and_writes_the_workspace(engine, tmp_path):
    scope = workspace(tmp_path, policy="deny_outside")
    tool = RunCommand(scope, container=box(engine))
    try:
        result = await command(tool, "cat in.txt; echo made > out.txt; id -u; pwd")
    finally:
        await tool.aclose()
    assert result.error is None, result
    assert result.value["sandbox"] == "container"
    lines = result.value["stdout"].splitlines()
    assert lines[0] == "from the host"
    assert lines[1] != "0"
    assert lines[2] == str(scope.real_root)  # the workspace keeps its path
    assert (scope.real_root / "out.txt").read_text() == "made\n"


async def test_a_workspace_root_owns_is_used_as_nobody(engine, tmp_path):
    root = tmp_path / "owned"
    root.mkdir()
    (root / "note.txt").write_text("readable\n")
    tool = RunCommand(WorkspaceScope(root, policy="deny_outside"), container=box(engine))
    try:
        result = await command(tool, "id -u; cat note.txt")
    finally:
        await tool.aclose()
    uid, text = result.value["stdout"].splitlines()
    assert uid == (str(os.getuid()) if os.geteuid() != 0 else "65534")
    assert text == "readable"


async def test_path_rules_hold_in_the_container(engine, tmp_path):
    scope = workspace(
        tmp_path,
        policy="deny_outside",
        rules=[
            {"path": "secrets", "read": "deny"},
            {"path": "secrets/**", "read": "deny"},
            {"path": "fixed.txt", "write": "deny"},
        ],
    )
    tool = RunCommand(scope, container=box(engine))
    try:
        hidden = await command(tool, "cat secrets/key.txt; ls -A secrets")
        fixed = await command(tool, "echo changed > fixed.txt; rm -f fixed.txt; cat fixed.txt")
        outside = await command(tool, "touch /etc/planted; ls /root /home")
    finally:
        await tool.aclose()
    assert "s3cret" not in hidden.value["stdout"] and "key.txt" not in hidden.value["stdout"]
    assert (scope.real_root / "fixed.txt").read_text() == "keep me\n"
    assert "Read-only file system" in fixed.value["stderr"]
    assert "Read-only file system" in outside.value["stderr"]
    assert not Path("/etc/planted").exists()


async def test_a_workspace_the_rules_keep_from_changes_is_mounted_read_only(engine, tmp_path):
    scope = workspace(tmp_path, policy="deny_outside", rules=[{"path": "**", "write": "deny"}])
    tool = RunCommand(scope, container=box(engine))
    try:
        result = await command(tool, "touch new.txt; echo x >> in.txt; mkdir d; ls")
    finally:
        await tool.aclose()
    assert not (scope.real_root / "new.txt").exists()
    assert not (scope.real_root / "d").exists()
    assert (scope.real_root / "in.txt").read_text() == "from the host\n"
    assert "Read-only file system" in result.value["stderr"]


async def test_command_network_is_off_even_when_the_policy_gives_it(engine, tmp_path):
    scope = workspace(tmp_path, policy="allow_all")
    tool = RunCommand(scope, container=box(engine))
    assert tool.network  # allow_all gives commands the network...
    try:
        result, attrs = await watched(engine, command(tool, "sleep 3; ls /sys/class/net"))
    finally:
        await tool.aclose()
    assert attrs["HostConfig"]["NetworkMode"] == "none"  # ...but the container does not
    assert result.value["stdout"].split() == ["lo"]
    assert "no network" in result.value["note"]


async def test_command_timeout_kills_the_container(engine, tmp_path):
    running, _ = engine
    scope = workspace(tmp_path, policy="deny_outside")
    tool = RunCommand(scope, container=box(engine))
    try:
        result = await command(tool, "echo started; sleep 300", timeout_s=3)
    finally:
        await tool.aclose()
    assert result.error is not None
    assert "timed out after 3s; its container was killed" in str(result.error)
    assert "started" in str(result.error)
    assert leftover_containers(running.address) == []


async def test_a_container_needs_no_approval_where_bubblewrap_is_missing(engine, tmp_path):
    from raf.tools.sandbox import SandboxKind

    scope = workspace(tmp_path, policy="deny_outside")
    tool = RunCommand(scope, container=box(engine), sandbox=SandboxKind.NONE)
    assert not tool.requires_approval
    try:
        result = await command(tool, "echo fine")
    finally:
        await tool.aclose()
    assert result.value["stdout"] == "fine\n"


# -- errors -------------------------------------------------------------------------------


async def test_no_engine_is_a_clear_error(tmp_path):
    socket = tmp_path / "no-engine.sock"
    sandbox = ContainerSandbox(image="any", docker_host=f"unix://{socket}")
    code = CodeInterpreter(container=sandbox)
    result = await code.invoke({"code": "print(1)"}, ToolContext())
    message = str(result.error)
    assert f"no container engine answers at unix://{socket}" in message
    assert "DOCKER_HOST" in message and "podman.sock" in message
    scope = workspace(tmp_path, policy="deny_outside")
    shell = RunCommand(scope, container=sandbox)
    refused = await command(shell, "true")
    assert f"no container engine answers at unix://{socket}" in str(refused.error)


async def test_a_missing_image_is_a_clear_error(engine):
    running, _ = engine
    sandbox = ContainerSandbox(image="raf-no-such-image:1", docker_host=running.address)
    tool = CodeInterpreter(container=sandbox)
    try:
        result = await tool.invoke({"code": "print(1)"}, ToolContext())
    finally:
        await tool.aclose()
    assert "image 'raf-no-such-image:1' is not on the engine" in str(result.error)
    assert "docker pull raf-no-such-image:1" in str(result.error)


def test_safe_defaults_and_refusals():
    sandbox = ContainerSandbox(image="img")
    assert sandbox.network is False and sandbox.read_only is True and sandbox.user is None
    for user in ("0", "root", "0:0", "root:root"):
        with pytest.raises(ConfigurationError, match="non-root user"):
            ContainerSandbox(image="img", user=user)
    with pytest.raises(ConfigurationError, match="memory_mb"):
        ContainerSandbox(image="img", memory_mb=0)
    with pytest.raises(ConfigurationError, match="cpus"):
        ContainerSandbox(image="img", cpus=0)
    with pytest.raises(ConfigurationError, match="image"):
        ContainerSandbox(image=" ")


def test_the_engine_address_is_the_sandboxs_then_docker_host_then_dockers(monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert ContainerSandbox(image="i").engine_address() == "unix:///var/run/docker.sock"
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    assert ContainerSandbox(image="i").engine_address() == "tcp://127.0.0.1:2375"
    given = ContainerSandbox(image="i", docker_host="unix:///run/podman/podman.sock")
    assert given.engine_address() == "unix:///run/podman/podman.sock"


def test_rule_mounts_outside_the_workspace_are_left_out(tmp_path):
    root = tmp_path
    mounts = mounts_from_bwrap(
        ["--tmpfs", "/etc/ssh", "--ro-bind", "/dev/null", str(root / "a"), "--bind",
         str(root / "b"), str(root / "b"), "--ro-bind", str(root / "b"), str(root / "b")],
        under=root,
    )  # fmt: skip
    assert [(m.target, getattr(m, "read_only", None)) for m in mounts] == [
        (str(root / "a"), True),
        (str(root / "b"), True),  # the later mount of a path wins, as in bubblewrap
    ]


# -- declarations -------------------------------------------------------------------------

CONTAINER_AGENT = """\
name: coder
tools:
  - kind: code
    config:
      backend: container
      timeout: 20
      container:
        image: {image}
        memoryMb: 128
        cpus: 0.5
        pids: 32
        dockerHost: {host}
  - kind: shell
    config:
      backend: container
      container: {{image: {image}, dockerHost: {host}}}
"""


def test_a_declaration_builds_container_tools(tmp_path):
    from raf.decl import DeclAgentBuilder, load_file
    from raf.testing import ScriptedChatClient

    path = tmp_path / "agent.yaml"
    path.write_text(CONTAINER_AGENT.format(image="img:1", host="unix:///run/podman.sock"))
    agent = DeclAgentBuilder().from_file(path).with_chat_client(ScriptedChatClient([])).build()
    code, shell = agent.tools
    assert code.container == ContainerSandbox(
        image="img:1", memory_mb=128, cpus=0.5, pids=32, docker_host="unix:///run/podman.sock"
    )
    assert code.timeout_s == 20
    assert shell.container.image == "img:1" and shell.container.network is False
    assert load_file(path).warnings == []


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ("{backend: container}", "needs a `container` block"),
        ("{backend: process, container: {image: i}}", "needs backend 'container'"),
        ("{backend: container, container: {image: i, user: root}}", "non-root user"),
        ("{backend: container, container: {image: i, imgae: j}}", "imgae"),
    ],
)
def test_a_wrong_container_block_is_a_located_error(tmp_path, config, says):
    from raf.core.errors import ValidationProblems
    from raf.decl import DeclAgentBuilder, load_file
    from raf.testing import ScriptedChatClient

    path = tmp_path / "agent.yaml"
    path.write_text(f"name: a\ntools:\n  - kind: shell\n    config: {config}\n")
    with pytest.raises((ValidationProblems, ConfigurationError)) as info:
        loaded = load_file(path)
        DeclAgentBuilder().from_loaded(loaded).with_chat_client(ScriptedChatClient([])).build()
    assert says in str(info.value)
    assert "config" in str(info.value)


async def test_a_declared_container_runs_commands(engine, tmp_path):
    from raf.decl import DeclAgentBuilder
    from raf.testing import ScriptedChatClient

    running, tag = engine
    path = tmp_path / "agent.yaml"
    path.write_text(CONTAINER_AGENT.format(image=tag, host=running.address))
    agent = DeclAgentBuilder().from_file(path).with_chat_client(ScriptedChatClient([])).build()
    code, _ = agent.tools
    try:
        result = await code.invoke({"code": "import os; print(os.getuid() != 0)"}, ToolContext())
    finally:
        await code.aclose()
    assert result.value["stdout"] == "True\n"


def test_the_model_is_told_commands_run_in_a_container(tmp_path):
    from raf.context.workspace import WorkspaceContextProvider

    scope = WorkspaceScope(tmp_path, policy="allow_all")
    provider = WorkspaceContextProvider(scope)
    provider.add_tool(RunCommand(container=ContainerSandbox(image="img")))
    text = provider.instructions()
    assert "run_command runs in a container where only the workspace is writable" in text
    assert "there is no network" in text


# -- paths that run code later, and write rules on files a command creates ---------------


def _owned_like_the_workspace(root: Path) -> None:
    if os.geteuid() == 0:
        for path in [root, *root.rglob("*")]:
            os.chown(path, 65534, 65534, follow_symlinks=False)


async def test_a_container_command_cannot_plant_a_repository(engine, tmp_path):
    scope = workspace(tmp_path, policy="deny_outside")
    make_repository(scope.real_root / "old")
    _owned_like_the_workspace(scope.real_root)
    config = (scope.real_root / "old" / ".git" / "config").read_text()
    tool = RunCommand(scope, container=box(engine))
    try:
        at_root = await command(tool, PLANT_REPOSITORY)
        nested = await command(tool, PLANT_NESTED)
        existing = await command(tool, REPLANT_CONFIG.replace("sub/", "old/") + "; true")
        settings = await command(tool, "mkdir -p d/.vscode && echo '{}' > d/.vscode/tasks.json")
    finally:
        await tool.aclose()
    root = scope.real_root
    assert at_root.value["exit_code"] != 0  # the root's .git is a read-only stand-in
    assert "'sub/.git'" in (nested.error or "") and "moved out" in (nested.error or "")
    assert "Read-only file system" in existing.value["stderr"]
    assert (root / "old" / ".git" / "config").read_text() == config
    assert "'d/.vscode'" in (settings.error or "")
    for folder in (root, root / "sub", root / "old"):
        assert not git_runs_code(folder)
    assert sorted(p.name for p in root.iterdir()) == [
        "d",
        "fixed.txt",
        "in.txt",
        "old",
        "secrets",
        "sub",
    ]


async def test_container_commands_keep_write_rules_on_files_they_create(engine, tmp_path):
    scope = workspace(
        tmp_path,
        policy="deny_outside",
        rules=[{"path": ".github/workflows/**", "write": "deny"}],
    )
    tool = RunCommand(scope, container=box(engine))
    asking = RunCommand(
        workspace(_made(tmp_path / "other"), rules=[{"path": "*.lock", "write": "approve"}]),
        container=box(engine),
    )
    try:
        denied = await command(
            tool, "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml"
        )
        held = await command(asking, "echo y > y.lock")
    finally:
        await tool.aclose()
        await asking.aclose()
    assert "'.github/workflows/x.yml'" in (denied.error or "")
    assert not (scope.real_root / ".github" / "workflows" / "x.yml").exists()
    assert asking.approval_required({"command": "echo y > y.lock"})
    assert "needs a person's approval" in (held.error or "")
    assert not (tmp_path / "other" / "ws" / "y.lock").exists()


def _made(folder: Path) -> Path:
    folder.mkdir()
    return folder
