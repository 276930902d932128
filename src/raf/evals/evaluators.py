"""The built-in evaluators: answer matches, typed output, tool-call trajectory and limits."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from raf.core.contents import FunctionCallContent
from raf.core.errors import ConfigurationError
from raf.evals.case import EvaluationResult, EvaluatorContext, ExpectedCall
from raf.evals.evaluator import output_json

_MISSING: Any = object()


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: Any) -> str:
    """A value in a reason: strings quoted, the rest as JSON, long ones cut."""
    return repr(_short(value)) if isinstance(value, str) else _short(value)


def _verdict(name: str, passed: bool, reason: str, score: float | None = None) -> EvaluationResult:
    return EvaluationResult(
        name=name, passed=passed, score=float(passed) if score is None else score, reason=reason
    )


@dataclass(kw_only=True, slots=True)
class Equals:
    """The answer equals `value` (the case's expected output when not given); text is
    compared without surrounding space, and without case when `ignore_case`."""

    value: Any = _MISSING
    ignore_case: bool = False
    name: str = "equals"

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        expected = ctx.expected_output if self.value is _MISSING else self.value
        if expected is None:
            raise ValueError("equals has no value and the case no expected_output")
        if isinstance(expected, str):
            got = ctx.text.strip()
            want = expected.strip()
            if self.ignore_case:
                got, want = got.casefold(), want.casefold()
            ok = got == want
        else:
            try:
                got_value = output_json(ctx)
            except ValueError:
                return _verdict(self.name, False, f"the answer is not JSON: {_short(ctx.text)}")
            ok = _normal(got_value) == _normal(expected)
        if ok:
            return _verdict(self.name, True, f"the answer equals {_short(expected)}")
        got = ctx.text if isinstance(ctx.output, str) else ctx.output
        return _verdict(self.name, False, f"expected {_shown(expected)}, got {_shown(got)}")

    def to_spec(self) -> Any:
        if self.value is _MISSING and not self.ignore_case:
            return "equals"
        spec: dict[str, Any] = {}
        if self.value is not _MISSING:
            spec["value"] = self.value
        if self.ignore_case:
            spec["ignore_case"] = True
        return {"equals": spec}


@dataclass(kw_only=True, slots=True)
class Contains:
    """The answer's text contains `value` (or every one of a list; `any_of` for one of
    them); the case's expected output when not given. Case is ignored unless told."""

    value: str | list[str] | None = None
    any_of: bool = False
    ignore_case: bool = True
    name: str = "contains"

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        wanted = self.value if self.value is not None else ctx.expected_output
        if wanted is None:
            raise ValueError("contains has no value and the case no expected_output")
        needles = [str(w) for w in wanted] if isinstance(wanted, list) else [str(wanted)]
        text = ctx.text.casefold() if self.ignore_case else ctx.text
        found = [n for n in needles if (n.casefold() if self.ignore_case else n) in text]
        missing = [n for n in needles if n not in found]
        ok = bool(found) if self.any_of else not missing
        score = len(found) / len(needles)
        if ok:
            return _verdict(self.name, True, f"found {', '.join(map(repr, found))}", score)
        shown = needles if self.any_of else missing
        which = "none of" if self.any_of else "missing"
        return _verdict(
            self.name,
            False,
            f"{which} {', '.join(map(repr, shown))} in {_short(ctx.text)!r}",
            0.0 if self.any_of else score,
        )

    def to_spec(self) -> Any:
        if self.value is None and not self.any_of and self.ignore_case:
            return "contains"
        spec: dict[str, Any] = {}
        if self.value is not None:
            spec["value"] = self.value
        if self.any_of:
            spec["any_of"] = True
        if not self.ignore_case:
            spec["ignore_case"] = False
        return {"contains": spec}


@dataclass(kw_only=True, slots=True)
class Regex:
    """The answer's text matches `pattern` somewhere (`full` for the whole text)."""

    pattern: str
    ignore_case: bool = False
    full: bool = False
    name: str = "regex"

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ConfigurationError(
                f"regex {self.pattern!r} is not a valid pattern: {exc}"
            ) from None

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        flags = re.IGNORECASE if self.ignore_case else 0
        text = ctx.text.strip()
        found = (re.fullmatch if self.full else re.search)(self.pattern, text, flags)
        if found:
            return _verdict(self.name, True, f"/{self.pattern}/ matched {found.group(0)!r}")
        return _verdict(self.name, False, f"/{self.pattern}/ did not match {_short(text)!r}")

    def to_spec(self) -> Any:
        if not self.ignore_case and not self.full:
            return {"regex": self.pattern}
        spec = {"pattern": self.pattern, "ignore_case": self.ignore_case, "full": self.full}
        return {"regex": spec}


@dataclass(kw_only=True, slots=True)
class MatchesSchema:
    """The answer is JSON valid against a JSON Schema (needs the `jsonschema` package)."""

    schema: dict[str, Any]
    name: str = "json_schema"

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        try:
            import jsonschema
        except ImportError as exc:  # pragma: no cover - jsonschema is in the evals extra
            from raf.core.errors import MissingExtraError

            raise MissingExtraError("the json_schema evaluator", "evals", "jsonschema") from exc
        try:
            data = output_json(ctx)
        except ValueError:
            return _verdict(self.name, False, f"the answer is not JSON: {_short(ctx.text)!r}")
        errors = sorted(
            jsonschema.Draft202012Validator(self.schema).iter_errors(data),
            key=lambda e: list(e.absolute_path),
        )
        if not errors:
            return _verdict(self.name, True, "the answer matches the schema")
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return _verdict(self.name, False, f"at {where}: {first.message}{more}")

    def to_spec(self) -> Any:
        return {"json_schema": self.schema}


@dataclass(kw_only=True, slots=True)
class IsType:
    """The answer validates as `type_` (a pydantic model, dataclass, TypedDict, scalar…);
    `ref` (`module:Name`) is how a dataset file names the type."""

    type_: Any
    ref: str | None = None
    name: str = "typed_output"

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        from pydantic import TypeAdapter, ValidationError

        adapter: TypeAdapter[Any] = TypeAdapter(self.type_)
        shown = getattr(self.type_, "__name__", str(self.type_))
        try:
            if isinstance(ctx.output, str):
                adapter.validate_json(ctx.text.strip())
            else:
                adapter.validate_python(ctx.output)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            return _verdict(self.name, False, f"not a {shown}: at {where}: {first['msg']}")
        return _verdict(self.name, True, f"the answer is a valid {shown}")

    def to_spec(self) -> Any:
        if self.ref is None:
            module = getattr(self.type_, "__module__", "")
            qualname = getattr(self.type_, "__qualname__", "")
            if not module or not qualname or "<" in qualname:
                raise ValueError(f"the type {self.type_!r} cannot be named in a dataset file")
            return {"typed_output": f"{module}:{qualname}"}
        return {"typed_output": self.ref}


TrajectoryOrder = Literal["exact", "in_order", "any_order"]


@dataclass(kw_only=True, slots=True)
class ToolCalls:
    """The tools the run called match the expected calls (the case's when not given).

    `order`: `exact` (the same calls, in this order, nothing else), `in_order` (these
    calls in this order, others between allowed) or `any_order` (each expected call made,
    in any order, others allowed). With no calls expected, the run must call no tool.
    `approvals`, when given, are the tools whose calls must have asked for approval."""

    calls: list[ExpectedCall] | None = None
    order: TrajectoryOrder = "in_order"
    approvals: list[str] | None = None
    name: str = "tool_calls"

    def __post_init__(self) -> None:
        if self.order not in ("exact", "in_order", "any_order"):
            raise ConfigurationError(
                f"tool_calls order must be exact, in_order or any_order, got {self.order!r}"
            )

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        expected = self.calls if self.calls is not None else ctx.case.expected_tool_calls
        made = ctx.tool_calls
        made_text = ", ".join(_call_text(c) for c in made) or "no tool"
        problems: list[str] = []
        matched = 0
        if not expected:
            if made:
                problems.append(f"expected no tool call, got {made_text}")
        elif self.order == "any_order":
            free = list(made)
            for want in expected:
                hit = next((c for c in free if _call_matches(want, c) is None), None)
                if hit is None:
                    problems.append(f"no call {_expected_text(want)}{_near(want, free)}")
                else:
                    free.remove(hit)
                    matched += 1
        else:
            position = 0
            for want in expected:
                found = None
                while position < len(made):
                    call = made[position]
                    position += 1
                    if _call_matches(want, call) is None:
                        found = call
                        break
                    if self.order == "exact":
                        break
                if found is None:
                    problems.append(f"no call {_expected_text(want)}{_near(want, made)}")
                    if self.order == "exact":
                        break
                else:
                    matched += 1
            if self.order == "exact" and not problems and len(made) != len(expected):
                problems.append(f"{len(made)} calls made, {len(expected)} expected")
        if self.approvals is not None:
            asked = ctx.approvals_asked
            if sorted(asked) != sorted(self.approvals):
                wanted = ", ".join(self.approvals) or "none"
                got = ", ".join(asked) or "none"
                problems.append(f"approvals asked for {got}, expected {wanted}")
        score = matched / len(expected) if expected else float(not problems)
        if problems:
            return _verdict(self.name, False, f"{'; '.join(problems)} (made: {made_text})", score)
        return _verdict(self.name, True, f"made {made_text}", 1.0)

    def to_spec(self) -> Any:
        spec: dict[str, Any] = {}
        if self.calls is not None:
            spec["calls"] = [c.to_dict() for c in self.calls]
        if self.order != "in_order":
            spec["order"] = self.order
        if self.approvals is not None:
            spec["approvals"] = self.approvals
        return {"tool_calls": spec} if spec else "tool_calls"


def _call_text(call: FunctionCallContent) -> str:
    args = ", ".join(f"{k}={_short(v, 30)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _expected_text(call: ExpectedCall) -> str:
    args = ", ".join(f"{k}={_short(v, 30)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _near(want: ExpectedCall, made: list[FunctionCallContent]) -> str:
    """Why the closest call (same tool) did not match, if there is one."""
    for call in made:
        if call.name == want.name:
            why = _call_matches(want, call)
            return f" ({why})" if why else ""
    return ""


def _call_matches(want: ExpectedCall, call: FunctionCallContent) -> str | None:
    """None when `call` satisfies `want`, else what differs."""
    if call.name != want.name:
        return f"tool {call.name!r} is not {want.name!r}"
    for key, matcher in want.arguments.items():
        if key not in call.arguments:
            if isinstance(matcher, dict) and matcher == {"any": False}:
                continue
            return f"argument {key!r} missing"
        why = argument_matches(matcher, call.arguments[key])
        if why is not None:
            return f"argument {key!r}: {why}"
    return None


def _normal(value: Any) -> Any:
    """A value compared loosely: strings stripped and case-folded, JSON-equal numbers."""
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value


_OPERATORS = ("contains", "regex", "any", "one_of", "gte", "lte", "equals")


def argument_matches(matcher: Any, value: Any) -> str | None:
    """None when an argument's `value` satisfies `matcher`, else why not."""
    if isinstance(matcher, dict) and len(matcher) == 1 and next(iter(matcher)) in _OPERATORS:
        op, operand = next(iter(matcher.items()))
        if op == "any":
            return None
        if op == "equals":
            return (
                argument_matches(operand, value)
                if not isinstance(operand, dict)
                else (None if value == operand else f"{_short(value)} is not {_short(operand)}")
            )
        if op == "contains":
            ok = str(operand).casefold() in str(value).casefold()
            return None if ok else f"{_short(value)!r} does not contain {operand!r}"
        if op == "regex":
            ok = re.search(str(operand), str(value)) is not None
            return None if ok else f"{_short(value)!r} does not match /{operand}/"
        if op == "one_of":
            options = operand if isinstance(operand, list) else [operand]
            ok = any(_normal(value) == _normal(o) for o in options)
            return None if ok else f"{_short(value)} is not one of {_short(options)}"
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"{_short(value)} is not a number"
        if op == "gte":
            return None if number >= float(operand) else f"{number:g} < {operand}"
        return None if number <= float(operand) else f"{number:g} > {operand}"
    if _normal(value) == _normal(matcher):
        return None
    if isinstance(value, str) and not isinstance(matcher, str):
        try:  # a model that sent "3" for 3
            if _normal(json.loads(value)) == _normal(matcher):
                return None
        except ValueError:
            pass
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(matcher, str) and number and matcher.strip() == f"{value:g}":
        return None
    return f"{_short(value)} is not {_short(matcher)}"


@dataclass(kw_only=True, slots=True)
class Price:
    """What a model costs, per million tokens, to turn usage into money."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


@dataclass(kw_only=True, slots=True)
class Limits:
    """The run stayed within limits: seconds, tokens, model requests and cost (which
    needs `price`). A limit left out is not checked."""

    latency: float | None = None
    """Seconds the target may take."""
    tokens: int | None = None
    """Total tokens (input and output) of the run."""
    output_tokens: int | None = None
    requests: int | None = None
    """Model calls."""
    cost: float | None = None
    price: Price | None = None
    name: str = "limits"

    def __post_init__(self) -> None:
        if self.cost is not None and self.price is None:
            raise ConfigurationError("limits: a cost limit needs a price (per million tokens)")
        if all(
            v is None
            for v in (self.latency, self.tokens, self.output_tokens, self.requests, self.cost)
        ):
            raise ConfigurationError(
                "limits: set at least one of latency, tokens, output_tokens, requests, cost"
            )

    async def evaluate(self, ctx: EvaluatorContext) -> EvaluationResult:
        usage = ctx.usage
        input_tokens = usage.input_tokens if usage else 0
        output_tokens = usage.output_tokens if usage else 0
        total = (usage.total_tokens or input_tokens + output_tokens) if usage else 0
        over: list[str] = []
        within: list[str] = []

        def check(label: str, value: float, limit: float | None, unit: str = "") -> None:
            if limit is None:
                return
            text = f"{label} {value:g}{unit} (limit {limit:g}{unit})"
            (over if value > limit else within).append(text)

        check("latency", round(ctx.duration, 3), self.latency, "s")
        check("tokens", total, self.tokens)
        check("output tokens", output_tokens, self.output_tokens)
        check("requests", ctx.requests, self.requests)
        if self.cost is not None and self.price is not None:
            check("cost", round(self.price.cost(input_tokens, output_tokens), 6), self.cost)
        if over:
            return _verdict(self.name, False, "over: " + "; ".join(over))
        return _verdict(self.name, True, "within: " + "; ".join(within))

    def to_spec(self) -> Any:
        spec: dict[str, Any] = {}
        for key in ("latency", "tokens", "output_tokens", "requests", "cost"):
            value = getattr(self, key)
            if value is not None:
                spec[key] = value
        if self.price is not None:
            spec["price"] = {
                "input_per_million": self.price.input_per_million,
                "output_per_million": self.price.output_per_million,
            }
        return {"limits": spec}
