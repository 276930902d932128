"""A tool whoever started the run declares and runs: the model is offered it beside the
agent's own, and a call of it ends the run with the call handed back (an OpenAI client's
own functions, served by raf)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raf.core.tools import ToolContext, ToolResult


@dataclass(kw_only=True, slots=True)
class ClientTool:
    """A tool the caller runs: a name, a description and a JSON Schema, nothing to run.

    When the model calls it, the agent runs the other calls of that batch (its own
    tools), then ends the run with `finish_reason` `tool_calls`; the unanswered call is
    the last assistant message of the response. The caller runs it and continues the
    conversation with its result (a tool message)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    kind: str = "client"
    requires_approval: bool = False
    client_side: bool = True
    """Read by the run: a call of this tool is handed back, never invoked."""

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return False

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Never called by an agent's run; a loop that calls it anyway reads why not."""
        return ToolResult.fail(f"{self.name!r} is run by the client that declared it, not here")


def client_side(tool: object) -> bool:
    """Whether calls of `tool` are handed back to the caller (a `ClientTool`)."""
    return bool(getattr(tool, "client_side", False))
