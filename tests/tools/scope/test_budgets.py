"""Every built-in tool declares what one call may spend (CallBudget), and the file tools
enforce wall time and result size in invoke."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from raf.core.tools import ToolContext, ToolResult
from raf.tools.code import CodeInterpreter
from raf.tools.files import CallBudget, ReadFile, file_tools
from raf.tools.scope.scoped_tool import ScopedTool
from raf.tools.workspace import WorkspaceScope


async def run(tool: Any, **args: Any) -> ToolResult:
    result: ToolResult = await tool.invoke(args, ToolContext())
    return result


def test_every_built_in_tool_declares_a_budget(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path, policy="deny")
    tools: list[Any] = [t.create_scoped(scope) for t in file_tools() if isinstance(t, ScopedTool)]
    tools.append(CodeInterpreter())
    assert len(tools) == 12
    for tool in tools:
        budget = tool.budget
        assert isinstance(budget, CallBudget), tool
        assert budget.wall_s > 0 and budget.memory_bytes > 0 and budget.output_bytes > 0


class _SlowRead(ReadFile):
    """A read that takes longer than its budget (as a huge, slow disk would)."""

    def run(self, scope: WorkspaceScope, args: Any, approved: bool) -> Any:
        time.sleep(1.0)
        return super().run(scope, args, approved)


async def test_a_call_past_its_wall_budget_answers_with_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    tool = _SlowRead(WorkspaceScope(tmp_path, policy="deny"), budget=CallBudget(wall_s=0.2))
    start = time.monotonic()
    result = await run(tool, path="a.txt")
    assert time.monotonic() - start < 0.9
    assert "ran past its budget of 0.2s" in (result.error or "")


async def test_a_result_over_the_output_budget_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 5000 + "\n")
    tool = ReadFile(WorkspaceScope(tmp_path, policy="deny"), budget=CallBudget(output_bytes=1000))
    result = await run(tool, path="big.txt")
    assert "over the call's budget of 1000" in (result.error or "")
    scoped = tool.create_scoped(WorkspaceScope(tmp_path, policy="deny"))
    assert scoped.budget.output_bytes == 1000
