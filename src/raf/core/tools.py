"""The Tool protocol, tool results, the run context a tool may ask for, and wrappers."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from raf.core.errors import ToolDefinitionError

if TYPE_CHECKING:
    from raf.core.cancellation import CancellationToken
    from raf.core.options import ChatOptions
    from raf.core.sessions import AgentSession

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(kw_only=True, slots=True)
class ToolResult:
    """What a tool returns: a JSON-able value, or an error message for the model."""

    value: Any = None
    error: str | None = None

    @classmethod
    def ok(cls, value: Any = None) -> ToolResult:
        return cls(value=value)

    @classmethod
    def fail(cls, message: str) -> ToolResult:
        return cls(error=message)

    @property
    def is_error(self) -> bool:
        return self.error is not None


@dataclass(kw_only=True, slots=True)
class ToolContext:
    """The run a tool is called in; a function tool gets it by declaring a parameter of
    this type."""

    agent: Any = None
    """The agent running the tool (an `raf.Agent`), when called from one."""
    session: AgentSession | None = None
    options: ChatOptions | None = None
    cancellation: CancellationToken | None = None
    call_id: str = ""


@runtime_checkable
class Tool(Protocol):
    """Anything the model may call: a name, a description, a JSON Schema and `invoke`."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments object."""
        ...

    @property
    def kind(self) -> str:
        """Family of the tool: function, file, web, code, mcp, openapi, skill, agent, …"""
        ...

    @property
    def requires_approval(self) -> bool:
        """True when calls may need a human decision before they run."""
        ...

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this particular call needs approval (workspace tools decide per path)."""
        ...

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Run the tool; raising is allowed and becomes an error result for the model."""
        ...


class BaseTool(ABC):
    """Convenient base for hand-written tools: set the four attributes, write `invoke`."""

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012
    kind: str = "function"
    requires_approval: bool = False

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return self.requires_approval

    @abstractmethod
    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Run the tool; raising is allowed and becomes an error result for the model."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class ApprovalRequiredTool:
    """Wraps any tool so that every call waits for a human decision."""

    __slots__ = ("inner",)

    def __init__(self, inner: Tool) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def parameters(self) -> dict[str, Any]:
        return self.inner.parameters

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def requires_approval(self) -> bool:
        return True

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return True

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return await self.inner.invoke(arguments, context)

    def __repr__(self) -> str:
        return f"ApprovalRequiredTool({self.inner!r})"


def check_tool_name(name: str, *, where: str = "") -> None:
    """Refuse names that model APIs reject."""
    if not TOOL_NAME_PATTERN.match(name):
        suffix = f" ({where})" if where else ""
        raise ToolDefinitionError(
            f"tool name {name!r}{suffix} is not valid: use 1-64 letters, digits, '_' or '-'"
        )


_CHECKED_TOOL_TYPES: set[type] = set()
"""Types already seen to satisfy the Tool protocol (the structural check is slow)."""


def is_tool(value: object) -> bool:
    """Whether `value` satisfies the Tool protocol; cached per type."""
    kind = type(value)
    if kind in _CHECKED_TOOL_TYPES:
        return True
    if isinstance(value, Tool):
        _CHECKED_TOOL_TYPES.add(kind)
        return True
    return False


def index_tools(tools: Sequence[Tool], *, where: str = "") -> dict[str, Tool]:
    """Tools by name; two tools with one name is an error naming both."""
    out: dict[str, Tool] = {}
    for tool in tools:
        if not is_tool(tool):
            raise ToolDefinitionError(
                f"{tool!r} is not a Tool: it needs name, description, parameters, kind, "
                "requires_approval, approval_required() and invoke()"
            )
        existing = out.get(tool.name)
        if existing is not None:
            suffix = f" {where}" if where else ""
            raise ToolDefinitionError(
                f"two tools are named {tool.name!r}{suffix}: {existing!r} and {tool!r}; "
                "rename one of them"
            )
        out[tool.name] = tool
    return out
