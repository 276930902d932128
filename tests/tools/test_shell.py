"""run_command: workspace cwd, timeouts that kill the group, output cap, scrubbed secrets,
the bubblewrap sandbox under deny/approve, and approval where no sandbox works."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

from raf.core.call_approval import RunApprovals
from raf.core.options import ToolApprovalResponse
from raf.core.run_context import RunContext
from raf.core.tools import ToolContext, ToolResult
from raf.tools.sandbox import SandboxKind, scrub_environment
from raf.tools.shell import RunCommand
from raf.tools.workspace import WorkspaceScope
from tests.tools.bounded import require_bubblewrap


def _ws(tmp_path: Path, policy: str) -> WorkspaceScope:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return WorkspaceScope(root, policy=policy)


async def run(tool: RunCommand, context: ToolContext | None = None, **args: Any) -> ToolResult:
    return await tool.invoke(args, context or ToolContext())


def _approved(call_id: str) -> ToolContext:
    approvals = RunApprovals(responses=[ToolApprovalResponse(call_id=call_id, approved=True)])
    return ToolContext(call_id=call_id, run=RunContext(approvals=approvals))


async def test_runs_in_the_workspace(tmp_path: Path):
    scope = _ws(tmp_path, "read")
    (scope.real_root / "sub").mkdir()
    result = await run(RunCommand(scope), command="pwd; echo err >&2; exit 4", cwd="sub")
    assert result.value["stdout"].strip() == str(scope.real_root / "sub")
    assert result.value["stderr"] == "err\n" and result.value["exit_code"] == 4
    require_bubblewrap()
    assert result.value["sandbox"] == "pid-namespace"


async def test_timeout_kills_the_whole_process_group(tmp_path: Path):
    marker = "rafsleep" + secrets.token_hex(4)
    scope = _ws(tmp_path, "read")
    script = scope.real_root / f"{marker}.sh"
    script.write_text("sleep 60\n")
    start = time.monotonic()
    result = await run(
        RunCommand(scope), command=f"sh {marker}.sh & sh {marker}.sh; wait", timeout_s=1
    )
    assert time.monotonic() - start < 10
    assert "timed out after 1s" in (result.error or "")
    time.sleep(0.3)
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            left.append(pid)
    assert left == []


async def test_output_cap(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "read"), output_cap=100)
    result = await run(tool, command="yes | head -c 100000")
    assert len(result.value["stdout"]) == 100
    assert "99900 stdout" in result.value["note"]


async def test_secrets_are_scrubbed(tmp_path: Path):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "OPENAI_API_KEY": "sk-1",
        "GITHUB_TOKEN": "t",
        "DB_PASSWORD": "p",
        "MY_SECRET_THING": "s",
        "AWS_SECRET_ACCESS_KEY": "a",
        "ALLOWED_KEY": "ok",
        "PLAIN": "plain",
    }
    tool = RunCommand(_ws(tmp_path, "read"), env=env, allow_env=["ALLOWED_KEY"])
    result = await run(tool, command="env")
    out = result.value["stdout"]
    assert "ALLOWED_KEY=ok" in out and "PATH=" in out
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MY_SECRET", "AWS_SECRET"):
        assert name not in out
    assert "PLAIN" not in out  # an allow-list: what is not named is not passed
    assert "HOME" in scrub_environment({"HOME": "/h", "X_KEY": "k"})
    urls = {
        "DATABASE_URL": "postgres://app:hunter2@db:5432/x",
        "REDIS_URL": "redis://:pw@cache:6379/0",
        "SENTRY_DSN": "https://abc@o1.ingest.sentry.io/1",
        "DOCS_URL": "https://example.org/docs",
    }
    assert scrub_environment(urls) == {"DOCS_URL": "https://example.org/docs"}


async def test_deny_outside_sandbox_only_the_workspace_is_writable(tmp_path: Path):
    scope = _ws(tmp_path, "deny")
    tool = RunCommand(scope)
    outside = Path("/var/tmp") / ("raf-escape-" + secrets.token_hex(4))
    sibling = tmp_path / "sibling.txt"
    sibling.write_text("visible?\n")
    command = (
        f"echo in > inside.txt; echo out > {outside}; echo out > {sibling}; "
        f"cat {sibling}; cat /root/.profile; echo x > /usr/raf-escape; true"
    )
    require_bubblewrap()  # without it every command waits for approval (tested apart)
    result = await run(tool, command=command)
    assert result.value["sandbox"] == "bubblewrap"
    assert (scope.real_root / "inside.txt").read_text() == "in\n"
    assert not outside.exists()
    assert sibling.read_text() == "visible?\n"
    assert "visible?" not in result.value["stdout"]  # /tmp is private in the sandbox
    assert "Read-only file system" in result.value["stderr"]
    assert not Path("/usr/raf-escape").exists()
    assert not tool.approval_required({"command": "ls"})
    assert not tool.requires_approval


async def test_the_sandbox_holds_when_raf_runs_as_root(tmp_path: Path):
    """bubblewrap keeps every capability of a root caller unless told otherwise: a command
    could then remount / read-write and write anywhere. The sandbox drops them all."""
    require_bubblewrap()
    scope = _ws(tmp_path, "deny")
    outside = Path("/var/tmp") / ("raf-escape-" + secrets.token_hex(4))
    command = (
        "grep CapEff /proc/self/status; mount -o remount,rw / 2>/dev/null; "
        f"echo out > {outside}; true"
    )
    try:
        result = await run(RunCommand(scope), command=command)
        assert result.value["sandbox"] == "bubblewrap"
        assert "CapEff:\t0000000000000000" in result.value["stdout"]
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)


async def test_sockets_under_run_are_out_of_reach(tmp_path: Path):
    """A read-only mount does not stop connect() on a Unix socket, and /run holds the ones
    that command the host (systemd, docker, dbus): the sandbox hides /run."""
    import socket

    require_bubblewrap()
    assert os.access("/run", os.W_OK), "the test needs a writable /run for its socket"
    path = Path("/run") / f"raf-test-{secrets.token_hex(4)}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.setblocking(False)
    try:
        probe = (
            "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
            f'sys.exit(7 if s.connect_ex("{path}") else 0)\''
        )
        result = await run(RunCommand(_ws(tmp_path, "deny")), command=probe)
        assert result.value["sandbox"] == "bubblewrap"
        assert result.value["exit_code"] == 7, result.value
    finally:
        server.close()
        path.unlink(missing_ok=True)


def test_a_resolv_conf_outside_etc_stays_visible_with_network(tmp_path: Path, monkeypatch: Any):
    from raf.tools import sandbox

    stub = tmp_path / "stub-resolv.conf"
    stub.write_text("nameserver 127.0.0.53\n")
    monkeypatch.setattr(sandbox, "_resolver_file", lambda: stub)
    argv = sandbox.bwrap_argv(writable=[tmp_path / "ws"], cwd=tmp_path / "ws", network=True)
    assert "--ro-bind " + f"{stub} {stub}" in " ".join(argv)
    offline = sandbox.bwrap_argv(writable=[tmp_path / "ws"], cwd=tmp_path / "ws", network=False)
    assert str(stub) not in offline and "/run" not in offline


async def test_path_rules_hold_inside_the_sandbox(tmp_path: Path):
    """A deny rule on reading secrets/** must not be sidestepped with `cat` in run_command;
    a write-deny rule keeps the file read-only there."""
    require_bubblewrap()
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "k.txt").write_text("TOP-SECRET\n")
    (root / "notes").mkdir()
    (root / "notes" / "a.key").write_text("KEY-MATERIAL\n")
    (root / "locked.txt").write_text("keep\n")
    (root / "open.txt").write_text("open\n")
    (root / "alias.key").symlink_to("open.txt")  # a link is judged by its target
    rules = [
        {"path": "secrets/**", "read": "deny"},
        {"path": "**/*.key", "read": "deny"},
        {"path": "locked.txt", "write": "deny", "delete": "deny"},
    ]
    scope = WorkspaceScope(root, policy="deny", rules=rules)
    command = (
        "cat secrets/k.txt notes/a.key; ln -s secrets/k.txt s; cat s; cat alias.key; "
        "echo changed > locked.txt; rm -f locked.txt; echo new > fresh.txt; "
        "mv secrets public; mv notes n2; true"
    )
    result = await run(RunCommand(scope), command=command)
    assert result.value["sandbox"] == "bubblewrap"
    out = result.value["stdout"]
    assert "TOP-SECRET" not in out and "KEY-MATERIAL" not in out
    assert "open" in out
    assert (root / "locked.txt").read_text() == "keep\n"
    assert (root / "fresh.txt").read_text() == "new\n"
    assert (root / "secrets" / "k.txt").read_text() == "TOP-SECRET\n"
    assert (root / "notes" / "a.key").exists()  # a covered file's folders stay in place


async def test_allow_all_with_rules_still_hides_what_they_deny(tmp_path: Path):
    """allow_all runs commands unconfined, but a read: deny rule must still hold for them."""
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "k.txt").write_text("TOP-SECRET\n")
    outside = tmp_path / "outside.txt"
    scope = WorkspaceScope(root, policy="allow", rules=[{"path": "secrets/**", "read": "deny"}])
    tool = RunCommand(scope)
    require_bubblewrap()
    result = await run(tool, command=f"cat secrets/k.txt; echo out > {outside}; true")
    assert result.value["sandbox"] == "bubblewrap"
    assert "TOP-SECRET" not in result.value["stdout"]
    assert outside.read_text() == "out\n"  # allow_all: writing outside still works
    assert not tool.requires_approval
    plain = await run(RunCommand(WorkspaceScope(root, policy="allow")), command="true")
    assert plain.value["sandbox"] == "pid-namespace"
    guarded = tmp_path / "guarded"
    guarded.mkdir()
    (guarded / "conf").write_text("original\n")
    rule = {"path": f"{guarded}/**", "write": "deny"}
    locked = WorkspaceScope(root, policy="allow", rules=[rule])
    await run(RunCommand(locked), command=f"echo changed > {guarded}/conf; rm -f {guarded}/conf")
    assert (guarded / "conf").read_text() == "original\n"


async def test_network_off_holds_under_allow_all(tmp_path: Path):
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe = (
        "python3 -c 'import socket,sys; s=socket.socket(); s.settimeout(3); "
        f'sys.exit(7 if s.connect_ex(("127.0.0.1", {port})) else 0)\''
    )
    try:
        require_bubblewrap()
        tool = RunCommand(_ws(tmp_path, "allow"), network=False)
        result = await run(tool, command=probe)
        assert result.value["sandbox"] == "bubblewrap" and result.value["exit_code"] == 7
        online = await run(RunCommand(_ws(tmp_path, "allow")), command=probe)
        assert online.value["sandbox"] == "pid-namespace" and online.value["exit_code"] == 0
    finally:
        server.close()


async def test_absolute_read_rules_are_covered_or_need_approval(tmp_path: Path):
    from raf.tools.command_guard import rule_masks

    root = tmp_path / "ws"
    root.mkdir()
    private = tmp_path / "private"
    private.mkdir()
    covered = WorkspaceScope(root, policy="deny", rules=[{"path": f"{private}/**", "read": "deny"}])
    assert rule_masks(covered, False) == ["--tmpfs", str(private)]
    anywhere = WorkspaceScope(root, policy="deny", rules=[{"path": "/**/id_rsa", "read": "deny"}])
    assert rule_masks(anywhere, False) is None
    require_bubblewrap()  # with it, a rule it cannot mask still asks a human
    refused = await run(RunCommand(anywhere), command="true")
    assert "approval" in (refused.error or "")
    asked = WorkspaceScope(root, policy="deny", rules=[{"path": "x/**", "read": "approve"}])
    (root / "x").mkdir()
    (root / "x" / "f").write_text("f")
    x = str(root / "x")
    assert rule_masks(asked, False) == ["--bind", x, x, "--ro-bind", "/dev/null", f"{x}/f"]
    assert rule_masks(asked, True) == []


async def test_deny_outside_refuses_running_outside(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "deny"))
    refused = await run(tool, command="true", outside_workspace=True)
    assert "forbids" in (refused.error or "")
    cwd = await run(tool, command="true", cwd="..")
    assert "OutsideScope" in (cwd.error or "")


async def test_approve_outside_asks_only_to_leave_the_sandbox(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "approve"), sandbox=SandboxKind.BWRAP)
    assert tool.requires_approval
    assert not tool.approval_required({"command": "make"})
    assert tool.approval_required({"command": "make", "outside_workspace": True})
    assert tool.approval_required({"command": "ls", "cwd": "/etc"})
    refused = await run(tool, command="true", outside_workspace=True)
    assert "needs approval" in (refused.error or "")
    target = tmp_path / "approved.txt"
    context = _approved("c1")
    done = await run(tool, context, command=f"echo yes > {target}", outside_workspace=True)
    assert done.value["sandbox"] == "pid-namespace" and target.read_text() == "yes\n"


async def test_without_a_sandbox_every_command_needs_approval(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "deny"), sandbox=SandboxKind.NONE)
    assert tool.requires_approval
    assert tool.approval_required({"command": "ls"})
    refused = await run(tool, command="ls")
    assert "no OS sandbox" in (refused.error or "")
    ran = await run(tool, _approved("c7"), command="echo ok")
    assert ran.value["stdout"] == "ok\n" and ran.value["sandbox"] == "none"


async def test_allow_all_needs_no_approval(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "allow"))
    assert not tool.requires_approval
    assert not tool.approval_required({"command": "rm -rf /tmp/x", "cwd": "/"})


async def test_a_process_that_leaves_the_group_cannot_hang_the_call(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "read"))
    start = time.monotonic()
    result = await run(tool, command="setsid sleep 6 & sleep 30", timeout_s=1)
    assert "timed out" in (result.error or "")
    assert time.monotonic() - start < 6


async def test_a_command_reads_its_call_s_idempotency_key(tmp_path: Path):
    tool = RunCommand(_ws(tmp_path, "read"))
    context = ToolContext(idempotency_key="raf-0123456789abcdef")
    result = await run(tool, context, command='echo "key=$RAF_IDEMPOTENCY_KEY"')
    assert result.value["stdout"] == "key=raf-0123456789abcdef\n"
    bare = await run(tool, command='echo "key=${RAF_IDEMPOTENCY_KEY-unset}"')
    assert bare.value["stdout"] == "key=unset\n"
