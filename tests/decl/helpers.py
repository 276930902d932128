"""Stand-ins and small helpers for the declarative builder tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from raf import BaseTool, ContextResult, ToolContext, ToolResult
from raf.core.context import BaseContextProvider
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient


class StandInScopeTool(BaseTool):
    """A scope tool for linkage tests: it reports the scope it was bound to."""

    kind = "file"

    def __init__(self, name: str, scope: Any = None) -> None:
        self.name = name
        self.description = f"stand-in scope tool {name}"
        self.parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
        self.scope = scope

    def create_scoped(self, scope: Any) -> StandInScopeTool:
        return StandInScopeTool(self.name, scope)

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.ok(f"{self.name} in {getattr(self.scope, 'name', None)}")


class PlainTool(BaseTool):
    """A tool that is not a scope tool."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = f"plain tool {name}"

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.ok(f"{self.name} ran")


class MarkerProvider(BaseContextProvider):
    """A provider added in code; records that it ran."""

    def __init__(self, name: str, log: list[str] | None = None) -> None:
        self.name = name
        self.kind = "marker"
        self.log = log if log is not None else []

    async def on_invoking(self, agent: Any, session: Any, messages: Any, options: Any) -> Any:
        self.log.append(self.name)
        return ContextResult(instructions=f"[{self.name}]")


def builder_for(
    text: str, tmp_path: Path, client: ScriptedChatClient | None = None
) -> DeclAgentBuilder:
    """A builder over `text` written to tmp_path/agent.yaml, on a scripted client."""
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    builder = DeclAgentBuilder().from_yaml_file(path)
    return builder.with_chat_client(client or ScriptedChatClient(["ok"]))


def names(tools: Sequence[Any]) -> list[str]:
    return [t.name for t in tools]


def write_skill(folder: Path, name: str, *, resource: bool = True) -> Path:
    skill = folder / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: How to {name}.\n---\n# {name}\nDo it well.\n",
        encoding="utf-8",
    )
    if resource:
        (skill / "references").mkdir()
        (skill / "references" / "guide.md").write_text("A guide.\n", encoding="utf-8")
    return skill
