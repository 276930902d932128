"""GenAI spans of a run: names, parents and attributes, with parallel tool calls and a
sub-agent, read from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from raf import AgentBuilder, AgentTool, ChatOptions, FinishReason, UsageDetails, tool
from raf.core.responses import ChatResponse
from raf.observability import InMemoryTraces, instrument
from raf.testing import ScriptedChatClient, call, reply

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def _answer(message: Any, *, model: str, tokens: tuple[int, int]) -> ChatResponse:
    return ChatResponse(
        messages=[message],
        finish_reason=FinishReason.TOOL_CALLS if message.function_calls else FinishReason.STOP,
        usage=UsageDetails(
            input_tokens=tokens[0], output_tokens=tokens[1], total_tokens=sum(tokens)
        ),
        model_id=model,
    )


def _agents(barrier: asyncio.Barrier) -> tuple[Any, AgentBuilder]:
    """A parent that calls `lookup` twice and a `researcher` sub-agent in one round; the
    two lookups meet at a barrier, so they only finish if they run at the same time."""

    @tool
    async def lookup(city: str) -> str:
        """Look a city up."""
        await asyncio.wait_for(barrier.wait(), timeout=5)
        return f"sunny in {city}"

    @tool
    def note(text: str) -> str:
        """Write a note."""
        return f"noted: {text}"

    child = (
        AgentBuilder("researcher")
        .with_description("Looks things up")
        .with_chat_client(
            ScriptedChatClient(
                [
                    _answer(
                        reply("", call("note", text="x", call_id="n1")),
                        model="m-child",
                        tokens=(3, 1),
                    ),
                    _answer(reply("Found it."), model="m-child", tokens=(5, 2)),
                ]
            )
        )
        .with_options(ChatOptions(model_id="m-child"))
        .with_tool(note)
        .build()
    )
    parent_model = ScriptedChatClient(
        [
            _answer(
                reply(
                    "",
                    call("lookup", city="Oslo", call_id="c1"),
                    call("lookup", city="Bergen", call_id="c2"),
                    call("researcher", task="find it", call_id="c3"),
                ),
                model="m-parent-2024",
                tokens=(10, 4),
            ),
            _answer(reply("All done."), model="m-parent-2024", tokens=(30, 6)),
        ]
    )
    builder = (
        AgentBuilder("planner")
        .with_chat_client(parent_model)
        .with_options(ChatOptions(model_id="m-parent", temperature=0.2))
        .with_instructions("Be brief.")
        .with_tool(lookup)
        .with_tool(AgentTool(child))
    )
    return child, builder


def _by_id(spans: tuple[ReadableSpan, ...]) -> dict[int, ReadableSpan]:
    return {s.context.span_id: s for s in spans if s.context is not None}


def _children(spans: tuple[ReadableSpan, ...], parent: ReadableSpan) -> list[str]:
    assert parent.context is not None
    return sorted(
        s.name for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id
    )


def _one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


async def test_a_run_with_parallel_tools_and_a_sub_agent_makes_one_nested_tree(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, builder = _agents(asyncio.Barrier(2))
    agent = instrument(builder, tracer_provider=tracer_provider).build()
    session = agent.create_session()
    response = await agent.run("plan my trip", session=session)
    assert response.text == "All done."

    spans = exporter.get_finished_spans()
    root = _one(spans, "invoke_agent planner")
    assert root.parent is None
    assert {s.context.trace_id for s in spans if s.context} == {root.context.trace_id}
    assert _children(spans, root) == [
        "chat m-parent",
        "chat m-parent",
        "execute_tool lookup",
        "execute_tool lookup",
        "execute_tool researcher",
    ]
    researcher_call = _one(spans, "execute_tool researcher")
    child_run = _one(spans, "invoke_agent researcher")
    assert child_run.parent is not None
    assert child_run.parent.span_id == researcher_call.context.span_id
    assert _children(spans, child_run) == ["chat m-child", "chat m-child", "execute_tool note"]
    assert len(spans) == 1 + 2 + 3 + 1 + 2 + 1

    assert root.kind is SpanKind.INTERNAL
    assert root.attributes is not None
    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "ScriptedChatClient",
        "gen_ai.agent.name": "planner",
        "gen_ai.conversation.id": session.id,
        "gen_ai.request.model": "m-parent",
        "gen_ai.response.model": "m-parent-2024",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 40,
        "gen_ai.usage.output_tokens": 10,
    }
    assert child_run.attributes is not None
    assert child_run.attributes["gen_ai.agent.description"] == "Looks things up"
    assert child_run.attributes["gen_ai.usage.input_tokens"] == 8

    chats = sorted((s for s in spans if s.name == "chat m-parent"), key=lambda s: s.start_time or 0)
    first = chats[0]
    assert first.kind is SpanKind.CLIENT
    assert first.attributes is not None
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "ScriptedChatClient",
        "gen_ai.request.model": "m-parent",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.response.model": "m-parent-2024",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 4,
    }
    tools = [s for s in spans if s.name.startswith("execute_tool") and s.parent == root.context]
    assert sorted(str((s.attributes or {})["gen_ai.tool.call.id"]) for s in tools) == [
        "c1",
        "c2",
        "c3",
    ]
    lookup = next(s for s in tools if (s.attributes or {})["gen_ai.tool.call.id"] == "c1")
    assert dict(lookup.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Look a city up.",
    }
    # the tools ran side by side: each started before the other ended
    first_lookup, second_lookup = (s for s in tools if s.name == "execute_tool lookup")
    assert first_lookup.start_time is not None and second_lookup.end_time is not None
    assert first_lookup.start_time < second_lookup.end_time
    assert second_lookup.start_time is not None and first_lookup.end_time is not None
    assert second_lookup.start_time < first_lookup.end_time
    # contents stay out unless asked for
    assert not any(CONTENT_KEYS & set(s.attributes or {}) for s in spans)


async def test_streaming_runs_nest_the_same_way(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, builder = _agents(asyncio.Barrier(2))
    agent = instrument(builder, tracer_provider=tracer_provider).build()
    texts = [u.text async for u in agent.run_stream("plan my trip")]
    assert "".join(texts).endswith("All done.")
    spans = exporter.get_finished_spans()
    root = _one(spans, "invoke_agent planner")
    child_run = _one(spans, "invoke_agent researcher")
    researcher_call = _one(spans, "execute_tool researcher")
    assert child_run.parent is not None
    assert child_run.parent.span_id == researcher_call.context.span_id
    assert researcher_call.parent is not None
    assert researcher_call.parent.span_id == root.context.span_id
    assert sorted(_children(spans, root))[:2] == ["chat m-parent", "chat m-parent"]


@pytest.mark.parametrize("how", ["option", "environment"])
async def test_contents_are_recorded_only_when_turned_on(
    how: str,
    tracer_provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, builder = _agents(asyncio.Barrier(2))
    if how == "option":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
        agent = instrument(builder, tracer_provider=tracer_provider, capture_content=True).build()
    else:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        agent = instrument(builder, tracer_provider=tracer_provider).build()
    await agent.run("plan my trip")
    spans = exporter.get_finished_spans()
    root = _one(spans, "invoke_agent planner")
    assert root.attributes is not None
    assert '"plan my trip"' in str(root.attributes["gen_ai.input.messages"])
    assert "All done." in str(root.attributes["gen_ai.output.messages"])
    chat = min((s for s in spans if s.name == "chat m-parent"), key=lambda s: s.start_time or 0)
    assert chat.attributes is not None
    assert "Be brief." in str(chat.attributes["gen_ai.system_instructions"])
    assert "Be brief." not in str(chat.attributes["gen_ai.input.messages"])
    assert '"tool_call"' in str(chat.attributes["gen_ai.output.messages"])
    lookup = next(
        s
        for s in spans
        if s.name == "execute_tool lookup" and (s.attributes or {})["gen_ai.tool.call.id"] == "c1"
    )
    assert lookup.attributes is not None
    assert lookup.attributes["gen_ai.tool.call.arguments"] == '{"city": "Oslo"}'
    assert lookup.attributes["gen_ai.tool.call.result"] == "sunny in Oslo"


async def test_a_failing_model_call_marks_the_spans_with_the_error_type(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedChatClient([ConnectionError("the network is down")])
    agent = instrument(
        AgentBuilder("failing").with_chat_client(model), tracer_provider=tracer_provider
    ).build()
    with pytest.raises(ConnectionError):
        await agent.run("hi")
    spans = exporter.get_finished_spans()
    for name in ("invoke_agent failing", "chat"):
        span = _one(spans, name)
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "ConnectionError"


async def test_a_tool_error_marks_its_span(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    @tool
    def broken() -> str:
        """Always fails."""
        raise ValueError("no luck")

    model = ScriptedChatClient([reply("", call("broken", call_id="b1")), "sorry"])
    agent = instrument(
        AgentBuilder().with_chat_client(model).with_tool(broken), tracer_provider=tracer_provider
    ).build()
    await agent.run("try")
    span = _one(exporter.get_finished_spans(), "execute_tool broken")
    assert span.status.status_code is StatusCode.ERROR
    assert "no luck" in (span.status.description or "")
    assert (span.attributes or {})["error.type"] == "tool_error"


async def test_instrumenting_a_built_agent_puts_tracing_outermost(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    seen: list[bool] = []

    from opentelemetry import trace

    from raf.core.middleware import AgentRunContext, CallNext

    async def inner(context: AgentRunContext, call_next: CallNext) -> None:
        seen.append(trace.get_current_span().is_recording())
        await call_next()

    agent = (
        AgentBuilder().with_chat_client(ScriptedChatClient(["hi"])).use_middleware(inner).build()
    )
    instrument(agent, tracer_provider=tracer_provider)
    await agent.run("hello")
    assert seen == [True]
    assert [s.name for s in exporter.get_finished_spans()] == ["chat", "invoke_agent agent"]


def test_instrument_refuses_what_it_cannot_trace() -> None:
    from raf import ConfigurationError

    with pytest.raises(ConfigurationError, match="expected an Agent or an AgentBuilder"):
        instrument(object())


async def test_in_memory_traces_give_each_run_its_tree_by_session() -> None:
    traces = InMemoryTraces()
    _, builder = _agents(asyncio.Barrier(2))
    agent = instrument(builder, traces=traces).build()
    session = agent.create_session()
    await agent.run("plan my trip", session=session)
    other = agent.create_session()
    assert traces.runs(other.id) == []

    (run,) = traces.runs(session.id)
    assert run.agent_name == "planner"
    assert run.session_id == session.id
    assert not run.failed
    assert run.root.name == "invoke_agent planner"
    assert run.duration >= max(c.duration for c in run.root.children) > 0
    names = [c.name for c in run.root.children]
    assert names[0] == "chat m-parent" and names[-1] == "chat m-parent"
    researcher = next(c for c in run.root.children if c.name == "execute_tool researcher")
    (child,) = researcher.children
    assert child.name == "invoke_agent researcher"
    assert sorted(c.name for c in child.children) == [
        "chat m-child",
        "chat m-child",
        "execute_tool note",
    ]
    assert len(run.root.walk()) == 10
    assert traces.run(run.run_id) == run
    assert traces.run("0" * 16) is None
    as_dict = run.root.to_dict()
    assert as_dict["children"][0]["attributes"]["gen_ai.operation.name"] == "chat"
    assert len(traces.spans()) == 10
    traces.clear()
    assert traces.runs() == []


async def test_in_memory_traces_keep_only_the_last_traces() -> None:
    traces = InMemoryTraces(max_traces=2)
    agent = instrument(
        AgentBuilder().with_chat_client(ScriptedChatClient(["a", "b", "c"])), traces=traces
    ).build()
    sessions = [agent.create_session() for _ in range(3)]
    for session in sessions:
        await agent.run("x", session=session)
    assert [r.session_id for r in traces.runs()] == [sessions[1].id, sessions[2].id]
    with pytest.raises(ValueError, match="max_traces"):
        InMemoryTraces(max_traces=0)


async def test_a_sub_agent_instrumented_on_its_own_is_traced_once(
    tracer_provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    child = instrument(
        AgentBuilder("helper").with_chat_client(ScriptedChatClient(["done"])),
        tracer_provider=tracer_provider,
    ).build()
    parent = instrument(
        AgentBuilder("boss")
        .with_chat_client(ScriptedChatClient([reply("", call("helper", task="t")), "ok"]))
        .with_tool(AgentTool(child)),
        tracer_provider=tracer_provider,
    ).build()
    await parent.run("go")
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == [
        "chat",
        "chat",
        "chat",
        "execute_tool helper",
        "invoke_agent boss",
        "invoke_agent helper",
    ]
