"""Custom evaluators from functions, and running any evaluator so that one that raises
gives an errored result."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from raf.evals.case import EvaluationResult, Evaluator, EvaluatorContext

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
