"""run_command's sandbox attacked as a model would: what it may see, send, keep running,
plant in `.git`, and how much it may take. Every test needs bubblewrap (the test command
installs it) and fails without it."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from raf.core.tools import ToolContext, ToolResult
from raf.tools.files import WriteFile
from raf.tools.sandbox import ProcessLimits
from raf.tools.shell import RunCommand
from raf.tools.workspace import WorkspaceScope
from tests.tools.bounded import require_bubblewrap


def _scope(tmp_path: Path, policy: str) -> WorkspaceScope:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return WorkspaceScope(root, policy=policy)


async def run(tool: Any, **args: Any) -> ToolResult:
    result: ToolResult = await tool.invoke(args, ToolContext())
    return result


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    require_bubblewrap()


@pytest.mark.parametrize("policy", ["deny", "approve"])
@pytest.mark.parametrize("target", ["/etc/shadow", "/etc/gshadow", "/etc/ssh"])
async def test_secrets_under_etc_are_hidden(tmp_path: Path, policy: str, target: str) -> None:
    command = f"cat {target} {target}/* 2>/dev/null; true"
    result = await run(RunCommand(_scope(tmp_path, policy)), command=command)
    assert result.value["sandbox"] == "bubblewrap"
    assert result.value["stdout"] == ""


@pytest.mark.parametrize("policy", ["deny", "approve"])
@pytest.mark.parametrize("target", ["SIBLING", "/opt", "/var/lib", "/root", "/home", "/srv"])
async def test_only_the_toolchain_and_workspace_are_shown(
    tmp_path: Path, policy: str, target: str
) -> None:
    sibling = tmp_path / "other-project"
    sibling.mkdir()
    (sibling / "key.txt").write_text("SIBLING-SECRET\n")
    path = str(sibling) if target == "SIBLING" else target
    command = f"ls -A {path} 2>/dev/null; cat {path}/* 2>/dev/null; true"
    result = await run(RunCommand(_scope(tmp_path, policy)), command=command)
    assert result.value["sandbox"] == "bubblewrap"
    assert result.value["stdout"] == ""


async def test_the_toolchain_still_works(tmp_path: Path) -> None:
    result = await run(
        RunCommand(_scope(tmp_path, "deny")), command="python3 -c 'print(6*7)'; ls /usr/bin/env"
    )
    assert result.value["stdout"].split() == ["42", "/usr/bin/env"]


@pytest.mark.parametrize("policy", ["deny", "approve"])
async def test_no_network_unless_allowed(tmp_path: Path, policy: str) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = (
        "python3 -c 'import socket,sys; s=socket.socket(); s.settimeout(3); "
        f'sys.exit(7 if s.connect_ex(("127.0.0.1", {port})) else 0)\''
    )
    try:
        closed = await run(RunCommand(_scope(tmp_path, policy)), command=probe)
        assert closed.value["exit_code"] == 7
        opened = await run(RunCommand(_scope(tmp_path, policy), network=True), command=probe)
        assert opened.value["exit_code"] == 0
    finally:
        server.close()


SECRETS = {
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountKey=zz",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/X",
    "MYSQL_PWD": "hunter2",
    "DB_PASS": "hunter3",
    "CI_JOB_JWT": "eyJhbGciOi",
    "DATABASE": "postgresql://u:pa/ss@h",
    "SOMETHING_ELSE": "not-named",
}


@pytest.mark.parametrize("policy", ["deny", "approve", "allow"])
@pytest.mark.parametrize("name", sorted(SECRETS))
async def test_the_environment_is_an_allow_list(tmp_path: Path, policy: str, name: str) -> None:
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **SECRETS}
    tool = RunCommand(_scope(tmp_path, policy), env=env)
    result = await run(tool, command="env")
    out = result.value["stdout"]
    assert name not in out and SECRETS[name] not in out
    assert "LANG=C.UTF-8" in out


async def test_allow_all_shows_nothing_of_raf_through_proc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = "RAF-PARENT-" + secrets.token_hex(6)
    monkeypatch.setenv("RAF_TEST_PARENT_SECRET", marker)
    result = await run(
        RunCommand(_scope(tmp_path, "allow")),
        command="cat /proc/$PPID/environ /proc/1/environ 2>/dev/null | tr '\\0' '\\n'; "
        "ls /proc | grep -c '^[0-9]'",
    )
    out = result.value["stdout"]
    assert marker not in out
    assert int(out.split()[-1]) < 10  # its own PID namespace: only its few processes


async def test_a_setsid_daemon_dies_with_the_call(tmp_path: Path) -> None:
    marker = "rafdaemon" + secrets.token_hex(4)
    scope = _scope(tmp_path, "allow")
    (scope.real_root / f"{marker}.sh").write_text("sleep 120\n")
    result = await run(
        RunCommand(scope), command=f"setsid sh {marker}.sh >/dev/null 2>&1 < /dev/null & echo ok"
    )
    assert result.value["stdout"].strip() == "ok"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(marker):
        time.sleep(0.1)
    assert not _running(marker)


def _running(marker: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def _repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    return root / ".git"


@pytest.mark.parametrize(
    "command",
    [
        "git config core.fsmonitor 'touch PWNED'",
        "echo '[core] fsmonitor = touch PWNED' >> .git/config",
        "printf 'touch PWNED' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
        "mv .git/hooks .git/h2; mkdir .git/hooks; echo x > .git/hooks/post-checkout",
        "rm -rf .git/hooks",
        "mv .git .git-old && git init -q . && git config core.fsmonitor 'touch PWNED'",
        "rm -rf .git; git init -q . && git config core.fsmonitor 'touch PWNED'",
    ],
)
async def test_git_config_and_hooks_are_read_only(tmp_path: Path, command: str) -> None:
    scope = _scope(tmp_path, "deny")
    git = _repo(scope.real_root)
    config = (git / "config").read_text()
    hooks = sorted(p.name for p in (git / "hooks").iterdir())
    await run(RunCommand(scope), command=f"{command}; true")
    assert (git / "config").read_text() == config
    assert "fsmonitor" not in (git / "config").read_text()
    assert not (scope.real_root / ".git-old").exists()
    assert sorted(p.name for p in (git / "hooks").iterdir()) == hooks
    if not command.startswith("rm -rf .git;"):  # that one deletes the history it can
        done = await run(RunCommand(scope), command="echo data > tracked.txt; git add tracked.txt")
        assert done.value["exit_code"] == 0  # the rest of the repository stays usable


@pytest.mark.parametrize(
    "path", [".git/config", ".git/hooks/pre-commit", "sub/.git/config", ".GIT/config"]
)
@pytest.mark.parametrize("policy", ["deny", "allow"])
async def test_write_file_never_changes_git_config_or_hooks(
    tmp_path: Path, path: str, policy: str
) -> None:
    scope = _scope(tmp_path, policy)
    (scope.real_root / "sub").mkdir()
    _repo(scope.real_root)
    _repo(scope.real_root / "sub")
    result = await run(WriteFile(scope), path=path, content="[core]\n\tfsmonitor = touch PWNED\n")
    assert "never change them" in (result.error or "")


@pytest.mark.parametrize("policy", ["deny", "allow"])
async def test_file_tools_cannot_replace_the_git_folder(tmp_path: Path, policy: str) -> None:
    """Removing .git and moving a folder with a planted config into its place is refused."""
    from raf.tools.files import MoveFile, RemovePath

    scope = _scope(tmp_path, policy)
    _repo(scope.real_root)
    (scope.real_root / "planted").mkdir()
    (scope.real_root / "planted" / "config").write_text("[core]\n\tfsmonitor = touch PWNED\n")
    removed = await run(RemovePath(scope), path=".git", recursive=True)
    assert "never change them" in (removed.error or "")
    moved = await run(MoveFile(scope), source=".git", destination="old-git")
    assert "never change them" in (moved.error or "")
    into = await run(MoveFile(scope), source="planted", destination="sub/.git")
    assert "never change them" in (into.error or "")
    assert (scope.real_root / ".git" / "HEAD").exists()


async def test_tmp_and_shm_are_size_capped(tmp_path: Path) -> None:
    tool = RunCommand(_scope(tmp_path, "deny"))
    for where in ("/tmp", "/dev/shm"):
        result = await run(tool, command=f"head -c 300M /dev/zero > {where}/fill; echo $?")
        assert "No space left" in result.value["stderr"], where


async def test_rlimits_bound_memory_files_and_processes(tmp_path: Path) -> None:
    limits = ProcessLimits(memory_bytes=256 << 20, file_bytes=1 << 20, processes=None)
    tool = RunCommand(_scope(tmp_path, "deny"), process_limits=limits)
    memory = await run(tool, command="python3 -c 'x = bytearray(512 << 20)'; echo $?")
    assert "MemoryError" in memory.value["stderr"]
    big = await run(tool, command="head -c 2M /dev/zero > big; echo $?")
    assert (tmp_path / "ws" / "big").stat().st_size <= 1 << 20
    assert big.value["stdout"].strip() != "0"


async def test_many_background_processes_die_with_the_call(tmp_path: Path) -> None:
    """RLIMIT_NPROC never binds root (the kernel exempts it), so for root the PID namespace
    is the bound: every process a command leaves behind is gone when the call returns."""
    marker = "rafmany" + secrets.token_hex(4)
    scope = _scope(tmp_path, "deny")
    (scope.real_root / f"{marker}.sh").write_text("sleep 60\n")
    command = f"for i in $(seq 100); do sh {marker}.sh & done; echo started"
    result = await run(RunCommand(scope), command=command, timeout_s=30)
    assert result.value["stdout"].strip() == "started"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(marker):
        time.sleep(0.1)
    assert not _running(marker)


async def test_a_call_may_ask_for_the_network(tmp_path: Path) -> None:
    """Under approve the call's `network: true` waits for a human; under deny it is refused;
    a tool configured with network=False never gives it."""
    from raf.core.call_approval import RunApprovals
    from raf.core.options import ToolApprovalResponse
    from raf.core.run_context import RunContext

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = (
        "python3 -c 'import socket,sys; s=socket.socket(); s.settimeout(3); "
        f'sys.exit(7 if s.connect_ex(("127.0.0.1", {port})) else 0)\''
    )
    args = {"command": probe, "network": True}
    try:
        asking = RunCommand(_scope(tmp_path, "approve"))
        assert asking.approval_required(args)
        assert not asking.approval_required({"command": probe})
        unapproved = await asking.invoke(args, ToolContext())
        assert "needs a human's approval" in (unapproved.error or "")
        approvals = RunApprovals(responses=[ToolApprovalResponse(call_id="c1", approved=True)])
        context = ToolContext(call_id="c1", run=RunContext(approvals=approvals))
        approved = await asking.invoke(args, context)
        assert approved.value["exit_code"] == 0
        denied = await RunCommand(_scope(tmp_path, "deny")).invoke(args, ToolContext())
        assert "gives commands no network" in (denied.error or "")
        off = RunCommand(_scope(tmp_path, "allow"), network=False)
        assert "configured without network" in ((await off.invoke(args, ToolContext())).error or "")
    finally:
        server.close()


async def test_the_pid_namespace_alone_keeps_what_the_caller_could_do(tmp_path: Path) -> None:
    """Under allow_all the PID namespace is hygiene, not confinement: a root caller's
    command keeps its capabilities (it may install packages), and writes where it likes."""
    target = tmp_path / "outside.txt"
    result = await run(
        RunCommand(_scope(tmp_path, "allow")),
        command=f"grep CapEff /proc/self/status; echo out > {target}; echo $$",
    )
    assert result.value["sandbox"] == "pid-namespace"
    lines = result.value["stdout"].split("\n")
    if os.geteuid() == 0:
        assert lines[0] != "CapEff:\t0000000000000000"
    assert target.read_text() == "out\n"
    assert int(lines[1]) < 10  # a low PID: its own namespace


async def test_a_command_cannot_hard_link_a_visible_system_file(tmp_path: Path) -> None:
    """The workspace is its own mount in the sandbox, so a hard link to a file outside it
    (one the file tools would then have to refuse) cannot be made."""
    scope = _scope(tmp_path, "deny")
    result = await run(RunCommand(scope), command="ln /usr/bin/env linked; echo $?")
    assert result.value["stdout"].strip() != "0"
    assert not (scope.real_root / "linked").exists()
