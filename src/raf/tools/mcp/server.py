"""A raf agent as an MCP server (stdio or streamable HTTP) on the official SDK.

The server offers one tool, `ask(message, session_id?)`, that runs the agent; with
`expose_tools` it also offers the agent's own tools, except those that need a human's
approval (a remote caller must not bypass that). Sessions named by `session_id` live
in memory for the life of the server, so a client can hold a conversation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from raf.core.errors import ConfigurationError
from raf.core.responses import FinishReason
from raf.core.sessions import AgentSession
from raf.core.tools import Tool, ToolContext
from raf.tools.mcp.client import _import_mcp

if TYPE_CHECKING:
    import mcp_types

    from raf.agent.agent import Agent

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "what to ask the agent"},
        "session_id": {
            "type": "string",
            "description": "continue the conversation kept under this id (optional)",
        },
    },
    "required": ["message"],
}


def _text_result(text: str, *, error: bool = False, structured: Any = None) -> Any:
    import mcp_types

    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


class AgentMcpServer:
    """Builds the MCP server for one agent and runs it over stdio or HTTP."""

    def __init__(self, agent: Agent, *, expose_tools: bool = False, ask_tool: str = "ask"):
        _import_mcp()
        self.agent = agent
        self.ask_tool = ask_tool
        self.sessions: dict[str, AgentSession] = {}
        self.tools: dict[str, Tool] = {}
        self.left_out: dict[str, str] = {}
        """With `expose_tools`: the agent's tools not exposed, and why."""
        if expose_tools:
            for provider in agent.context_providers:
                for tool in getattr(provider, "tools", None) or ():
                    if isinstance(tool, Tool):
                        self.left_out[tool.name] = (
                            f"added at run time by the {provider.kind!r} context provider"
                        )
            for tool in agent.tools:
                if tool.requires_approval:
                    self.left_out[tool.name] = "needs approval, which an MCP caller cannot give"
                    continue
                if tool.name == ask_tool:
                    raise ConfigurationError(
                        f"the agent has a tool named {ask_tool!r}, which the MCP server "
                        "uses for asking the agent: rename one of them"
                    )
                self.tools[tool.name] = tool
        self.server = self._build()

    def _build(self) -> Any:
        from mcp.server.lowlevel import Server

        return Server(
            self.agent.name,
            version="raf",
            instructions=self.agent.description or None,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def _tool_specs(self) -> list[mcp_types.Tool]:
        import mcp_types

        description = self.agent.description or f"Ask the raf agent {self.agent.name!r}."
        specs = [
            mcp_types.Tool(name=self.ask_tool, description=description, input_schema=ASK_SCHEMA)
        ]
        for tool in self.tools.values():
            specs.append(
                mcp_types.Tool(
                    name=tool.name, description=tool.description, input_schema=tool.parameters
                )
            )
        return specs

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types

        return mcp_types.ListToolsResult(tools=self._tool_specs())

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        name: str = params.name
        arguments: Mapping[str, Any] = params.arguments or {}
        if name == self.ask_tool:
            return await self._ask(arguments)
        tool = self.tools.get(name)
        if tool is None:
            return _text_result(f"unknown tool {name!r}", error=True)
        try:
            result = await tool.invoke(arguments, ToolContext(agent=self.agent))
        except Exception as exc:
            return _text_result(f"{type(exc).__name__}: {exc}", error=True)
        if result.is_error:
            return _text_result(result.error or "tool failed", error=True)
        value = result.value
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return _text_result(text)

    async def _ask(self, arguments: Mapping[str, Any]) -> Any:
        message = arguments.get("message")
        if not isinstance(message, str) or not message.strip():
            return _text_result("'message' must be a non-empty string", error=True)
        session_id = arguments.get("session_id")
        if session_id is not None and not isinstance(session_id, str):
            return _text_result("'session_id' must be a string", error=True)
        session = self.sessions.get(session_id) if session_id else None
        if session is None:
            session = self.agent.create_session(session_id or None)
            if session_id:
                self.sessions[session_id] = session
        try:
            response = await self.agent.run(message, session=session)
        except Exception as exc:
            return _text_result(f"the agent failed: {type(exc).__name__}: {exc}", error=True)
        if response.finish_reason is FinishReason.AWAITING_APPROVAL:
            names = ", ".join(sorted({r.name for r in response.pending_approvals}))
            return _text_result(
                f"the agent wants to call {names}, which needs a person's approval; "
                "approvals cannot be given over MCP",
                error=True,
            )
        return _text_result(
            response.text, structured={"answer": response.text, "session_id": session.id}
        )

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def serve_http(self, *, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Streamable HTTP at http://host:port/mcp until cancelled."""
        import uvicorn

        app = self.server.streamable_http_app(host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()
