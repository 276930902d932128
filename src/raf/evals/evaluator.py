"""The evaluator protocol, what an evaluator sees of one run, and what it returns."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from raf.core.contents import ApprovalRequestContent, FunctionCallContent, FunctionResultContent
from raf.core.messages import ChatMessage
from raf.core.usage import UsageDetails
from raf.evals.case import Case


@dataclass(kw_only=True, slots=True)
class EvaluationResult:
    """One evaluator's judgement of one run: a score in [0, 1], pass or fail, and why.

    `error` is set when the evaluator could not judge (it raised, or a judge model gave
    no verdict): such a result never counts as a pass."""

    name: str
    passed: bool
    score: float
    reason: str = ""
    error: str | None = None

    @property
    def errored(self) -> bool:
        return self.error is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "passed": self.passed,
            "score": self.score,
            "reason": self.reason,
        }
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationResult:
        return cls(
            name=str(data["name"]),
            passed=bool(data["passed"]),
            score=float(data["score"]),
            reason=str(data.get("reason", "")),
            error=data.get("error"),
        )


@dataclass(kw_only=True, slots=True)
class EvaluatorContext:
    """What one run of a case produced, as evaluators read it."""

    case: Case
    output: Any
    """The answer: the typed value when the target returned one, else its text."""
    text: str = ""
    """The answer's text."""
    messages: list[ChatMessage] = field(default_factory=list)
    """The run's transcript: the model's messages, tool calls and results."""
    usage: UsageDetails | None = None
    duration: float = 0.0
    """Seconds the target took."""
    requests: int = 0
    """Model calls the run made (0 when the target does not say)."""

    @property
    def tool_calls(self) -> list[FunctionCallContent]:
        return [c for m in self.messages for c in m.function_calls]

    @property
    def tool_results(self) -> list[FunctionResultContent]:
        return [c for m in self.messages for c in m.function_results]

    @property
    def approvals_asked(self) -> list[str]:
        """Names of the tools whose calls asked for approval, in order."""
        found: list[str] = []
        for message in self.messages:
            for content in message.contents:
                if isinstance(content, ApprovalRequestContent):
                    found.append(content.name)
        return found

    @property
    def expected_output(self) -> Any:
        return self.case.expected_output


@runtime_checkable
class Evaluator(Protocol):
    """Judges one run; `to_spec()` is its form in a dataset file."""

    @property
    def name(self) -> str: ...

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult: ...

    def to_spec(self) -> Any: ...


EvaluatorFunction = Callable[[EvaluatorContext], Any]
"""A custom check: returns a bool, a score in [0, 1], `(passed, reason)`, or an
`EvaluationResult`; may be async."""


def result_from(name: str, value: Any) -> EvaluationResult:
    """An `EvaluationResult` from what a custom check returned."""
    if isinstance(value, EvaluationResult):
        return value
    if isinstance(value, bool):
        return EvaluationResult(name=name, passed=value, score=float(value))
    if isinstance(value, int | float):
        score = float(value)
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"a score must be between 0 and 1, got {score}")
        return EvaluationResult(name=name, passed=score >= 0.5, score=score)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], bool)
        and isinstance(value[1], str)
    ):
        return EvaluationResult(name=name, passed=value[0], score=float(value[0]), reason=value[1])
    raise TypeError(
        f"an evaluator returned {type(value).__name__}; return a bool, a score in [0, 1], "
        "(passed, reason) or an EvaluationResult"
    )


class FunctionEvaluator:
    """A custom evaluator from a function of the context (sync or async)."""

    def __init__(
        self, function: EvaluatorFunction, *, name: str | None = None, ref: str | None = None
    ) -> None:
        self.function = function
        self._name: str = name or str(getattr(function, "__name__", "custom"))
        self.ref = ref
        """`module:function` when loaded from a dataset file (written back as such)."""

    @property
    def name(self) -> str:
        return self._name

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        value = self.function(ctx)
        if inspect.isawaitable(value):
            value = await value
        return result_from(self.name, value)

    def to_spec(self) -> Any:
        if self.ref is None:
            module = getattr(self.function, "__module__", None)
            qualname = getattr(self.function, "__qualname__", "")
            if not module or "<" in qualname:
                raise ValueError(
                    f"the custom evaluator {self.name!r} is not a module-level function, so a "
                    "dataset file cannot name it"
                )
            return {"function": f"{module}:{qualname}"}
        return {"function": self.ref}


def as_evaluator(value: Evaluator | EvaluatorFunction) -> Evaluator:
    """An evaluator, or a plain function wrapped as one."""
    if isinstance(value, Evaluator):
        return value
    if callable(value):
        return FunctionEvaluator(value)
    raise TypeError(f"not an evaluator: {value!r}")


async def run_evaluator(evaluator: Evaluator, ctx: EvaluatorContext) -> EvaluationResult:
    """The evaluator's result; one that raises gives an errored result, never a pass."""
    try:
        result = await evaluator.evaluate(ctx)
    except Exception as exc:
        return EvaluationResult(
            name=evaluator.name,
            passed=False,
            score=0.0,
            reason=f"the evaluator raised {type(exc).__name__}",
            error=f"{type(exc).__name__}: {exc}",
        )
    return result


def output_json(ctx: EvaluatorContext) -> Any:
    """The answer as JSON data: the typed value, else the text parsed (fenced blocks too)."""
    if not isinstance(ctx.output, str):
        return ctx.output
    text = ctx.text.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text.split("\n", 1)[1] if "\n" in text else text
    return json.loads(text)
