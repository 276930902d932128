"""Tools a provider runs on its own servers (web search, file search, code interpreter, a
remote MCP server): declared to the model like any tool, never invoked by raf.

An agent lists them beside its function tools; the OpenAI Responses wire format sends
each as the tool object the API documents, and the model's calls of them come back in
the stream as progress and results. A wire format that has no hosted tools refuses them
before any request is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from raf.core.errors import ConfigurationError
from raf.core.tools import ToolContext, ToolResult, check_tool_name

__all__ = [
    "HOSTED_TOOL_TYPES",
    "HostedTool",
    "code_interpreter",
    "file_search",
    "hosted_spec",
    "hosted_tool",
    "refuse_hosted",
    "remote_mcp",
    "web_search",
]

HOSTED_TOOL_TYPES: dict[str, tuple[str, ...]] = {
    "web_search": (),
    "web_search_preview": (),
    "file_search": ("vector_store_ids",),
    "code_interpreter": ("container",),
    "mcp": ("server_label",),
    "image_generation": (),
}
"""The hosted tool types raf passes through, and the keys each one requires."""


class HostedTool:
    """A tool the provider runs: its API's tool object (`spec`), passed through as it is."""

    kind = "hosted"
    requires_approval = False
    timeout: float | None = None

    def __init__(
        self, spec: Mapping[str, Any], *, name: str | None = None, description: str = ""
    ) -> None:
        tool_type = spec.get("type")
        if not isinstance(tool_type, str) or tool_type not in HOSTED_TOOL_TYPES:
            known = ", ".join(HOSTED_TOOL_TYPES)
            raise ConfigurationError(
                f"hosted tool {dict(spec)!r}: 'type' must be one of {known}",
                key_path="type",
            )
        missing = [key for key in HOSTED_TOOL_TYPES[tool_type] if key not in spec]
        if tool_type == "mcp" and "server_url" not in spec and "connector_id" not in spec:
            missing.append("server_url")
        if missing:
            raise ConfigurationError(
                f"hosted tool {tool_type!r} needs {', '.join(repr(m) for m in missing)}",
                key_path=missing[0],
            )
        self.spec: dict[str, Any] = dict(spec)
        """The tool object as the provider's API documents it."""
        default = f"mcp_{spec['server_label']}" if tool_type == "mcp" else tool_type
        self.name = name or default
        check_tool_name(self.name, where="a hosted tool")
        self.description = description or f"{tool_type}, run by the model's provider"
        self.parameters: dict[str, Any] = {"type": "object", "properties": {}}

    @property
    def type(self) -> str:
        return str(self.spec["type"])

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return False

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.fail(
            f"{self.name} is a hosted tool: the model's provider runs it, raf cannot"
        )

    def __repr__(self) -> str:
        return f"HostedTool({self.spec!r})"


def web_search(
    *, name: str | None = None, search_context_size: str | None = None, **config: Any
) -> HostedTool:
    """The provider's web search (`user_location`, `filters`, ... go in as they are)."""
    if search_context_size is not None:
        config["search_context_size"] = search_context_size
    return HostedTool({"type": "web_search", **config}, name=name)


def file_search(
    vector_store_ids: Sequence[str], *, name: str | None = None, **config: Any
) -> HostedTool:
    """Search over the provider's vector stores (`max_num_results`, `filters`, ...)."""
    return HostedTool(
        {"type": "file_search", "vector_store_ids": list(vector_store_ids), **config}, name=name
    )


def code_interpreter(
    container: str | Mapping[str, Any] | None = None, *, name: str | None = None, **config: Any
) -> HostedTool:
    """Code the provider runs in its container (a container id, or a new one: `auto`)."""
    chosen: Any = dict(container) if isinstance(container, Mapping) else container
    return HostedTool(
        {"type": "code_interpreter", "container": chosen or {"type": "auto"}, **config}, name=name
    )


def remote_mcp(
    server_label: str,
    server_url: str,
    *,
    allowed_tools: Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
    require_approval: Literal["never", "always"] | dict[str, Any] = "never",
    name: str | None = None,
    **config: Any,
) -> HostedTool:
    """An MCP server the provider calls itself (it must be reachable from the provider)."""
    spec: dict[str, Any] = {
        "type": "mcp",
        "server_label": server_label,
        "server_url": server_url,
        "require_approval": require_approval,
        **config,
    }
    if allowed_tools is not None:
        spec["allowed_tools"] = list(allowed_tools)
    if headers:
        spec["headers"] = dict(headers)
    return HostedTool(spec, name=name)


def hosted_tool(spec: Mapping[str, Any], *, name: str | None = None) -> HostedTool:
    """A hosted tool from its API object, as a document writes it (`{type: web_search}`)."""
    return HostedTool(spec, name=name)


def hosted_spec(tool: object) -> dict[str, Any] | None:
    """The API object of a hosted tool (also behind a wrapper); None for any other tool."""
    seen = tool
    for _ in range(4):  # wrappers (approval, lenient) keep the tool as `inner`
        if isinstance(seen, HostedTool):
            return seen.spec
        seen = getattr(seen, "inner", None)
        if seen is None:
            return None
    return None


def refuse_hosted(tools: Sequence[object], api: str) -> None:
    """A clear error, before any request, for a hosted tool an API cannot run."""
    for tool in tools:
        spec = hosted_spec(tool)
        if spec is not None:
            raise ConfigurationError(
                f"the hosted tool {getattr(tool, 'name', spec['type'])!r} ({spec['type']}) "
                f"runs only on OpenAI's Responses API, not on {api}: use a model string "
                "openai-responses:<model> (or apiType: Responses in a document), or remove it"
            )
