"""Tools a provider runs on its own servers (web search, file search, code interpreter, a
remote MCP server): declared to the model like any tool, never invoked by raf.

An agent lists them beside its function tools; the OpenAI Responses wire format sends
each as the tool object the API documents, and the model's calls of them come back in
the stream as progress and results. A wire format that has no hosted tools refuses them
before any request is sent.

A remote MCP server asks a person before each call unless told otherwise
(`require_approval` is `"always"` by default): the provider's approval request reaches
raf as a call of the hosted tool, which pauses the run like any call that needs approval
(the request names the server and its tool); the answer goes back to the provider as an
approval response, once. Header values and the `authorization` of a hosted tool are
secrets, and so are the parts of a remote MCP server's `server_url` that can carry a
credential (see `url_secrets`): `hosted_secrets` lists them, and raf takes them out of
errors, reprs, approval texts and results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from raf.clients.hosted_urls import shown_url, url_secrets
from raf.core.errors import ConfigurationError
from raf.core.tools import ToolContext, ToolResult, check_tool_name

__all__ = [
    "HOSTED_TOOL_TYPES",
    "MCP_APPROVAL_KEY",
    "HostedTool",
    "code_interpreter",
    "file_search",
    "hosted_secrets",
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

MCP_APPROVAL_KEY = "approval_request_id"
"""The argument that makes a call of a hosted MCP tool the provider's approval request
(its id); the other arguments are `server_label`, `tool` and the tool's `arguments`."""

SECRET_KEYS = ("headers", "authorization", "server_url")
"""Keys of a hosted tool's object whose values are (or hold) secrets: all values of
`headers`, `authorization`, and the credential-like parts of `server_url`."""


def _spec_secrets(spec: Mapping[str, Any]) -> list[str]:
    """The secret values of a hosted tool's object, each also as JSON quotes it (as an
    error that quotes the request shows it)."""
    values: list[str] = []
    headers = spec.get("headers")
    if isinstance(headers, Mapping):
        values += [str(v) for v in headers.values() if v]
    if spec.get("authorization"):
        values.append(str(spec["authorization"]))
    if isinstance(spec.get("server_url"), str):
        values += url_secrets(spec["server_url"])
    found: list[str] = []
    for value in values:
        found.append(value)
        quoted = json.dumps(value)[1:-1]
        if quoted != value:
            found.append(quoted)
    return found


def _shown(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A hosted tool's object fit for messages: its secrets masked."""
    shown = dict(spec)
    if isinstance(shown.get("headers"), Mapping):
        shown["headers"] = dict.fromkeys(shown["headers"], "***")
    if "authorization" in shown:
        shown["authorization"] = "***"
    if isinstance(shown.get("server_url"), str):
        shown["server_url"] = shown_url(shown["server_url"])
    return shown


class HostedTool:
    """A tool the provider runs: its API's tool object (`spec`), passed through as it is."""

    kind = "hosted"
    timeout: float | None = None

    def __init__(
        self, spec: Mapping[str, Any], *, name: str | None = None, description: str = ""
    ) -> None:
        tool_type = spec.get("type")
        if not isinstance(tool_type, str) or tool_type not in HOSTED_TOOL_TYPES:
            known = ", ".join(HOSTED_TOOL_TYPES)
            raise ConfigurationError(
                f"hosted tool {_shown(spec)!r}: 'type' must be one of {known}",
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
        if tool_type == "mcp":  # the API's own default, written out so that it is seen
            self.spec.setdefault("require_approval", "always")
        default = f"mcp_{spec['server_label']}" if tool_type == "mcp" else tool_type
        self.name = name or default
        check_tool_name(self.name, where="a hosted tool")
        self.description = description or f"{tool_type}, run by the model's provider"
        self.parameters: dict[str, Any] = {"type": "object", "properties": {}}

    @property
    def type(self) -> str:
        return str(self.spec["type"])

    @property
    def requires_approval(self) -> bool:
        """True for a remote MCP server that asks before (some of) its calls."""
        return self.type == "mcp" and self.spec.get("require_approval") != "never"

    @property
    def secrets(self) -> list[str]:
        """The values this tool's object holds that must never be shown."""
        return _spec_secrets(self.spec)

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        """Only the provider's approval request of a remote MCP call comes to raf as a call."""
        return self.type == "mcp" and MCP_APPROVAL_KEY in arguments

    def approval_reason(self, arguments: Mapping[str, Any]) -> str | None:
        if not self.approval_required(arguments):
            return None
        server = str(arguments.get("server_label") or self.spec.get("server_label"))
        url = self.spec.get("server_url")
        where = shown_url(url) if isinstance(url, str) else self.spec.get("connector_id")
        at = f" at {where}" if where else ""
        return (
            f"the remote MCP server {server!r}{at} asks to run its tool "
            f"{arguments.get('tool')!r}; the model's provider calls it once you approve"
        )

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if self.approval_required(arguments):
            # reached only once a person approved it: the provider is told so and runs it
            return ToolResult(value={"approve": True})
        return ToolResult.fail(
            f"{self.name} is a hosted tool: the model's provider runs it, raf cannot"
        )

    def __repr__(self) -> str:
        return f"HostedTool({_shown(self.spec)!r})"


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
    require_approval: Literal["never", "always"] | dict[str, Any] = "always",
    name: str | None = None,
    **config: Any,
) -> HostedTool:
    """An MCP server the provider calls itself (it must be reachable from the provider).
    Each call waits for a person's approval unless `require_approval` says otherwise
    (`"never"`, or `{"never": {"tool_names": [...]}}` for tools known to be safe);
    `headers` (and an `authorization` in `config`) are secrets, never shown, and so are
    the query values and token-like path segments of `server_url`."""
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


def hosted_secrets(tools: Sequence[object]) -> list[str]:
    """The secret values (header values, `authorization`, the credential-like parts of a
    `server_url`) of the hosted tools in `tools`."""
    found: list[str] = []
    for tool in tools:
        spec = hosted_spec(tool)
        if spec is not None:
            found += _spec_secrets(spec)
    return found


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
