"""MCP server tools as raf tools: prefix, allow-list and per-tool approval mode."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from raf.core.errors import ConfigurationError, ToolApprovalPending
from raf.core.sessions import AgentSession
from raf.core.tools import ApprovalRequiredTool, Tool, ToolContext, ToolResult, check_tool_name
from raf.tools.mcp.agent_input import AgentInput, state_key
from raf.tools.mcp.client import McpClient, McpError
from raf.tools.mcp.config import McpServerConfig

if TYPE_CHECKING:
    import mcp_types


def content_to_value(contents: Sequence[Any]) -> Any:
    """MCP content blocks as a JSON-able value: plain text when every block is text."""
    texts: list[str] = []
    blocks: list[dict[str, Any]] = []
    all_text = True
    for block in contents:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
            blocks.append({"type": "text", "text": block.text})
            continue
        all_text = False
        if kind == "resource":
            res = block.resource
            entry: dict[str, Any] = {"type": "resource", "uri": str(res.uri)}
            if getattr(res, "text", None) is not None:
                entry["text"] = res.text
            else:
                entry["mime_type"] = res.mime_type
                entry["blob_bytes"] = len(getattr(res, "blob", "") or "") * 3 // 4
            blocks.append(entry)
        elif kind == "resource_link":
            blocks.append({"type": "resource_link", "uri": str(block.uri), "name": block.name})
        elif kind in ("image", "audio"):
            # Base64 media would cost the model thousands of tokens of noise: summarise it.
            blocks.append(
                {
                    "type": kind,
                    "mime_type": block.mime_type,
                    "size_bytes": len(block.data) * 3 // 4,
                    "note": "binary content not shown",
                }
            )
        else:
            blocks.append(block.model_dump(mode="json", exclude_none=True))
    if all_text:
        return "\n".join(texts)
    return blocks


def result_to_tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    """A CallToolResult as a raf ToolResult; a server-side tool error keeps its text."""
    if result.is_error:
        message = content_to_value(result.content)
        return ToolResult.fail(message if isinstance(message, str) else str(message))
    if result.structured_content is not None:
        return ToolResult.ok(result.structured_content)
    return ToolResult.ok(content_to_value(result.content))


class McpTool:
    """One tool of an MCP server, called through a shared `McpClient`."""

    __slots__ = ("_description", "_name", "_parameters", "client", "server_tool")

    kind = "mcp"

    def __init__(self, client: McpClient, spec: mcp_types.Tool, *, name: str | None = None):
        self.client = client
        self.server_tool = spec.name
        self._name = name or client.config.exposed_name(spec.name)
        check_tool_name(self._name, where=f"MCP server {client.name!r}")
        self._description = spec.description or spec.title or spec.name
        schema = dict(spec.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self._parameters = schema

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def parameters(self) -> dict[str, Any]:
        return self._parameters

    @property
    def requires_approval(self) -> bool:
        return False

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return False

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Call the server's tool; when the server asks for input or a completion a
        person must approve, the run pauses (`agent_input`) and this call runs again
        with the answer once approved."""
        flow = AgentInput.resume(context, self.client.config.sampling)
        try:
            result = await self.client.call_tool(self.server_tool, arguments, scope=flow.scope())
        except McpError as exc:
            if flow.asked is None:
                flow.clear()
                return ToolResult.fail(str(exc))
            result = None
        if flow.asked is not None:
            flow.save()
            raise ToolApprovalPending(flow.asked.describe())
        flow.clear()
        assert result is not None
        return result_to_tool_result(result)

    def release_call(self, call_id: str, session: AgentSession) -> None:
        """The call no longer waits for a person: forget the answers kept for it."""
        session.provider_state.pop(state_key(call_id), None)

    def __repr__(self) -> str:
        return f"<McpTool {self._name!r} of {self.client.name!r}>"


def wrap_tools(client: McpClient, specs: Sequence[mcp_types.Tool]) -> list[Tool]:
    """Apply the allow-list, prefix and approval modes of the client's config."""
    cfg = client.config
    by_name = {s.name: s for s in specs}
    if cfg.tools is not None:
        unknown = [n for n in cfg.tools if n not in by_name]
        if unknown:
            raise ConfigurationError(
                f"MCP server {client.name!r} has no tool(s) {', '.join(map(repr, unknown))}; "
                f"it offers: {', '.join(sorted(by_name)) or '(none)'}"
            )
        specs = [by_name[n] for n in cfg.tools]
    out: list[Tool] = []
    for spec in specs:
        tool: Tool = McpTool(client, spec)
        if cfg.needs_approval(spec.name):
            tool = ApprovalRequiredTool(tool)
        out.append(tool)
    return out


class McpToolset:
    """The tools of one MCP server; `await load()` connects lazily and lists them once."""

    def __init__(self, config: McpServerConfig | Mapping[str, Any] | McpClient) -> None:
        self.client = config if isinstance(config, McpClient) else McpClient(config)
        self._tools: list[Tool] | None = None
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.client.name

    @property
    def tools(self) -> list[Tool]:
        """The loaded tools; call `load()` first."""
        if self._tools is None:
            raise ConfigurationError(
                f"MCP toolset {self.name!r} is not loaded yet: await toolset.load() first"
            )
        return list(self._tools)

    async def load(self, *, refresh: bool = False) -> list[Tool]:
        """Connect if needed and turn the server's tools into raf tools."""
        async with self._lock:
            if self._tools is None or refresh:
                self._tools = wrap_tools(self.client, await self.client.list_tools())
            return list(self._tools)

    def __aiter__(self) -> Any:
        return self._iterate()

    async def _iterate(self) -> Any:
        for tool in await self.load():
            yield tool

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> McpToolset:
        await self.load()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
