"""Agent, chat and function middleware: the one seam every model and tool call crosses."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

import raf.core.middleware as middleware_module
from raf import (
    AgentBuilder,
    AgentResponse,
    AgentRunOptions,
    AgentTool,
    ChatMessage,
    ChatOptions,
    ConfigurationError,
    ContextResult,
    FinishReason,
    RafError,
    UsageDetails,
    tool,
)
from raf.core.errors import ModelError
from raf.core.middleware import (
    AgentRunContext,
    CallNext,
    ChatContext,
    FunctionInvocationContext,
    MiddlewareSet,
    chat_middleware,
    function_middleware,
    middleware_kind,
)
from raf.core.responses import ChatResponse
from raf.core.tools import ToolResult
from raf.testing import ScriptedChatClient, call, reply
from tests.agent.helpers import RecordingProvider

RAN: list[str] = []


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    RAN.append(city)
    return f"sunny in {city}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def _two_rounds() -> list[Any]:
    return [
        ChatResponse(
            messages=[reply("", call("lookup", city="Oslo", call_id="c1"))],
            finish_reason=FinishReason.TOOL_CALLS,
            usage=UsageDetails(input_tokens=10, output_tokens=2, total_tokens=12),
            model_id="scripted-1",
        ),
        ChatResponse(
            messages=[reply("It is sunny.")],
            finish_reason=FinishReason.STOP,
            usage=UsageDetails(input_tokens=20, output_tokens=4, total_tokens=24),
            model_id="scripted-1",
        ),
    ]


async def test_a_function_middleware_short_circuits_a_tool_call() -> None:
    async def cached(context: FunctionInvocationContext, call_next: CallNext) -> None:
        if context.tool_name == "lookup":
            context.result = ToolResult.ok(f"cached weather for {context.arguments['city']}")
            return
        await call_next()

    model = ScriptedChatClient(_two_rounds())
    agent = AgentBuilder().with_chat_client(model).with_tool(lookup).use_middleware(cached).build()
    response = await agent.run("weather?")
    assert response.text == "It is sunny."
    assert RAN == []  # the tool never ran
    [result] = model.requests[1].messages[-1].function_results
    assert result.result == "cached weather for Oslo"


async def test_a_function_middleware_changes_the_arguments_the_tool_receives() -> None:
    @function_middleware
    async def redirect(context: Any, call_next: CallNext) -> None:
        context.arguments["city"] = "Bergen"
        await call_next()

    model = ScriptedChatClient(_two_rounds())
    agent = AgentBuilder().with_chat_client(model).with_tool(lookup).use_middleware(redirect)
    await agent.build().run("weather?")
    assert RAN == ["Bergen"]
    assert model.requests[1].messages[-1].function_results[0].result == "sunny in Bergen"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_chat_middleware_rewrites_the_models_request(stream: bool) -> None:
    async def redact(context: ChatContext, call_next: CallNext) -> None:
        context.messages = [
            ChatMessage.user(m.text.replace("secret-42", "[redacted]"))
            if m.role.value == "user"
            else m
            for m in context.messages
        ]
        context.options.temperature = 0.0
        await call_next()

    model = ScriptedChatClient(["done"])
    builder = AgentBuilder().with_chat_client(model).use_middleware(redact)
    agent = builder.with_options(ChatOptions(temperature=0.7)).build()
    session = agent.create_session()
    if stream:
        texts = [u.text async for u in agent.run_stream("my key is secret-42", session=session)]
        assert "".join(texts) == "done"
    else:
        assert (await agent.run("my key is secret-42", session=session)).text == "done"
    seen = model.requests[0]
    assert "secret-42" not in " ".join(m.text for m in seen.messages)
    assert "[redacted]" in seen.messages[-1].text
    assert seen.options.temperature == 0.0
    # the session keeps what the user really said; only the model's copy was changed
    assert "secret-42" in session.messages[0].text


async def test_a_chat_middlewares_change_applies_to_one_call_only() -> None:
    seen: list[float | None] = []

    async def cool(context: ChatContext, call_next: CallNext) -> None:
        seen.append(context.options.temperature)
        context.options.temperature = 0.0
        await call_next()

    model = ScriptedChatClient(_two_rounds())
    builder = AgentBuilder().with_chat_client(model).with_tool(lookup).use_middleware(cool)
    await builder.with_options(ChatOptions(temperature=0.7)).build().run("weather?")
    assert seen == [0.7, 0.7]
    assert [r.options.temperature for r in model.requests] == [0.0, 0.0]


@pytest.mark.parametrize("stream", [False, True])
async def test_middleware_sees_names_ids_arguments_results_and_usage(stream: bool) -> None:
    seen: list[tuple[Any, ...]] = []

    async def trace_agent(context: AgentRunContext, call_next: CallNext) -> None:
        seen.append(("agent:before", context.agent_name, context.stream))
        await call_next()
        assert context.result is not None
        seen.append(("agent:after", context.result.text))

    async def trace_chat(context: ChatContext, call_next: CallNext) -> None:
        seen.append(("chat:before", context.agent_name, len(context.messages)))
        await call_next()
        assert context.result is not None and context.result.usage is not None
        seen.append(("chat:after", context.model_id, context.result.usage.total_tokens))

    async def trace_tool(context: FunctionInvocationContext, call_next: CallNext) -> None:
        seen.append(("tool:before", context.tool_name, context.call_id, dict(context.arguments)))
        await call_next()
        assert context.result is not None
        seen.append(("tool:after", context.result.value, context.run.usage.requests))

    model = ScriptedChatClient(_two_rounds())
    agent = (
        AgentBuilder("weather")
        .with_chat_client(model)
        .with_tool(lookup)
        .use_middleware(trace_agent, trace_chat, trace_tool)
        .build()
    )
    if stream:
        updates = [u async for u in agent.run_stream("weather?")]
        assert "".join(u.text for u in updates) == "It is sunny."
    else:
        await agent.run("weather?")
    assert seen == [
        ("agent:before", "weather", stream),
        ("chat:before", "weather", 1),
        ("chat:after", "scripted-1", 12),
        ("tool:before", "lookup", "c1", {"city": "Oslo"}),
        ("tool:after", "sunny in Oslo", 1),
        ("chat:before", "weather", 3),
        ("chat:after", "scripted-1", 24),
        ("agent:after", "It is sunny."),
    ]


async def test_an_agent_middleware_can_answer_without_running_the_turn() -> None:
    async def closed(context: AgentRunContext, call_next: CallNext) -> None:
        context.result = AgentResponse(messages=[ChatMessage.assistant("we are closed")])

    model = ScriptedChatClient([])
    agent = AgentBuilder().with_chat_client(model).use_agent_middleware(closed).build()
    session = agent.create_session()
    response = await agent.run("hello", session=session)
    assert response.text == "we are closed"
    assert model.requests == [] and session.messages == []


async def test_an_agent_middleware_replaces_the_result_that_is_stored() -> None:
    async def shout(context: AgentRunContext, call_next: CallNext) -> None:
        await call_next()
        assert context.result is not None
        loud = context.result.text.upper()
        context.result = AgentResponse(messages=[ChatMessage.assistant(loud)])

    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(["quiet"]))
        .use_agent_middleware(shout)
        .build()
    )
    session = agent.create_session()
    assert (await agent.run("hi", session=session)).text == "QUIET"
    assert [m.text for m in session.messages] == ["hi", "QUIET"]


async def test_a_chat_middleware_may_answer_for_the_model_when_streaming() -> None:
    async def canned(context: ChatContext, call_next: CallNext) -> None:
        context.result = ChatResponse(messages=[ChatMessage.assistant("from the cache")])

    model = ScriptedChatClient([])
    agent = AgentBuilder().with_chat_client(model).use_chat_middleware(canned).build()
    texts = [u.text async for u in agent.run_stream("q")]
    assert "".join(texts) == "from the cache" and model.requests == []


class Boom(RafError):
    """Raised by the failing middleware."""


@pytest.mark.parametrize("kind", ["agent", "chat", "function"])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_middleware_that_raises_ends_the_run_and_leaves_the_session_unchanged(
    kind: str, stream: bool
) -> None:
    armed = False

    async def fail(context: Any, call_next: CallNext) -> None:
        await call_next()
        if armed:
            raise Boom(f"{kind} middleware refused")

    log: list[str] = []
    provider = RecordingProvider("p", ContextResult(), log)
    model = ScriptedChatClient([*_two_rounds(), *_two_rounds()])
    builder = AgentBuilder().with_chat_client(model).with_tool(lookup)
    builder.with_context_provider(provider)
    if kind == "agent":
        builder.use_agent_middleware(fail)
    elif kind == "chat":
        builder.use_chat_middleware(fail)
    else:
        builder.use_function_middleware(fail)
    agent = builder.build()
    session = agent.create_session()
    await agent.run("first", session=session)
    before = session.to_dict()
    armed = True
    with pytest.raises(Boom, match=f"{kind} middleware refused"):
        if stream:
            async for _ in agent.run_stream("second", session=session):
                pass
        else:
            await agent.run("second", session=session)
    after = session.to_dict()
    for key in ("messages", "pending_approvals", "provider_state", "spent_approvals"):
        assert after.get(key) == before.get(key)
    response, error = provider.invoked_with[-1]
    assert response is None and isinstance(error, Boom)
    assert log[-1] == "invoked:p"


async def test_sub_agent_calls_pass_through_the_parents_middleware() -> None:
    tools_seen: list[str] = []
    agents_seen: list[str] = []

    async def record_tool(context: FunctionInvocationContext, call_next: CallNext) -> None:
        tools_seen.append(f"{context.agent_name}:{context.tool_name}")
        await call_next()

    async def record_chat(context: ChatContext, call_next: CallNext) -> None:
        agents_seen.append(context.agent_name)
        await call_next()

    child_model = ScriptedChatClient([reply("", call("lookup", city="Rome", call_id="k1")), "warm"])
    child = AgentBuilder("scout").with_chat_client(child_model).with_tool(lookup).build()
    parent_model = ScriptedChatClient([reply("", call("scout", task="Rome?", call_id="p1")), "ok"])

    @chat_middleware
    async def unannotated(context: Any, call_next: CallNext) -> None:
        await call_next()

    async def explicit(context: Any, call_next: CallNext) -> None:
        await call_next()

    parent = (
        AgentBuilder("lead")
        .with_chat_client(parent_model)
        .with_tool(AgentTool(child))
        .use_middleware(record_tool, record_chat, unannotated)
        .use_function_middleware(explicit)  # a kind given by the method, not the function
        .build()
    )
    assert (await parent.run("go")).text == "ok"
    assert tools_seen == ["lead:scout", "scout:lookup"]
    assert agents_seen == ["lead", "scout", "scout", "lead"]


async def test_per_run_middleware_joins_the_agents_own() -> None:
    order: list[str] = []

    async def outer(context: ChatContext, call_next: CallNext) -> None:
        order.append("agent's")
        await call_next()

    async def inner(context: ChatContext, call_next: CallNext) -> None:
        order.append("run's")
        await call_next()

    agent = AgentBuilder().with_chat_client(ScriptedChatClient(["a"])).use_middleware(outer).build()
    await agent.run("q", options=AgentRunOptions(middleware=[inner]))
    assert order == ["agent's", "run's"]


async def test_with_no_middleware_no_chain_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_chain(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a middleware chain was built although none is registered")

    monkeypatch.setattr(middleware_module, "run_chain", no_chain)
    import raf.agent.run.invoke as invoke_module
    import raf.agent.run.model_call as model_module
    import raf.agent.run.pumps as agent_module

    for module in (invoke_module, model_module):
        monkeypatch.setattr(module, "run_chain", no_chain)
    monkeypatch.setattr(agent_module, "Around", no_chain)  # the agent chain's layer
    agent = AgentBuilder().with_chat_client(ScriptedChatClient(_two_rounds())).with_tool(lookup)
    assert (await agent.build().run("weather?")).text == "It is sunny."


async def test_calling_call_next_twice_is_an_error() -> None:
    async def twice(context: ChatContext, call_next: CallNext) -> None:
        await call_next()
        await call_next()

    agent = AgentBuilder().with_chat_client(ScriptedChatClient(["a", "b"])).use_middleware(twice)
    with pytest.raises(RafError, match="call_next twice"):
        await agent.build().run("q")


async def test_a_middleware_that_never_sets_a_result_is_a_clear_error() -> None:
    async def silent(context: FunctionInvocationContext, call_next: CallNext) -> None:
        return None

    model = ScriptedChatClient(_two_rounds())
    agent = AgentBuilder().with_chat_client(model).with_tool(lookup).use_middleware(silent)
    with pytest.raises(RafError, match="without a result for 'lookup'"):
        await agent.build().run("q")


def test_the_kind_comes_from_the_annotation_or_a_decorator() -> None:
    async def by_hint(context: FunctionInvocationContext, call_next: CallNext) -> None: ...

    @chat_middleware
    async def by_mark(context: Any, call_next: CallNext) -> None: ...

    class Recorder:
        async def __call__(self, context: AgentRunContext, call_next: CallNext) -> None: ...

    assert middleware_kind(by_hint) == "function"
    assert middleware_kind(by_mark) == "chat"
    assert middleware_kind(Recorder()) == "agent"
    both = MiddlewareSet.of([by_hint, by_mark, Recorder()])
    assert len(both.agent) == len(both.chat) == len(both.function) == 1


def test_a_middleware_of_unknown_kind_is_refused_at_build_time() -> None:
    async def vague(context: Any, call_next: CallNext) -> None: ...

    with pytest.raises(ConfigurationError, match="use_middleware\\(\\): cannot tell which kind"):
        AgentBuilder().use_middleware(vague)
    with pytest.raises(ConfigurationError, match="not callable"):
        middleware_kind(42)


async def test_agent_and_chat_middleware_run_in_the_streaming_callers_task() -> None:
    """Streaming (and stepping) through middleware starts no task: the chain runs where
    the caller iterates, so it sees the caller's task (and its cancellation)."""
    import asyncio

    tasks: list[object] = []

    async def agent_mw(context: AgentRunContext, call_next: CallNext) -> None:
        tasks.append(asyncio.current_task())
        await call_next()
        tasks.append(asyncio.current_task())

    async def chat_mw(context: ChatContext, call_next: CallNext) -> None:
        tasks.append(asyncio.current_task())
        await call_next()

    def build() -> Any:
        model = ScriptedChatClient(_two_rounds())
        builder = AgentBuilder().with_chat_client(model).with_tool(lookup)
        return builder.use_middleware(agent_mw, chat_mw).build()

    text = "".join([u.text async for u in build().run_stream("weather?")])
    assert text == "It is sunny."
    async with build().iter("weather?") as steps:
        names = [step.name async for step in steps]
    assert names[-1] == "end" and "record" in names
    assert len(tasks) == 8
    assert set(tasks) == {asyncio.current_task()}


async def test_an_agent_middleware_hears_the_runs_error_and_may_answer_instead() -> None:
    async def rescue(context: AgentRunContext, call_next: CallNext) -> None:
        try:
            await call_next()
        except ModelError:
            context.result = AgentResponse(messages=[ChatMessage.assistant("fallback")])

    model = ScriptedChatClient([ModelError("down"), ModelError("down")])
    agent = AgentBuilder().with_chat_client(model).use_middleware(rescue).build()
    assert (await agent.run("q")).text == "fallback"
    updates = [u async for u in agent.run_stream("q")]  # the error never reaches the caller
    assert updates[-1].kind == "finished"


async def test_a_caller_that_stops_reading_a_stream_is_a_cancellation_to_the_chain() -> None:
    """An agent middleware around a stream whose caller leaves early hears a cancellation
    at `call_next` (its clean-up runs before the stream is closed), and the run's failure
    is recorded as for any stream left early."""
    import asyncio
    import contextlib

    heard: list[str] = []

    async def watch(context: AgentRunContext, call_next: CallNext) -> None:
        try:
            await call_next()
        except asyncio.CancelledError:
            heard.append("cancelled")
            raise
        finally:
            heard.append("cleaned up")

    model = ScriptedChatClient(_two_rounds())
    agent = AgentBuilder().with_chat_client(model).with_tool(lookup).use_middleware(watch).build()
    session = agent.create_session()
    stream = cast("AsyncGenerator[Any, None]", agent.run_stream("weather?", session))
    async with contextlib.aclosing(stream):
        async for _ in stream:
            break  # the first update: the caller leaves
    assert heard == ["cancelled", "cleaned up"]
    assert session.messages == []  # nothing of the left run is stored
