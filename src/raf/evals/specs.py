"""Evaluators as a dataset file writes them: `contains`, `{regex: "^4$"}`, `{judge: {...}}`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from raf.evals.case import Evaluator, ExpectedCall
from raf.evals.evaluator import FunctionEvaluator
from raf.evals.evaluators import (
    Contains,
    Equals,
    IsType,
    Limits,
    MatchesSchema,
    Price,
    Regex,
    ToolCalls,
)
from raf.evals.judge import LLMJudge


class SpecError(ValueError):
    """An evaluator spec is wrong; `key` is the path inside the spec, when known."""

    def __init__(self, message: str, key: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.key = key


def _params(name: str, value: Any, allowed: set[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SpecError(f"{name}: expected a mapping of settings, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise SpecError(
            f"{name}: unknown setting {unknown[0]!r}; use {', '.join(sorted(allowed))}",
            (unknown[0],),
        )
    return dict(value)


def import_ref(ref: Any, what: str) -> Any:
    """The object a `module:name` reference names."""
    if not isinstance(ref, str) or ":" not in ref:
        raise SpecError(f"{what} must be written module:name, got {ref!r}")
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(f"{what} {ref!r}: cannot import {module_name!r}: {exc}") from None
    found: Any = module
    for part in attr.split("."):
        if not hasattr(found, part):
            raise SpecError(f"{what} {ref!r}: {module_name!r} has no {attr!r}")
        found = getattr(found, part)
    return found


def _equals(value: Any) -> Evaluator:
    if isinstance(value, dict):
        params = _params("equals", value, {"value", "ignore_case", "name"})
        return Equals(**params)
    return Equals() if value is None else Equals(value=value)


def _contains(value: Any) -> Evaluator:
    if isinstance(value, str | list):
        return Contains(value=value)
    return Contains(**_params("contains", value, {"value", "any_of", "ignore_case", "name"}))


def _regex(value: Any) -> Evaluator:
    if isinstance(value, str):
        return Regex(pattern=value)
    params = _params("regex", value, {"pattern", "ignore_case", "full", "name"})
    if "pattern" not in params:
        raise SpecError("regex: a pattern is needed")
    return Regex(**params)


def _schema(value: Any) -> Evaluator:
    if not isinstance(value, dict):
        raise SpecError("json_schema: expected a JSON Schema (a mapping)")
    return MatchesSchema(schema=value)


def _typed(value: Any) -> Evaluator:
    return IsType(type_=import_ref(value, "typed_output"), ref=value)


def _calls(value: Any) -> Evaluator:
    params = _params("tool_calls", value, {"calls", "order", "approvals", "name"})
    calls = params.pop("calls", None)
    expected: list[ExpectedCall] | None = None
    if calls is not None:
        if not isinstance(calls, list):
            raise SpecError("tool_calls: calls must be a list", ("calls",))
        expected = []
        for index, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise SpecError("a call needs a name", ("calls", index))
            extra = sorted(set(call) - {"name", "arguments"})
            if extra:
                raise SpecError(f"unknown key {extra[0]!r}", ("calls", index, extra[0]))
            arguments = call.get("arguments") or {}
            if not isinstance(arguments, dict):
                raise SpecError("arguments must be a mapping", ("calls", index, "arguments"))
            expected.append(ExpectedCall(name=call["name"], arguments=arguments))
    approvals = params.get("approvals")
    if approvals is not None and not (
        isinstance(approvals, list) and all(isinstance(a, str) for a in approvals)
    ):
        raise SpecError("approvals must be a list of tool names", ("approvals",))
    return ToolCalls(calls=expected, **params)


def _limits(value: Any) -> Evaluator:
    params = _params(
        "limits",
        value,
        {"latency", "tokens", "output_tokens", "requests", "cost", "price", "name"},
    )
    price = params.pop("price", None)
    if price is not None:
        price_params = _params("price", price, {"input_per_million", "output_per_million"})
        try:
            params["price"] = Price(**price_params)
        except TypeError:
            raise SpecError(
                "price needs input_per_million and output_per_million", ("price",)
            ) from None
    return Limits(**params)


def _judge(value: Any) -> Evaluator:
    if isinstance(value, str):
        return LLMJudge(value)
    params = _params(
        "judge", value, {"rubric", "model", "include_input", "include_expected", "name"}
    )
    rubric = params.pop("rubric", None)
    if not isinstance(rubric, str) or not rubric.strip():
        raise SpecError("judge: a rubric is needed", ("rubric",))
    return LLMJudge(rubric, **params)


def _function(value: Any) -> Evaluator:
    function = import_ref(value, "function")
    if not callable(function):
        raise SpecError(f"function {value!r} is not callable")
    return FunctionEvaluator(function, ref=value)


BUILDERS: dict[str, Callable[[Any], Evaluator]] = {
    "equals": _equals,
    "contains": _contains,
    "regex": _regex,
    "json_schema": _schema,
    "typed_output": _typed,
    "tool_calls": _calls,
    "limits": _limits,
    "judge": _judge,
    "function": _function,
}
BARE = ("equals", "contains", "tool_calls")
"""Evaluators that can be written as a bare name (they read the case's expectations)."""


def evaluator_from_spec(spec: Any) -> Evaluator:
    """The evaluator a dataset file's entry describes; raises `SpecError`."""
    if isinstance(spec, str):
        if spec not in BARE:
            raise SpecError(
                f"unknown evaluator {spec!r} (as a bare name use one of {', '.join(BARE)}; "
                f"the others take settings: {', '.join(k for k in BUILDERS if k not in BARE)})"
            )
        return BUILDERS[spec](None)
    if not isinstance(spec, dict) or len(spec) != 1:
        raise SpecError("an evaluator is a name or a mapping with one key (the evaluator's name)")
    name, value = next(iter(spec.items()))
    builder = BUILDERS.get(name)
    if builder is None:
        raise SpecError(f"unknown evaluator {name!r}; use one of {', '.join(BUILDERS)}", (name,))
    try:
        return builder(value)
    except SpecError as exc:
        raise SpecError(str(exc), (name, *exc.key)) from None
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{name}: {exc}", (name,)) from None
    except Exception as exc:  # a ConfigurationError from an evaluator's own checks
        message = getattr(exc, "message", str(exc))
        raise SpecError(f"{name}: {message}", (name,)) from None
