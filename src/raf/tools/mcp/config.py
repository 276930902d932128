"""How to reach one MCP server and which of its tools raf exposes (a pydantic model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from raf.core.errors import ConfigurationError
from raf.tools.mcp.oauth import McpOAuthConfig

ApprovalMode = Literal["never", "always"]
ElicitationMode = Literal["ask", "decline"]
SamplingMode = Literal["approve", "always", "never"]


class McpServerConfig(BaseModel):
    """One MCP server: transport, timeouts, name prefix, allow-list and approval modes."""

    model_config = ConfigDict(extra="forbid")

    name: str = "mcp"
    """Label used in errors, logs and context instructions."""
    transport: Literal["stdio", "http", "sse"] | None = None
    """stdio (spawn `command`), http (streamable HTTP at `url`) or sse (older servers);
    inferred from `command` / `url` when left out."""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    """Extra environment for a stdio server, merged over a minimal safe environment."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    allow_hosts: list[str] = Field(default_factory=list)
    """Hosts besides the server's own origin that may be reached at loopback or private
    addresses (an authorization server on another local port); every other URL the
    server names (OAuth discovery, redirects) reaches only public addresses."""
    oauth: McpOAuthConfig | None = None
    """Authorize with OAuth 2.1 (http and sse transports); `{}` takes every default."""
    connect_timeout: float = Field(default=30.0, gt=0)
    """Seconds to start the transport and finish the protocol handshake."""
    call_timeout: float = Field(default=60.0, gt=0)
    """Seconds one request (tool call, resource read, …) may take."""
    tool_prefix: str | None = None
    """Prepended as `<prefix>_<tool>` to every tool name, to keep servers apart."""
    tools: list[str] | None = None
    """Allow-list of server tool names (unprefixed); None exposes every tool."""
    approval_mode: ApprovalMode | dict[str, ApprovalMode] = "never"
    """"never", "always", or per tool name (unprefixed); unlisted tools follow the entry
    `"*"`, else "never"."""
    reconnect: bool = True
    """Reconnect once and retry when the server went away between or during requests."""
    protocol: Literal["auto", "legacy"] = "auto"
    """"auto" speaks the newest protocol version the server offers; "legacy" always uses
    the initialize handshake (for servers that ask for input only on such connections)."""
    elicitation: ElicitationMode = "ask"
    """"ask": what the server asks the user goes to a person (the agent's run pauses, or
    the client's handler answers); "decline": refused without asking."""
    sampling: SamplingMode = "approve"
    """Completions the server asks of the agent's model: "approve" asks a person first
    for each, "always" answers without asking, "never" does not offer sampling."""

    @model_validator(mode="after")
    def _check_transport(self) -> McpServerConfig:
        if self.transport is None:
            self.transport = "stdio" if self.command else "http" if self.url else None
        if self.transport is None:
            raise ValueError("an MCP server needs either 'command' (stdio) or 'url' (http/sse)")
        if self.transport == "stdio" and not self.command:
            raise ValueError("transport 'stdio' needs 'command'")
        if self.transport in ("http", "sse") and not self.url:
            raise ValueError(f"transport {self.transport!r} needs 'url'")
        if self.oauth is not None and self.transport == "stdio":
            raise ValueError("'oauth' applies to servers reached over http or sse, not stdio")
        return self

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> McpServerConfig:
        """Validate a plain mapping; problems become one ConfigurationError naming each key."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(
                f"an MCP server config is a mapping or McpServerConfig, got {type(data).__name__}"
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            name = data.get("name", "mcp")
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'config'}: "
                + e["msg"].removeprefix("Value error, ")
                for e in exc.errors()
            )
            raise ConfigurationError(f"MCP server {name!r} config: {problems}") from exc

    def needs_approval(self, tool_name: str) -> bool:
        """Whether calls of this server tool (unprefixed name) wait for a human."""
        if isinstance(self.approval_mode, str):
            return self.approval_mode == "always"
        unlisted = self.approval_mode.get("*", "never")
        return self.approval_mode.get(tool_name, unlisted) == "always"

    def exposed_name(self, tool_name: str) -> str:
        """The raf tool name for a server tool."""
        return f"{self.tool_prefix}_{tool_name}" if self.tool_prefix else tool_name
