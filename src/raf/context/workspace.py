"""WorkspaceContextProvider: binds scope tools to a workspace, asks approval only for
calls that leave it (APPROVE_OUTSIDE), and tells the model where it works."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raf.core.context import BaseContextProvider, ContextResult
from raf.core.errors import ToolDefinitionError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession
from raf.core.tools import ApprovalRequiredTool, Tool
from raf.tools.shell import has_restricting_rules
from raf.tools.workspace import ScopePolicy, ScopeTool, WorkspaceScope, is_scope_tool


class OutsideApprovalTool(ApprovalRequiredTool):
    """Step 2 under APPROVE_OUTSIDE: an `ApprovalRequiredTool` that asks only when the
    call's paths leave the root; the inner scoped tool still refuses an outside path that
    was not approved."""

    __slots__ = ()

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return self.inner.approval_required(arguments)

    def __repr__(self) -> str:
        return f"OutsideApprovalTool({self.inner!r})"


class WorkspaceContextProvider(BaseContextProvider):
    """A context provider (kind "workspace") that owns the scope tools of one workspace."""

    kind = "workspace"

    def __init__(self, scope: WorkspaceScope, *, name: str | None = None) -> None:
        self.scope = scope
        self.name = name or scope.name
        self._tools: list[Tool] = []

    @property
    def tools(self) -> list[Tool]:
        """The scoped (and, under APPROVE_OUTSIDE, wrapped) tools, in the order added."""
        return list(self._tools)

    def add_tool(self, tool: ScopeTool | Tool) -> Tool:
        """Bind `tool` to the scope (step 1) and wrap it for per-call approval (step 2)."""
        if not is_scope_tool(tool):
            raise ToolDefinitionError(
                f"{tool!r} is not a ScopeTool (it has no create_scoped(scope)); register it "
                "on the agent directly instead of on workspace "
                f"{self.name!r}"
            )
        if any(t.name == tool.name for t in self._tools):
            raise ToolDefinitionError(
                f"workspace {self.name!r} already has a tool named {tool.name!r}"
            )
        scoped: Tool = tool.create_scoped(self.scope)  # type: ignore[union-attr]
        if self.scope.policy is ScopePolicy.APPROVE_OUTSIDE:
            scoped = OutsideApprovalTool(scoped)
        self._tools.append(scoped)
        return scoped

    def add_tools(self, tools: Sequence[Tool]) -> None:
        for tool in tools:
            self.add_tool(tool)

    def instructions(self) -> str:
        text = self.scope.describe()
        if self._tools:
            text += " Tools bound to this workspace: " + ", ".join(t.name for t in self._tools)
            text += "."
        command = next((t for t in self._tools if t.name == "run_command"), None)
        if command is not None:
            network = bool(getattr(command, "network", True))
            box = getattr(command, "container", None)
            if box is not None:
                network = network and bool(getattr(box, "network", False))
                text += " run_command runs in a container where only the workspace is writable" + (
                    "." if network else " and there is no network."
                )
            elif self.scope.policy is ScopePolicy.ALLOW_ALL:
                limits = []
                if has_restricting_rules(self.scope):
                    limits.append("paths the rules restrict are hidden or read-only")
                if not network:
                    limits.append("there is no network")
                text += (
                    " run_command runs in a light sandbox: " + " and ".join(limits) + "."
                    if limits
                    else " run_command runs without a sandbox."
                )
            else:
                text += (
                    " run_command runs in a sandbox where only the workspace is writable"
                    " (or, where no sandbox works, each command waits for approval)."
                )
        return text

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        return ContextResult(instructions=self.instructions(), tools=list(self._tools))

    def __repr__(self) -> str:
        return f"<WorkspaceContextProvider {self.name!r} {self.scope!r}>"
