"""Guardrails as values: a verdict (pass or tripwire with a reason) and the errors a
tripped input or output guardrail ends a run with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from raf.core.errors import RafError
from raf.core.tools import ToolResult

GuardrailKind = Literal["input", "output", "tool_input", "tool_output"]

GUARDRAIL_EVENTS_KEY = "raf.guardrail.events"
"""Where tool guardrails list what they did, in a function middleware context's
`metadata` (tracing turns each into a span event)."""


@dataclass(kw_only=True, slots=True, frozen=True)
class GuardrailResult:
    """A guardrail's verdict: passed, or tripped with the reason; a tool-output guardrail
    may instead pass a replacement result (a redaction) for the model to read."""

    tripped: bool = False
    reason: str = ""
    replacement: ToolResult | None = None

    @classmethod
    def passed(cls) -> GuardrailResult:
        return cls()

    @classmethod
    def trip(cls, reason: str) -> GuardrailResult:
        """A tripwire: the run (or the tool call) stops, and `reason` says why."""
        return cls(tripped=True, reason=reason)

    @classmethod
    def replace(cls, value: Any, reason: str = "") -> GuardrailResult:
        """For a tool-output guardrail: the model reads `value` instead of the result."""
        return cls(replacement=ToolResult.ok(value), reason=reason)


class GuardrailTripped(RafError):
    """A guardrail stopped the run; `guardrail` names it and `reason` says why. Nothing of
    the turn is stored: the session's transcript stays as it was."""

    kind: GuardrailKind = "input"

    def __init__(self, *, guardrail: str, reason: str) -> None:
        self.guardrail = guardrail
        self.reason = reason
        super().__init__(f"{self.kind} guardrail {guardrail!r} tripped: {reason}")

    @property
    def guardrail_event(self) -> dict[str, str]:
        """What tracing records of the trip (as a span event)."""
        return {
            "name": self.guardrail,
            "kind": self.kind,
            "action": "tripped",
            "reason": self.reason,
        }


class InputGuardrailTripped(GuardrailTripped):
    """An input guardrail refused the request before the model saw it."""

    kind: GuardrailKind = "input"


class OutputGuardrailTripped(GuardrailTripped):
    """An output guardrail refused the final answer; `response` is the answer refused."""

    kind: GuardrailKind = "output"

    def __init__(self, *, guardrail: str, reason: str, response: Any = None) -> None:
        super().__init__(guardrail=guardrail, reason=reason)
        self.response = response
