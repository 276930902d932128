"""run_command under bubblewrap cannot plant what a tool on the user's machine runs later
(a new `.git`, at the root or below it, a nested repository's config, .envrc, editor
settings), and the workspace's write rules hold for files a command would create; a real
`git status` afterwards runs nothing. Needs bubblewrap (the test command installs it)."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raf.core.call_approval import RunApprovals
from raf.core.options import ToolApprovalResponse
from raf.core.run_context import RunContext
from raf.core.tools import ToolContext, ToolResult
from raf.tools.command_guard import CommandGuard
from raf.tools.files import WriteFile
from raf.tools.scope.runs_later import runs_code_later
from raf.tools.shell import RunCommand
from raf.tools.workspace import WorkspaceScope
from tests.tools.bounded import require_bubblewrap
from tests.tools.planting import (
    INIT_NESTED,
    PLANT_NESTED,
    PLANT_REPOSITORY,
    REPLANT_CONFIG,
    git_runs_code,
    make_repository,
)


@pytest.fixture(autouse=True)
def own_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What the guard moves out of a workspace goes to a new folder of the system's
    temporary folder: here the test's own, so that a run of the suite leaves none in /tmp."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield


async def run(tool: Any, context: ToolContext | None = None, **args: Any) -> ToolResult:
    result: ToolResult = await tool.invoke(args, context or ToolContext())
    return result


def approved(call_id: str) -> ToolContext:
    approvals = RunApprovals(responses=[ToolApprovalResponse(call_id=call_id, approved=True)])
    return ToolContext(call_id=call_id, run=RunContext(approvals=approvals))


def scope_at(tmp_path: Path, policy: str = "deny", **kwargs: Any) -> WorkspaceScope:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return WorkspaceScope(root, policy=policy, **kwargs)


def test_the_plant_runs_when_nothing_stops_it(tmp_path: Path) -> None:
    """The control: the same commands run on the host do make git run FLAG."""
    for command, where in ((PLANT_REPOSITORY, "."), (PLANT_NESTED, "sub"), (INIT_NESTED, "new")):
        folder = tmp_path / where.replace("/", "_") / "ws"
        folder.mkdir(parents=True)
        subprocess.run(["sh", "-c", command], cwd=folder, check=True, timeout=60)
        assert git_runs_code(folder / where), command


@pytest.mark.parametrize("policy", ["deny", "approve", "allow"])
@pytest.mark.parametrize("command", [PLANT_REPOSITORY, PLANT_NESTED, INIT_NESTED])
async def test_a_command_cannot_make_a_folder_a_repository_that_runs_code(
    tmp_path: Path, policy: str, command: str
) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path, policy)
    tool = RunCommand(scope, network=False)  # allow_all with network off runs sandboxed
    result = await run(tool, command=command)
    if command == PLANT_REPOSITORY:  # held by a mount while it runs, not found afterwards
        assert not result.is_error and result.value["exit_code"] != 0
        assert "Read-only file system" in result.value["stderr"]
    elif result.is_error:
        assert "no command may write" in (result.error or "")
        assert "moved out of the workspace" in (result.error or "")
    else:
        assert result.value["exit_code"] != 0  # the root's .git is a read-only stand-in
    root = scope.real_root
    for folder in (root, root / "sub", root / "new"):
        if folder.is_dir():
            assert not git_runs_code(folder)
        assert not (folder / ".git" / "config").exists()
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == []


async def test_a_planted_nested_repository_is_moved_out_whole(tmp_path: Path) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path)
    make_repository(scope.real_root)
    result = await run(RunCommand(scope), command=f"{PLANT_NESTED} && echo done")
    error = result.error or ""
    assert "'sub/.git'" in error and "done" in error  # named once, with the command's output
    quarantine = Path(error.split("moved out of the workspace, to ")[1].split(".")[0])
    assert (quarantine / "sub" / ".git" / "config").is_file()  # nothing is lost
    assert (scope.real_root / "sub").is_dir() and not (scope.real_root / "sub" / ".git").exists()
    assert not git_runs_code(scope.real_root / "sub")
    assert not git_runs_code(scope.real_root)


async def test_an_existing_nested_repositorys_config_stays_as_it_was(tmp_path: Path) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path)
    make_repository(scope.real_root)
    make_repository(scope.real_root / "sub")
    config = (scope.real_root / "sub" / ".git" / "config").read_text()
    for command in (
        REPLANT_CONFIG,
        "printf '#!/bin/sh\\ntouch FLAG\\n' > sub/.git/hooks/pre-commit",
        "rm -rf sub/.git && " + PLANT_NESTED,
        "mv sub/.git sub/old-git && " + PLANT_NESTED,
    ):
        await run(RunCommand(scope), command=f"{command}; true")
        assert (scope.real_root / "sub" / ".git" / "config").read_text() == config, command
        assert not (scope.real_root / "sub" / ".git" / "hooks" / "pre-commit").exists()
        assert not git_runs_code(scope.real_root / "sub")
    done = await run(RunCommand(scope), command="echo x > sub/f && git -C sub add f")
    assert done.value["exit_code"] == 0  # the nested repository stays usable


@pytest.mark.parametrize(
    "command",
    [
        "echo 'touch FLAG' > .envrc",
        "mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
        "mkdir -p .idea && echo x > .idea/workspace.xml",
        "mkdir -p .hg && printf '[hooks]\\nstatus = touch FLAG\\n' > .hg/hgrc",
        "mkdir -p deep/.vscode && echo '{}' > deep/.vscode/settings.json",
        "mkdir -p deep && echo 'touch FLAG' > deep/.envrc",
    ],
)
async def test_tool_settings_that_run_code_cannot_be_created(tmp_path: Path, command: str) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path)
    await run(RunCommand(scope), command=command)
    root = scope.real_root
    planted = [
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if runs_code_later(p.relative_to(root).as_posix())
    ]
    assert planted == []


async def test_the_stand_ins_leave_nothing_behind_and_are_shared(tmp_path: Path) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path)
    tool = RunCommand(scope)
    slow, quick = await asyncio.gather(
        run(tool, command="sleep 2; touch .envrc; echo $?"),
        run(tool, command="touch x"),
    )
    assert slow.value["stdout"].strip() != "0"  # the other command's end did not free it
    assert quick.value["exit_code"] == 0
    assert sorted(p.name for p in scope.real_root.iterdir()) == ["x"]


async def test_a_write_approve_rule_holds_every_command_for_a_person(tmp_path: Path) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path, rules=[{"path": "*.lock", "write": "approve"}])
    tool = RunCommand(scope)
    args = {"command": "echo y > y.lock"}
    assert tool.approval_required(args)
    assert "'*.lock'" in (tool.approval_reason(args) or "")
    refused = await tool.invoke(args, ToolContext())
    assert "needs a person's approval" in (refused.error or "")
    assert not (scope.real_root / "y.lock").exists()
    done = await tool.invoke(args, approved("c1"))
    assert done.value["exit_code"] == 0 and (scope.real_root / "y.lock").read_text() == "y\n"


async def test_a_write_approve_rule_is_checked_after_an_unapproved_run(tmp_path: Path) -> None:
    """Past the approval check (a guard used directly), a created file is moved out."""
    scope = scope_at(tmp_path, rules=[{"path": "*.lock", "write": "approve"}])
    guard = CommandGuard.prepare(scope, approved=False)
    assert guard is not None
    (scope.real_root / "y.lock").write_text("y")
    (scope.real_root / "ok.txt").write_text("ok")
    said = guard.finish() or ""
    assert "'y.lock'" in said and "'*.lock'" in said
    assert sorted(p.name for p in scope.real_root.iterdir()) == ["ok.txt"]


@pytest.mark.parametrize("policy", ["deny", "allow"])
async def test_a_write_deny_rule_holds_for_files_a_command_creates(
    tmp_path: Path, policy: str
) -> None:
    require_bubblewrap()
    scope = scope_at(tmp_path, policy, rules=[{"path": ".github/workflows/**", "write": "deny"}])
    result = await run(
        RunCommand(scope),
        command="mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml "
        "&& echo kept > notes.txt",
    )
    assert "'.github/workflows/x.yml'" in (result.error or "")
    assert not (scope.real_root / ".github" / "workflows" / "x.yml").exists()
    assert (scope.real_root / "notes.txt").read_text() == "kept\n"  # the rest stays
    (scope.real_root / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    again = await run(RunCommand(scope), command="echo evil >> .github/workflows/ci.yml; true")
    assert not again.is_error
    assert (scope.real_root / ".github" / "workflows" / "ci.yml").read_text() == "on: push\n"


@pytest.mark.parametrize(
    "path",
    ["sub/.git/HEAD", ".git/HEAD", "a/b/.hg/store/x", ".envrc", ".vscode/launch.json",
     "deep/.idea/workspace.xml", ".git/modules/x/config", ".git/worktrees/w/hooks/h"],
)  # fmt: skip
async def test_file_tools_refuse_the_same_paths(tmp_path: Path, path: str) -> None:
    scope = scope_at(tmp_path)
    result = await run(WriteFile(scope), path=path, content="x")
    assert "never change them" in (result.error or "")
    assert not any(p.name in (".git", ".hg") for p in scope.real_root.rglob("*"))


async def test_file_tools_still_write_a_repositorys_data(tmp_path: Path) -> None:
    scope = scope_at(tmp_path)
    make_repository(scope.real_root)
    done = await run(WriteFile(scope), path=".git/info/exclude", content="*.log\n")
    assert not done.is_error
    assert not runs_code_later(".git/objects/ab/cdef") and not runs_code_later("src/config")
