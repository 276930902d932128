"""The `mcp` context provider: a server's tools, resources and prompts for every run.

Tools are injected as run tools. Resources and prompts are listed in the instructions
(URI/name and description only, so a big server costs a few lines) and fetched on
demand through two tools, `read_mcp_resource(uri)` and `get_mcp_prompt(name,
arguments)`; their names take the server's `tool_prefix` when one is set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from raf.core.context import BaseContextProvider, ContextResult
from raf.core.tools import BaseTool, Tool, ToolContext, ToolResult
from raf.tools.mcp.client import McpClient, McpError
from raf.tools.mcp.config import McpServerConfig
from raf.tools.mcp.tools import content_to_value, wrap_tools

if TYPE_CHECKING:
    import mcp_types

    from raf.core.messages import ChatMessage
    from raf.core.options import AgentRunOptions
    from raf.core.sessions import AgentSession


class ReadMcpResourceTool(BaseTool):
    """Reads one resource of an MCP server by URI."""

    kind = "mcp"

    def __init__(self, client: McpClient, name: str) -> None:
        self.client = client
        self.name = name
        self.description = (
            f"Read a resource of the MCP server {client.name!r} by its URI "
            "(the instructions list the available resources)."
        )
        self.parameters = {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource URI"}},
            "required": ["uri"],
        }

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        uri = str(arguments.get("uri", ""))
        try:
            result = await self.client.read_resource(uri)
        except McpError as exc:
            return ToolResult.fail(str(exc))
        parts: list[str] = []
        for item in result.contents:
            text = getattr(item, "text", None)
            if text is not None:
                parts.append(text)
            else:
                parts.append(f"[binary {item.mime_type or 'data'} at {item.uri}]")
        return ToolResult.ok("\n".join(parts))


class GetMcpPromptTool(BaseTool):
    """Renders one prompt of an MCP server with arguments."""

    kind = "mcp"

    def __init__(self, client: McpClient, name: str) -> None:
        self.client = client
        self.name = name
        self.description = (
            f"Get a prompt template of the MCP server {client.name!r}, filled with arguments "
            "(the instructions list the available prompts)."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the prompt name"},
                "arguments": {
                    "type": "object",
                    "description": "prompt arguments, string values",
                    "additionalProperties": {"type": "string"},
                },
            },
            "required": ["name"],
        }

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        name = str(arguments.get("name", ""))
        args = arguments.get("arguments") or {}
        if not isinstance(args, Mapping):
            return ToolResult.fail("'arguments' must be an object of strings")
        try:
            result = await self.client.get_prompt(name, {k: str(v) for k, v in args.items()})
        except McpError as exc:
            return ToolResult.fail(str(exc))
        lines = [f"{m.role}: {content_to_value([m.content])}" for m in result.messages]
        return ToolResult.ok("\n".join(lines))


class McpContextProvider(BaseContextProvider):
    """Connects on the first run and offers a server's tools, resources and prompts."""

    kind = "mcp"

    def __init__(
        self,
        config: McpServerConfig | Mapping[str, Any] | McpClient,
        *,
        name: str | None = None,
        include_resources: bool = True,
        include_prompts: bool = True,
    ) -> None:
        self.client = config if isinstance(config, McpClient) else McpClient(config)
        self.name = name or self.client.name
        self.include_resources = include_resources
        self.include_prompts = include_prompts
        self._lock = asyncio.Lock()
        self._loaded: tuple[list[Tool], str | None] | None = None

    async def refresh(self) -> None:
        """Forget the cached listings; the next run lists them again."""
        async with self._lock:
            self._loaded = None

    async def _load(self) -> tuple[list[Tool], str | None]:
        async with self._lock:
            if self._loaded is not None:
                return self._loaded
            tools = wrap_tools(self.client, await self.client.list_tools())
            caps = await self.client.capabilities()
            resources: list[mcp_types.Resource] = []
            prompts: list[mcp_types.Prompt] = []
            if self.include_resources and getattr(caps, "resources", None) is not None:
                resources = await self.client.list_resources()
            if self.include_prompts and getattr(caps, "prompts", None) is not None:
                prompts = await self.client.list_prompts()
            prefix = self.client.config.tool_prefix
            read_name = f"{prefix}_read_mcp_resource" if prefix else "read_mcp_resource"
            prompt_name = f"{prefix}_get_mcp_prompt" if prefix else "get_mcp_prompt"
            if resources:
                tools.append(ReadMcpResourceTool(self.client, read_name))
            if prompts:
                tools.append(GetMcpPromptTool(self.client, prompt_name))
            text = self._instructions(resources, prompts, read_name, prompt_name)
            self._loaded = (tools, text)
            return self._loaded

    def _instructions(
        self,
        resources: Sequence[mcp_types.Resource],
        prompts: Sequence[mcp_types.Prompt],
        read_name: str,
        prompt_name: str,
    ) -> str | None:
        lines: list[str] = []
        server_text = self.client.server_instructions
        if server_text:
            lines.append(f"MCP server {self.client.name!r} says: {server_text.strip()}")
        if resources:
            lines.append(f"Resources of MCP server {self.client.name!r} (read with {read_name}):")
            for res in resources:
                desc = f": {res.description}" if res.description else ""
                lines.append(f"- {res.uri} ({res.name}){desc}")
        if prompts:
            lines.append(f"Prompts of MCP server {self.client.name!r} (get with {prompt_name}):")
            for prompt in prompts:
                args = ", ".join(
                    a.name + ("" if a.required else "?") for a in (prompt.arguments or [])
                )
                desc = f": {prompt.description}" if prompt.description else ""
                lines.append(f"- {prompt.name}({args}){desc}")
        return "\n".join(lines) or None

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        tools, text = await self._load()
        return ContextResult(instructions=text, tools=list(tools))

    async def aclose(self) -> None:
        await self.client.aclose()
