"""Guardrails on a run: input (before the model sees the request), output (on the final
answer) and tool guardrails (before and after each tool call), as middleware.

An input or output guardrail is a function of the text (`(text) -> GuardrailResult`, sync
or async) or an agent: the agent is sent the text with the verdict protocol below and
answers `PASS`, or `FAIL: <reason>`; any other answer counts as a trip, so a confused
judge never lets text through. A tripped input or output guardrail ends the run with
`InputGuardrailTripped` / `OutputGuardrailTripped`; the run raised, so nothing of the turn
is stored. A tool guardrail refuses a call (the model reads the refusal as the tool's
result) or replaces what the tool returned.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from raf.core.errors import ConfigurationError, RafError
from raf.core.guardrails import (
    GUARDRAIL_EVENTS_KEY,
    GuardrailResult,
    InputGuardrailTripped,
    OutputGuardrailTripped,
)
from raf.core.messages import ChatMessage, Role
from raf.core.middleware import (
    AgentRunContext,
    CallNext,
    FunctionInvocationContext,
    MiddlewareSet,
    agent_middleware,
    function_middleware,
    local_middleware,
)
from raf.core.options import AgentRunOptions
from raf.core.registry import NamedRegistry
from raf.core.responses import FinishReason
from raf.core.run_context import RunContext
from raf.core.tools import ToolResult

TextCheck = Callable[[str], GuardrailResult | Awaitable[GuardrailResult]]
"""An input or output guardrail function: the text in, a verdict out."""
ToolCheck = Callable[[FunctionInvocationContext], GuardrailResult | Awaitable[GuardrailResult]]
"""A tool guardrail function: the call (and after it, its `result`) in, a verdict out."""

VERDICT_PROMPT = (
    "You are a guardrail. Judge the text between the markers below. Answer with one "
    "line: PASS if it is acceptable, or FAIL: followed by the reason if it is not.\n"
    "<<<TEXT\n{text}\nTEXT>>>"
)
"""What an agent guardrail is sent; its own instructions say what to judge by."""


def parse_verdict(answer: str) -> GuardrailResult:
    """An agent guardrail's answer as a verdict: `PASS`, or `FAIL: reason`; anything else
    trips, quoting the answer."""
    text = answer.strip()
    word = text.split(maxsplit=1)[0].rstrip(":.,").upper() if text else ""
    if word == "PASS":
        return GuardrailResult.passed()
    if word == "FAIL":
        reason = text[4:].lstrip(" :.-\t\n")
        return GuardrailResult.trip(reason or "the guardrail agent failed the text")
    return GuardrailResult.trip(
        f"the guardrail agent answered neither PASS nor FAIL: {text[:200]!r}"
    )


def _is_agent(check: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(check, "run", None)) and hasattr(
        check, "create_session"
    )


@dataclass(kw_only=True, slots=True)
class TextGuardrail:
    """An input or output guardrail: a function of the text, or an agent that judges it."""

    name: str
    check: Any
    """A `TextCheck`, or an agent."""

    @classmethod
    def of(cls, check: Any, name: str | None = None) -> TextGuardrail:
        """A guardrail from a function, an agent, or one already made (renamed by `name`)."""
        if isinstance(check, TextGuardrail):
            return cls(name=name or check.name, check=check.check)
        if not (_is_agent(check) or callable(check)):
            raise ConfigurationError(
                f"a guardrail must be a function (text) -> GuardrailResult or an agent, got "
                f"{check!r}"
            )
        found = name or getattr(check, "name", None) or getattr(check, "__name__", None)
        return cls(name=str(found or type(check).__name__), check=check)

    async def evaluate(self, text: str, run: RunContext | None = None) -> GuardrailResult:
        if _is_agent(self.check):
            options = AgentRunOptions(cancellation=run.cancellation if run else None)
            response = await self.check.run(VERDICT_PROMPT.format(text=text), options=options)
            return parse_verdict(response.text)
        return _checked(self.name, await _maybe_await(self.check(text)))


@dataclass(kw_only=True, slots=True)
class ToolGuardrail:
    """Checks around tool calls: `before` may refuse a call, `after` may refuse or replace
    its result; `tools` limits it to those tool names (None: every tool)."""

    before: ToolCheck | None = None
    after: ToolCheck | None = None
    tools: frozenset[str] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.before is None and self.after is None:
            raise ConfigurationError("a ToolGuardrail needs a `before` check, an `after`, or both")
        if self.tools is not None and not isinstance(self.tools, frozenset):
            if isinstance(self.tools, str):
                raise ConfigurationError(
                    f"ToolGuardrail(tools=...) takes a list of tool names, got {self.tools!r}"
                )
            self.tools = frozenset(self.tools)
        if not self.name:
            check = self.before or self.after
            self.name = str(getattr(check, "__name__", "") or "tool_guardrail")

    def applies(self, tool_name: str) -> bool:
        return self.tools is None or tool_name in self.tools


def guardrail_middleware(
    *,
    input: Sequence[TextGuardrail] = (),
    output: Sequence[TextGuardrail] = (),
    tools: Sequence[ToolGuardrail] = (),
) -> MiddlewareSet:
    """The middleware that runs these guardrails; the agent's own (not inherited by
    sub-agents, which have guardrails of their own)."""
    agent: tuple[Any, ...] = ()
    function: tuple[Any, ...] = ()
    if input or output:
        inputs, outputs = tuple(input), tuple(output)

        @local_middleware
        @agent_middleware
        async def guard_run(context: AgentRunContext, call_next: CallNext) -> None:
            text = _request_text(context.messages)
            if inputs and text:
                found = await _first_trip(inputs, text, context.run)
                if found is not None:
                    raise InputGuardrailTripped(guardrail=found[0], reason=found[1])
            await call_next()
            result = context.result
            if not outputs or result is None:
                return
            if result.finish_reason is FinishReason.AWAITING_APPROVAL:
                return  # not an answer yet: the run resumes after the approvals
            found = await _first_trip(outputs, result.text, context.run)
            if found is not None:
                raise OutputGuardrailTripped(guardrail=found[0], reason=found[1], response=result)

        agent = (guard_run,)
    if tools:
        checks = tuple(tools)

        @local_middleware
        @function_middleware
        async def guard_tool(context: FunctionInvocationContext, call_next: CallNext) -> None:
            applying = [g for g in checks if g.applies(context.tool_name)]
            for guardrail in applying:
                if guardrail.before is None:
                    continue
                verdict = _checked(guardrail.name, await _maybe_await(guardrail.before(context)))
                if verdict.tripped:
                    _note(context, guardrail.name, "tool_input", "refused", verdict.reason)
                    context.result = ToolResult.fail(
                        f"the call was refused by guardrail {guardrail.name!r}: {verdict.reason}"
                    )
                    return
            await call_next()
            for guardrail in applying:
                if guardrail.after is None:
                    continue
                verdict = _checked(guardrail.name, await _maybe_await(guardrail.after(context)))
                if verdict.tripped:
                    _note(context, guardrail.name, "tool_output", "withheld", verdict.reason)
                    context.result = ToolResult.fail(
                        f"the result was withheld by guardrail {guardrail.name!r}: {verdict.reason}"
                    )
                    return
                if verdict.replacement is not None:
                    _note(context, guardrail.name, "tool_output", "replaced", verdict.reason)
                    context.result = verdict.replacement

        function = (guard_tool,)
    return MiddlewareSet(agent=agent, function=function)


def _request_text(messages: Iterable[ChatMessage]) -> str:
    return "\n".join(m.text for m in messages if m.role is Role.USER and m.text)


async def _first_trip(
    guardrails: Sequence[TextGuardrail], text: str, run: RunContext
) -> tuple[str, str] | None:
    """Run the guardrails together; the first (in order) that tripped, with its reason."""
    verdicts = await asyncio.gather(*(g.evaluate(text, run) for g in guardrails))
    for guardrail, verdict in zip(guardrails, verdicts, strict=True):
        if verdict.tripped:
            return guardrail.name, verdict.reason
    return None


def _note(
    context: FunctionInvocationContext, name: str, kind: str, action: str, reason: str
) -> None:
    events = context.metadata.setdefault(GUARDRAIL_EVENTS_KEY, [])
    events.append({"name": name, "kind": kind, "action": action, "reason": reason})


def _checked(name: str, verdict: Any) -> GuardrailResult:
    if not isinstance(verdict, GuardrailResult):
        raise RafError(
            f"guardrail {name!r} returned {type(verdict).__name__}; it must return a "
            "GuardrailResult (GuardrailResult.passed() or GuardrailResult.trip(reason))"
        )
    return verdict


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


_REGISTRY: NamedRegistry[Any] = NamedRegistry(
    "guardrail", "raf.register_guardrail(name, guardrail)"
)


def register_guardrail(name: str, guardrail: Any) -> None:
    """Make a guardrail available by name to agent documents (`guardrails:`): a function
    of the text or an agent (for `input` and `output`), or a `ToolGuardrail` (for `tools`)."""
    if not isinstance(guardrail, ToolGuardrail):
        TextGuardrail.of(guardrail, name)  # refuse what could never run, now
    _REGISTRY.add(name, guardrail)


def registered_guardrails() -> dict[str, Any]:
    """The guardrails registered by name, as a copy."""
    return _REGISTRY.copy()


def find_guardrail(name: str) -> Any:
    """The guardrail registered as `name`; a KeyError that suggests near names."""
    return _REGISTRY.find(name)
