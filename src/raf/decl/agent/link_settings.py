"""The run settings of a declared agent: middleware and guardrails by registered name, usage
limits and the tool timeout."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from raf.core.middleware import find_middleware, registered_middleware
from raf.core.usage import UsageLimits
from raf.decl.agent.link_base import LinkSite
from raf.decl.documents.problems import suggest
from raf.decl.documents.schema import GuardrailsDecl, LimitsDecl
from raf.decl.documents.source import KeyPath

if TYPE_CHECKING:
    from raf.agent.builder import AgentBuilder


def apply_run_settings(linker: LinkSite, agent: AgentBuilder) -> None:
    """Middleware by registered name, usage limits and the tool timeout."""
    decl = linker.decl
    for index, name in enumerate(decl.middleware):
        found = _find_named(
            linker,
            ("middleware", index),
            name,
            linker.bindings.middleware,
            find_middleware,
            registered_middleware,
            what="middleware",
            how_to_add="raf.register_middleware(name, middleware) or "
            "DeclAgentBuilder.with_middleware",
        )
        if found is not None:
            agent.use_middleware(found)
    if decl.guardrails is not None:
        _apply_guardrails(linker, agent, decl.guardrails)
    limits = decl.usage_limits
    if limits is not None:
        agent.with_usage_limits(
            _limits(limits), session=_limits(limits.session) if limits.session else None
        )
    if decl.tool_timeout is not None:
        agent.with_tool_timeout(decl.tool_timeout)


def _apply_guardrails(linker: LinkSite, agent: AgentBuilder, decl: GuardrailsDecl) -> None:
    """Each name of `guardrails:` resolved and added to the agent, in its list's place."""
    from raf.agent.guardrails import ToolGuardrail, find_guardrail, registered_guardrails

    for kind in ("input", "output", "tools"):
        for index, name in enumerate(getattr(decl, kind)):
            where = ("guardrails", kind, index)
            found = _find_named(
                linker,
                where,
                name,
                linker.bindings.guardrails,
                find_guardrail,
                registered_guardrails,
                what="guardrail",
                how_to_add="raf.register_guardrail(name, guardrail) or "
                "DeclAgentBuilder.with_guardrail",
            )
            if found is None:
                continue
            is_tool = isinstance(found, ToolGuardrail)
            if is_tool != (kind == "tools"):
                linker.fail(
                    where,
                    f"guardrail {name!r} is a ToolGuardrail: list it under `tools`"
                    if is_tool
                    else f"guardrail {name!r} checks text, not tool calls: list it "
                    "under `input` or `output`",
                )
            elif kind == "input":
                agent.with_input_guardrail(found, name=name)
            elif kind == "output":
                agent.with_output_guardrail(found, name=name)
            else:
                agent.with_tool_guardrail(found)


def _find_named(
    linker: LinkSite,
    where: KeyPath,
    name: str,
    local: Mapping[str, Any],
    find: Callable[[str], Any],
    registered: Callable[[], Iterable[str]],
    *,
    what: str,
    how_to_add: str,
) -> Any:
    """The thing given to the builder as `name`, else the one registered globally; None
    (and a located problem naming the near and known names) when neither has it."""
    found = local.get(name)
    if found is not None:
        return found
    try:
        return find(name)
    except KeyError:
        known = [*local, *registered()]
        near = suggest(name, known)
        hint = f"; did you mean {near!r}?" if near else ""
        listed = ", ".join(sorted(set(known))) or "none"
        linker.fail(
            where,
            f"no {what} is registered as {name!r}{hint} (registered: {listed}; "
            f"add one with {how_to_add})",
        )
        return None


def _limits(decl: LimitsDecl) -> UsageLimits | None:
    limits = UsageLimits(
        requests=decl.requests,
        tool_calls=decl.tool_calls,
        input_tokens=decl.input_tokens,
        output_tokens=decl.output_tokens,
        total_tokens=decl.total_tokens,
    )
    return None if limits.is_empty else limits
