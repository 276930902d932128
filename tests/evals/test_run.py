"""`Dataset.evaluate` on each kind of target, with concurrency, repeats, tracing and
failures that never stop the other cases."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from raf import Agent, ApprovalRequiredTool, tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    ExpectedCall,
    FunctionEvaluator,
    Limits,
    ProgressBar,
    ToolCalls,
)
from raf.observability import instrument
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import FunctionChatClient, call, reply
from raf.workflow import Executor, WorkflowBuilder, WorkflowContext, handler


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calculator_model(messages: Sequence[ChatMessage], options: ChatOptions) -> Any:
    """Calls add for 'sum A B', then answers with the tool's result; echoes otherwise."""
    last = messages[-1]
    if last.role is Role.TOOL:
        return f"The sum is {last.function_results[0].result}."
    words = last.text.split()
    if words and words[0] == "sum":
        return reply("", call("add", a=int(words[1]), b=int(words[2])))
    return f"echo: {last.text}"


def calculator() -> Agent:
    return Agent(chat_client=FunctionChatClient(calculator_model), tools=[add], name="calc")


def sums() -> Dataset:
    return Dataset(
        name="sums",
        cases=[
            Case(
                name=f"sum-{a}-{b}",
                input=f"sum {a} {b}",
                expected_output=str(a + b),
                expected_tool_calls=[ExpectedCall(name="add", arguments={"a": a, "b": b})],
                tags=["tool"],
            )
            for a, b in [(1, 2), (3, 4), (10, 20)]
        ]
        + [Case(name="hello", input="hello", expected_output="hello", tags=["plain"])],
        evaluators=[Contains(), ToolCalls(), Limits(requests=2)],
    )


async def test_an_agent_target_records_transcript_calls_and_requests() -> None:
    report = await sums().evaluate(calculator(), concurrency=3, progress=False)
    assert report.target == "calc" and report.dataset == "sums"
    assert [r.case for r in report.results] == ["sum-1-2", "sum-3-4", "sum-10-20", "hello"]
    assert all(r.passed for r in report.results), report.table()
    first = report.results[0]
    assert first.requests == 2 and first.text == "The sum is 3."
    assert [m.role for m in first.transcript] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert report.by_tag() == {"plain": (1, 1), "tool": (3, 3)}


async def test_one_failing_case_never_stops_the_others() -> None:
    def flaky_target(question: str) -> str:
        if question == "boom":
            raise RuntimeError("the target broke")
        return question

    def raises(ctx: Any) -> bool:
        raise ValueError("evaluator broke")

    dataset = Dataset(
        cases=[
            Case(name="boom", input="boom", expected_output="x"),
            Case(name="ok", input="fine", expected_output="fine"),
            Case(
                name="bad-eval",
                input="y",
                expected_output="y",
                evaluators=[FunctionEvaluator(raises)],
            ),
            Case(name="wrong", input="z", expected_output="q"),
        ],
        evaluators=[Equals()],
    )
    report = await dataset.evaluate(flaky_target, concurrency=2, progress=False)
    status = {r.case: r.status for r in report.results}
    assert status == {"boom": "errored", "ok": "passed", "bad-eval": "errored", "wrong": "failed"}
    boom = report.results[0]
    assert boom.error == "RuntimeError: the target broke"
    bad = report.results[2]
    assert bad.evaluations[0].passed and bad.evaluations[1].errored
    assert "ValueError: evaluator broke" in (bad.evaluations[1].error or "")
    assert report.summary()["errored"] == 2


async def test_concurrency_is_bounded() -> None:
    running = 0
    most = 0

    async def slow(question: str) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return question

    dataset = Dataset(cases=[Case(name=str(i), input=str(i)) for i in range(12)])
    await dataset.evaluate(slow, concurrency=3, progress=False)
    assert most == 3


async def test_repeats_give_pass_at_k_and_flaky_cases() -> None:
    seen: dict[str, int] = {}

    def sometimes(question: str) -> str:
        seen[question] = seen.get(question, 0) + 1
        if question == "flaky":
            return "yes" if seen[question] == 2 else "no"
        return "yes" if question == "steady" else "no"

    dataset = Dataset(
        cases=[Case(name=q, input=q, expected_output="yes") for q in ("steady", "flaky", "never")],
        evaluators=[Equals()],
    )
    report = await dataset.evaluate(sometimes, repeat=3, concurrency=1, progress=False)
    assert len(report.results) == 9
    assert report.flaky == ["flaky"]
    summary = report.summary()
    assert summary["pass@3"] == round((1 + 1 + 0) / 3, 4)
    assert report.pass_at(1) == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert "pass@3 67%" in report.table() and "flaky: flaky" in report.table()


async def test_a_workflow_target() -> None:
    class Shout(Executor):
        @handler
        async def shout(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.yield_output(text.upper())

    shout = Shout("shout")
    flow = WorkflowBuilder("shouter", start=shout).build()
    dataset = Dataset(
        cases=[Case(name=w, input=w, expected_output=w.upper()) for w in ("hi", "there")],
        evaluators=[Contains(ignore_case=False)],
    )
    report = await dataset.evaluate(flow, concurrency=2, progress=False)
    assert report.target == "shouter"
    assert [r.status for r in report.results] == ["passed", "passed"], report.table()


async def test_a_served_openai_compatible_url_target() -> None:
    agent = Agent(chat_client=FunctionChatClient(calculator_model), tools=[add], name="calc")
    dataset = Dataset(
        cases=[
            Case(name="sum", input="sum 2 5", expected_output="7"),
            Case(name="echo", input="hi there", expected_output="echo: hi there"),
        ],
        evaluators=[Contains()],
    )
    with serve_in_thread(create_app(AgentHost([agent]), a2a=False)) as url:
        report = await asyncio.wait_for(dataset.evaluate(f"{url}/v1", progress=False), timeout=60)
    assert all(r.passed for r in report.results), report.table()
    assert report.results[0].text == "The sum is 7."


async def test_approvals_asked_are_seen_by_the_trajectory_check() -> None:
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> Any:
        return reply("", call("delete_file", path="/tmp/x"))

    agent = Agent(chat_client=FunctionChatClient(model), tools=[ApprovalRequiredTool(delete_file)])
    dataset = Dataset(
        cases=[Case(name="delete", input="delete /tmp/x")],
        evaluators=[ToolCalls(calls=[ExpectedCall(name="delete_file")], approvals=["delete_file"])],
    )
    report = await dataset.evaluate(agent, progress=False)
    assert report.results[0].passed, report.table()


async def test_each_case_is_a_span_with_the_agent_run_inside() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = instrument(calculator(), tracer_provider=provider)
    report = await sums().evaluate(agent, concurrency=2, progress=False, tracer_provider=provider)
    spans = exporter.get_finished_spans()
    cases = {s.name: s for s in spans if s.name.startswith("eval ")}
    assert set(cases) == {f"eval {r.case}" for r in report.results}
    case_span = cases["eval sum-1-2"]
    assert case_span.attributes is not None
    assert case_span.attributes["raf.eval.status"] == "passed"
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    assert runs and all(s.parent is not None for s in runs)
    parents = {s.parent.span_id for s in runs if s.parent is not None}
    assert parents <= {s.context.span_id for s in cases.values() if s.context is not None}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_a_progress_bar_on_a_terminal_and_silence_elsewhere() -> None:
    screen = Terminal()
    await sums().evaluate(calculator(), progress=ProgressBar(screen), concurrency=1)
    assert screen.getvalue().endswith("] 4/4  0 not passed\n")
    assert "\r[" in screen.getvalue()
    quiet = io.StringIO()
    await sums().evaluate(calculator(), progress=ProgressBar(quiet))
    assert quiet.getvalue() == ""
