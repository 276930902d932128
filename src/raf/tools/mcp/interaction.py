"""What an MCP server may ask of raf's client while a request runs, and what it reports.

A server may ask the user for input (elicitation: a form, or a URL to visit), ask the
client's model for a completion (sampling), and send progress and log notifications. The
client hands each to a handler: elicitation and sampling go to the tool call that caused
them (which pauses the agent's run for a person, see `tools.py`) or to handlers given to
`McpClient`; notices go to `on_notice`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ElicitAction = Literal["accept", "decline", "cancel"]


@dataclass(kw_only=True, slots=True)
class ElicitationRequest:
    """A server asks the user for input."""

    server: str
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    """JSON Schema of the form (form mode); empty in URL mode."""
    url: str | None = None
    """The page the user should open (URL mode)."""

    def describe(self) -> str:
        """One line a person can answer."""
        if self.url:
            return f"the MCP server {self.server!r} asks: {self.message} (open {self.url})"
        props = self.schema.get("properties") or {}
        fields_ = ", ".join(f"{name} ({spec.get('type', 'value')})" for name, spec in props.items())
        return f"the MCP server {self.server!r} asks: {self.message}" + (
            f" [answer with: {fields_}]" if fields_ else ""
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "elicitation",
            "server": self.server,
            "message": self.message,
            "schema": self.schema,
            "url": self.url,
        }


@dataclass(kw_only=True, slots=True)
class ElicitationAnswer:
    """The user's answer: accept (with the form's content), decline or cancel."""

    action: ElicitAction
    content: dict[str, Any] | None = None


@dataclass(kw_only=True, slots=True)
class SamplingRequest:
    """A server asks the client's model for a completion."""

    server: str
    messages: list[tuple[str, str]]
    """(role, text) pairs, oldest first."""
    system_prompt: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None

    def describe(self) -> str:
        last = self.messages[-1][1] if self.messages else ""
        if len(last) > 200:
            last = last[:200] + "…"
        return f"the MCP server {self.server!r} asks the agent's model: {last!r}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "sampling",
            "server": self.server,
            "messages": [list(m) for m in self.messages],
            "system_prompt": self.system_prompt,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }


@dataclass(kw_only=True, slots=True)
class SamplingAnswer:
    """The model's completion, or a refusal with its reason."""

    text: str | None = None
    model: str = "raf"
    refused: str | None = None


@dataclass(kw_only=True, slots=True)
class McpNotice:
    """A progress or log notification a server sent."""

    server: str
    kind: Literal["progress", "log"]
    message: str = ""
    level: str | None = None
    """The log level (log notices)."""
    progress: float | None = None
    total: float | None = None


ElicitationHandler = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]
SamplingHandler = Callable[[SamplingRequest], Awaitable[SamplingAnswer]]
NoticeHandler = Callable[[McpNotice], Awaitable[None] | None]


def with_defaults(schema: dict[str, Any], content: dict[str, Any] | None) -> dict[str, Any]:
    """The answer with each field the user left out set to the schema's default."""
    out = dict(content or {})
    for name, spec in (schema.get("properties") or {}).items():
        if name not in out and isinstance(spec, dict) and "default" in spec:
            out[name] = spec["default"]
    return out


def elicitation_from_params(server: str, params: Any) -> ElicitationRequest:
    if getattr(params, "mode", "form") == "url":
        return ElicitationRequest(server=server, message=params.message, url=params.url)
    schema = params.requested_schema
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
    return ElicitationRequest(server=server, message=params.message, schema=dict(schema or {}))


def sampling_from_params(server: str, params: Any) -> SamplingRequest:
    messages: list[tuple[str, str]] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = "\n".join(
            getattr(b, "text", None) or f"[{getattr(b, 'type', 'content')}]" for b in blocks
        )
        messages.append((str(message.role), text))
    return SamplingRequest(
        server=server,
        messages=messages,
        system_prompt=params.system_prompt,
        max_tokens=params.max_tokens,
        temperature=params.temperature,
    )


@dataclass(kw_only=True, slots=True)
class CallScope:
    """The handlers of one tool call in flight: what the server asks during that call
    goes here (when it is the only call of its client in flight)."""

    elicitation: ElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    notice: NoticeHandler | None = None
