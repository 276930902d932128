"""Each built-in evaluator on a passing and a failing run, with the reason it gives."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from raf.core.contents import ApprovalRequestContent, FunctionCallContent
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.usage import UsageDetails
from raf.evals import (
    Case,
    Contains,
    Equals,
    EvaluationResult,
    EvaluatorContext,
    ExpectedCall,
    FunctionEvaluator,
    IsType,
    Limits,
    MatchesSchema,
    Price,
    Regex,
    ToolCalls,
)
from raf.evals.evaluator import run_evaluator


def ctx(
    text: str = "",
    *,
    expected: Any = None,
    calls: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
    approvals: list[str] = (),  # type: ignore[assignment]
    expected_calls: list[ExpectedCall] = (),  # type: ignore[assignment]
    output: Any = None,
    usage: UsageDetails | None = None,
    duration: float = 0.1,
    requests: int = 1,
) -> EvaluatorContext:
    contents: list[Any] = [
        FunctionCallContent(call_id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)
    ]
    contents += [ApprovalRequestContent(call_id=f"a{i}", name=n) for i, n in enumerate(approvals)]
    messages = [ChatMessage(role=Role.ASSISTANT, contents=contents)] if contents else []
    messages.append(ChatMessage.assistant(text))
    case = Case(
        name="c", input="q", expected_output=expected, expected_tool_calls=list(expected_calls)
    )
    return EvaluatorContext(
        case=case,
        output=text if output is None else output,
        text=text,
        messages=messages,
        usage=usage,
        duration=duration,
        requests=requests,
    )


async def test_equals_compares_text_to_the_expected_output() -> None:
    passed = await Equals().evaluate(ctx(" Paris ", expected="Paris"))
    failed = await Equals().evaluate(ctx("Lyon", expected="Paris"))
    assert (passed.passed, passed.score) == (True, 1.0)
    assert (failed.passed, failed.score) == (False, 0.0)
    assert "expected 'Paris'" in failed.reason or "expected Paris" in failed.reason
    assert "Lyon" in failed.reason
    assert (await Equals(value="paris", ignore_case=True).evaluate(ctx("PARIS"))).passed


async def test_equals_compares_json_answers_to_structured_expectations() -> None:
    assert (await Equals(value={"a": 1}).evaluate(ctx('{"a": 1.0}'))).passed
    bad = await Equals(value={"a": 1}).evaluate(ctx("not json"))
    assert not bad.passed and "not JSON" in bad.reason


async def test_contains_all_or_any_and_partial_score() -> None:
    result = await Contains(value=["Paris", "France"]).evaluate(ctx("paris is nice"))
    assert not result.passed and result.score == 0.5 and "'France'" in result.reason
    assert (await Contains(value=["x", "nice"], any_of=True).evaluate(ctx("nice"))).passed
    assert (await Contains().evaluate(ctx("It is PARIS.", expected="Paris"))).passed
    assert not (await Contains(ignore_case=False).evaluate(ctx("PARIS", expected="Paris"))).passed


async def test_regex_matches_anywhere_or_the_whole_answer() -> None:
    assert (await Regex(pattern=r"\b4\b").evaluate(ctx("It is 4."))).passed
    full = await Regex(pattern=r"4", full=True).evaluate(ctx("It is 4."))
    assert not full.passed and "did not match" in full.reason
    with pytest.raises(ConfigurationError, match="not a valid pattern"):
        Regex(pattern="(")


async def test_json_schema_names_the_failing_path() -> None:
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer"}},
        "required": ["age"],
    }
    assert (await MatchesSchema(schema=schema).evaluate(ctx('{"age": 3}'))).passed
    bad = await MatchesSchema(schema=schema).evaluate(ctx('```json\n{"age": "x"}\n```'))
    assert not bad.passed and bad.reason.startswith("at age:")


class Person(BaseModel):
    name: str
    age: int


async def test_typed_output_validates_text_or_value() -> None:
    assert (await IsType(type_=Person).evaluate(ctx('{"name": "a", "age": 3}'))).passed
    value = Person(name="a", age=3)
    assert (await IsType(type_=Person).evaluate(ctx("", output=value.model_dump()))).passed
    bad = await IsType(type_=Person).evaluate(ctx('{"name": "a"}'))
    assert not bad.passed and "not a Person" in bad.reason and "age" in bad.reason


async def test_tool_calls_in_order_with_argument_matchers() -> None:
    run = ctx(calls=[("search", {"q": "Paris weather"}), ("add", {"a": 2, "b": "3"})])
    expected = [
        ExpectedCall(name="search", arguments={"q": {"contains": "paris"}}),
        ExpectedCall(name="add", arguments={"a": 2, "b": 3}),
    ]
    assert (await ToolCalls(calls=expected).evaluate(run)).passed
    swapped = await ToolCalls(calls=list(reversed(expected))).evaluate(run)
    assert not swapped.passed and swapped.score == 0.5
    assert (await ToolCalls(calls=list(reversed(expected)), order="any_order").evaluate(run)).passed


async def test_tool_calls_exact_rejects_extra_calls_and_says_why() -> None:
    run = ctx(calls=[("add", {"a": 2, "b": 2}), ("add", {"a": 1, "b": 1})])
    exact = await ToolCalls(calls=[ExpectedCall(name="add")], order="exact").evaluate(run)
    assert not exact.passed and "2 calls made, 1 expected" in exact.reason
    wrong = await ToolCalls(calls=[ExpectedCall(name="add", arguments={"a": {"gte": 5}})]).evaluate(
        run
    )
    assert not wrong.passed and "argument 'a'" in wrong.reason


async def test_tool_calls_uses_the_case_expectations_and_no_call_means_none() -> None:
    expected = [ExpectedCall(name="weather", arguments={"city": "Oslo"})]
    assert (
        await ToolCalls().evaluate(
            ctx(calls=[("weather", {"city": "oslo "})], expected_calls=expected)
        )
    ).passed
    refused = await ToolCalls().evaluate(ctx(calls=[("weather", {"city": "x"})]))
    assert not refused.passed and "expected no tool call" in refused.reason
    assert (await ToolCalls().evaluate(ctx("I cannot do that"))).passed


async def test_tool_calls_checks_approvals_asked() -> None:
    run = ctx(approvals=["delete_file"])
    assert (await ToolCalls(calls=[], approvals=["delete_file"]).evaluate(run)).passed
    missing = await ToolCalls(calls=[], approvals=["delete_file"]).evaluate(ctx())
    assert not missing.passed and "approvals asked for none" in missing.reason


async def test_limits_on_latency_tokens_requests_and_cost() -> None:
    usage = UsageDetails(input_tokens=1000, output_tokens=500, total_tokens=1500)
    run = ctx(usage=usage, duration=2.0, requests=3)
    assert (await Limits(latency=3, tokens=2000, requests=3).evaluate(run)).passed
    over = await Limits(latency=1, requests=2).evaluate(run)
    assert not over.passed and "latency 2s (limit 1s)" in over.reason
    assert "requests 3 (limit 2)" in over.reason
    price = Price(input_per_million=10.0, output_per_million=30.0)  # 0.01 + 0.015
    assert (await Limits(cost=0.03, price=price).evaluate(run)).passed
    assert not (await Limits(cost=0.02, price=price).evaluate(run)).passed
    with pytest.raises(ConfigurationError, match="needs a price"):
        Limits(cost=1.0)


async def test_custom_functions_return_bool_score_pair_or_result() -> None:
    def short(c: EvaluatorContext) -> bool:
        return len(c.text) < 10

    async def scored(c: EvaluatorContext) -> float:
        return 0.25

    def pair(c: EvaluatorContext) -> tuple[bool, str]:
        return False, "too polite"

    assert (await FunctionEvaluator(short).evaluate(ctx("hi"))).passed
    result = await FunctionEvaluator(scored).evaluate(ctx("hi"))
    assert result.score == 0.25 and not result.passed
    assert (await FunctionEvaluator(pair).evaluate(ctx("hi"))).reason == "too polite"
    full = EvaluationResult(name="x", passed=True, score=1.0, reason="r")
    assert await FunctionEvaluator(lambda c: full).evaluate(ctx()) is full


async def test_an_evaluator_that_raises_is_an_errored_result() -> None:
    def broken(c: EvaluatorContext) -> bool:
        raise KeyError("nope")

    result = await run_evaluator(FunctionEvaluator(broken), ctx())
    assert result.errored and not result.passed and "KeyError" in (result.error or "")
    odd = await run_evaluator(FunctionEvaluator(lambda c: "yes"), ctx())
    assert odd.errored and "return a bool" in (odd.error or "")
    no_value = await run_evaluator(Equals(), ctx("x"))
    assert no_value.errored and "no expected_output" in (no_value.error or "")
