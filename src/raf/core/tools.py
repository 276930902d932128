"""The Tool protocol, tool results, the run context a tool may ask for, and wrappers."""

from __future__ import annotations

import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from raf.core.errors import ToolDefinitionError

if TYPE_CHECKING:
    from raf.core.cancellation import CancellationToken
    from raf.core.run_context import RunContext
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


class ToolContext:
    """The run a tool is called in; a function tool gets it by declaring a parameter of
    this type. `agent`: the agent running the tool (an `raf.Agent`), when called from
    one; `session`; `options`: the model settings (`ChatOptions`) of the request whose
    reply made this call; `cancellation`; `call_id`; `run`: the run (approvals, usage
    so far, limits, middleware); `idempotency_key`."""

    __slots__ = ("_key", "_key_of", "agent", "call_id", "cancellation", "options", "run", "session")

    def __init__(
        self,
        *,
        agent: Any = None,
        session: AgentSession | None = None,
        options: Any = None,
        cancellation: CancellationToken | None = None,
        call_id: str = "",
        run: RunContext | None = None,
        idempotency_key: str = "",
        key_scope: str | None = None,
    ) -> None:
        self.agent = agent  # the agent running the tool (an `raf.Agent`), if any
        self.session = session
        # the model settings (`ChatOptions`) of the request whose reply made this call;
        # typed loosely because `ChatOptions` lists the tools themselves
        self.options = options
        self.cancellation = cancellation
        self.call_id = call_id
        self.run = run  # the run: approvals, usage so far, limits, middleware
        self._key = idempotency_key
        # the scope `idempotency_key` is made from when first read (None: it was given)
        self._key_of = key_scope

    @property
    def idempotency_key(self) -> str:
        """The same on every retry of this call, different for any other call: a tool with
        side effects passes it on (an `Idempotency-Key` header) or records it, so a repeated
        call has no second effect (`raf.core.idempotency` says how it is made). Made when
        first read: most tools never ask."""
        if not self._key and self._key_of is not None:
            from raf.core.idempotency import scoped_call_key

            self._key = scoped_call_key(self._key_of, self.call_id)
        return self._key

    @idempotency_key.setter
    def idempotency_key(self, value: str) -> None:
        self._key, self._key_of = value, None

    def __repr__(self) -> str:
        return f"ToolContext(call_id={self.call_id!r}, session={self.session!r})"


@runtime_checkable
class Tool(Protocol):
    """Anything the model may call: a name, a description, a JSON Schema and `invoke`.

    A tool may also declare `timeout` (seconds, or None for no limit): a call running
    longer is stopped and the model reads an error result. It is optional, so tools
    written before it still satisfy this protocol; read it with `tool_timeout(tool)`.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments object."""

    @property
    def kind(self) -> str:
        """Family of the tool: function, file, web, code, mcp, openapi, skill, agent, …"""

    @property
    def requires_approval(self) -> bool:
        """True when calls may need a human decision before they run."""

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        """Whether this particular call needs approval (workspace tools decide per path)."""

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Run the tool; raising is allowed and becomes an error result for the model."""


class BaseTool(ABC):
    """Convenient base for hand-written tools: set the four attributes, write `invoke`."""

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012
    kind: str = "function"
    requires_approval: bool = False
    timeout: float | None = None
    ends_run: bool = False
    """True: once a call of this tool succeeds, the run ends after its batch, without
    asking the model again (a handoff: the conversation has been passed on)."""

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return self.requires_approval

    @abstractmethod
    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Run the tool; raising is allowed and becomes an error result for the model."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def ends_run(tool: Tool | None) -> bool:
    """Whether a successful call of `tool` ends the run after its batch (its `ends_run`
    attribute; tools without one never do)."""
    return bool(getattr(tool, "ends_run", False))


EVERY_CALL_REASON = "this tool is marked as needing a person's approval for every call"
"""Why a call waits when its tool asks approval for every call and gives no reason."""


def approval_reason(tool: Tool | None, arguments: Mapping[str, Any]) -> str | None:
    """Why a call of `tool` waits for a person, in words a person can check: the tool's own
    `approval_reason(arguments)` when it has one (workspace tools name the path, the
    access and the policy or rule), else the generic reason for tools that always ask."""
    if tool is None:
        return None
    explain = getattr(tool, "approval_reason", None)
    if callable(explain):
        said = explain(arguments)
        if said:
            return str(said)
    return EVERY_CALL_REASON if tool.requires_approval else None


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

    def approval_reason(self, arguments: Mapping[str, Any]) -> str | None:
        return approval_reason(self.inner, arguments) or EVERY_CALL_REASON

    @property
    def timeout(self) -> float | None:
        return tool_timeout(self.inner)

    @property
    def ends_run(self) -> bool:
        return ends_run(self.inner)

    def argument_candidates(self) -> dict[str, list[Any]]:
        return argument_candidates(self.inner)

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return await self.inner.invoke(arguments, context)

    def __repr__(self) -> str:
        return f"ApprovalRequiredTool({self.inner!r})"


def argument_candidates(tool: object) -> dict[str, list[Any]]:
    """The values a tool says its arguments can take right now, by argument name: a tool
    may declare `argument_candidates()` (the workspace's file tools list the paths that
    exist in their scope). A model that decodes under a grammar picks from them instead
    of writing a value of its own; an argument left out is free. Optional, like
    `timeout`: a tool that declares none, or whose method fails, gives an empty dict."""
    method = getattr(tool, "argument_candidates", None)
    if not callable(method):
        return {}
    try:
        found = method()
    except Exception:  # a listing that fails constrains nothing; the call still runs
        return {}
    if not isinstance(found, Mapping):
        return {}
    return {str(k): list(v) for k, v in found.items() if isinstance(v, list | tuple) and v}


def tool_timeout(tool: object) -> float | None:
    """The `timeout` a tool declares (seconds), or None when it declares none."""
    value = getattr(tool, "timeout", None)
    if value is None:  # most tools: answered before the number checks
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


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


class _LenientTool:
    """A tool written with only the essentials (name and invoke), given the protocol's
    defaults: no description, an empty schema, kind "function", no approval."""

    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def description(self) -> str:
        return str(getattr(self.inner, "description", "") or "")

    @property
    def parameters(self) -> dict[str, Any]:
        params = getattr(self.inner, "parameters", None)
        return dict(params) if params else {"type": "object", "properties": {}}

    @property
    def kind(self) -> str:
        return str(getattr(self.inner, "kind", "function"))

    @property
    def requires_approval(self) -> bool:
        return bool(getattr(self.inner, "requires_approval", False))

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        check = getattr(self.inner, "approval_required", None)
        return bool(check(arguments)) if callable(check) else self.requires_approval

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        value = self.inner.invoke(arguments, context)
        if inspect.isawaitable(value):
            value = await value
        return value if isinstance(value, ToolResult) else ToolResult(value=value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"{self.inner!r}"


def as_tool(value: object) -> Tool:
    """`value` as a Tool: a full one as it is, one with just `name` and an `invoke`
    method completed with defaults; anything else is a clear error."""
    if is_tool(value):
        return value  # type: ignore[return-value]
    if isinstance(getattr(value, "name", None), str) and callable(getattr(value, "invoke", None)):
        return _LenientTool(value)
    raise ToolDefinitionError(
        f"{value!r} is not a Tool: it needs at least a 'name' and an async "
        "'invoke(arguments, context)' (and usually description and parameters)"
    )


def index_tools(tools: Sequence[Tool], *, where: str = "") -> dict[str, Tool]:
    """Tools by name; two tools with one name is an error naming both."""
    out: dict[str, Tool] = {}
    for tool in tools:
        tool = as_tool(tool)
        existing = out.get(tool.name)
        if existing is not None:
            suffix = f" {where}" if where else ""
            raise ToolDefinitionError(
                f"two tools are named {tool.name!r}{suffix}: {existing!r} and {tool!r}; "
                "rename one of them"
            )
        out[tool.name] = tool
    return out
