"""Scripted members for orchestration tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raf import Agent, AgentBuilder
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.tools import ApprovalRequiredTool, BaseTool, ToolContext, ToolResult
from raf.testing import ScriptedChatClient
from raf.testing.scripted import ScriptItem


class Recorded(BaseTool):
    """A tool that records its calls and answers `<name> ran`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"the {name} tool"
        self.calls: list[dict[str, Any]] = []

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        self.calls.append(dict(arguments))
        return ToolResult.ok(f"{self.name} ran")


def member(
    name: str, *script: ScriptItem, description: str = "", approve: str | None = None
) -> tuple[Agent, ScriptedChatClient]:
    """An agent answering from `script`; with `approve`, a tool of that name needing approval."""
    client = ScriptedChatClient(list(script))
    builder = AgentBuilder(name).with_chat_client(client).with_description(description)
    if approve:
        builder.with_tool(ApprovalRequiredTool(Recorded(approve)))
    return builder.build(), client


def last_user_text(client: ScriptedChatClient, index: int = -1) -> str:
    """The text of the last message the model got in request `index`."""
    return client.requests[index].messages[-1].text


def texts(client: ScriptedChatClient, index: int = -1) -> list[tuple[str, str | None, str]]:
    """(role, author, text) of every message in request `index`."""
    return [(m.role.value, m.author_name, m.text) for m in client.requests[index].messages]


def approve(*call_ids: str, approved: bool = True) -> list[ToolApprovalResponse]:
    return [ToolApprovalResponse(call_id=c, approved=approved) for c in call_ids]


def approving(*call_ids: str) -> AgentRunOptions:
    return AgentRunOptions(tool_approval_responses=approve(*call_ids))
