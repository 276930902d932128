"""The run lifecycle: provider order, merging, on_invoked always."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from raf import (
    AgentBuilder,
    ChatMessage,
    ContextResult,
    InMemoryHistoryProvider,
    ModelError,
    ProviderError,
    Role,
    ToolDefinitionError,
)
from raf.testing import ScriptedChatClient, call, reply
from tests.agent.helpers import RecordingProvider, make_tool


async def test_seed_three_provider_example_merges_exactly() -> None:
    log: list[str] = []
    history_messages = [ChatMessage.user("earlier question"), ChatMessage.assistant("earlier")]
    load_skill, read_file, write_file = (
        make_tool("load_skill"),
        make_tool("read_file"),
        make_tool("write_file"),
    )
    p1 = RecordingProvider("history", ContextResult(messages=history_messages), log)
    p2 = RecordingProvider(
        "skills", ContextResult(instructions="## Skills\n- review", tools=[load_skill]), log
    )
    p3 = RecordingProvider(
        "workspace",
        ContextResult(instructions="## Workspace\nroot: /proj", tools=[read_file, write_file]),
        log,
    )
    model = ScriptedChatClient(["ok"])
    registered = make_tool("echo")
    agent = (
        AgentBuilder()
        .with_history_provider(p1)
        .with_context_provider(p2)
        .with_context_provider(p3)
        .with_instructions("You are helpful.")
        .with_tool(registered)
        .with_chat_client(model)
        .build()
    )
    response = await agent.run("hello")

    assert response.text == "ok"
    request = model.requests[0]
    assert request.messages[0].role is Role.SYSTEM
    assert (
        request.messages[0].text
        == "You are helpful.\n## Skills\n- review\n## Workspace\nroot: /proj"
    )
    assert request.messages[1:] == [*history_messages, ChatMessage.user("hello")]
    assert request.tool_names == ["echo", "load_skill", "read_file", "write_file"]
    assert log == [
        "invoking:history",
        "invoking:skills",
        "invoking:workspace",
        "invoked:workspace",
        "invoked:skills",
        "invoked:history",
    ]


async def test_replace_messages_in_the_middle_of_the_chain() -> None:
    log: list[str] = []
    a = ChatMessage.user("from A")
    b = ChatMessage.user("from B (replaces)")
    c = ChatMessage.user("from C (appended)")
    model = ScriptedChatClient(["ok"])
    agent = (
        AgentBuilder()
        .with_context_provider(RecordingProvider("a", ContextResult(messages=[a]), log))
        .with_context_provider(
            RecordingProvider("b", ContextResult(messages=[b], replace_messages=True), log)
        )
        .with_context_provider(RecordingProvider("c", ContextResult(messages=[c]), log))
        .with_chat_client(model)
        .build()
    )
    session = agent.create_session()
    session.messages.append(ChatMessage.user("history that B drops"))
    await agent.run("now", session=session)
    assert model.requests[0].messages == [b, c, ChatMessage.user("now")]


async def test_on_invoked_runs_in_reverse_on_a_model_error_with_the_error() -> None:
    log: list[str] = []
    failure = ModelError("model down", retryable=True)
    model = ScriptedChatClient([failure])
    first = RecordingProvider("first", ContextResult(), log)
    second = RecordingProvider("second", ContextResult(), log)
    agent = (
        AgentBuilder()
        .with_context_provider(first)
        .with_context_provider(second)
        .with_chat_client(model)
        .build()
    )
    session = agent.create_session()
    with pytest.raises(ModelError, match="model down"):
        await agent.run("hi", session=session)
    assert log == ["invoking:first", "invoking:second", "invoked:second", "invoked:first"]
    assert first.invoked_with == [(None, failure)]
    assert session.messages == []  # a failed run stores nothing


async def test_history_is_kept_per_session_and_not_shared() -> None:
    model = ScriptedChatClient(["one", "two", "other"])
    agent = AgentBuilder().with_chat_client(model).build()
    s1, s2 = agent.create_session(), agent.create_session()
    await agent.run("first", session=s1)
    await agent.run("second", session=s1)
    await agent.run("elsewhere", session=s2)
    assert [m.text for m in model.requests[1].messages] == ["first", "one", "second"]
    assert [m.text for m in model.requests[2].messages] == ["elsewhere"]
    assert [m.text for m in s1.messages] == ["first", "one", "second", "two"]
    assert isinstance(agent.context_providers[0], InMemoryHistoryProvider)


async def test_provider_returning_the_wrong_type_is_named() -> None:
    class Broken:
        name, kind = "broken", "test"

        async def on_invoking(self, *args: Any) -> Any:
            return {"instructions": "not a ContextResult"}

        async def on_invoked(self, *args: Any) -> None:
            return None

    agent = (
        AgentBuilder()
        .with_context_provider(Broken())
        .with_chat_client(ScriptedChatClient(["x"]))
        .build()
    )
    with pytest.raises(ProviderError, match="'broken' \\(Broken\\) returned dict"):
        await agent.run("hi")


def test_two_tools_with_one_name_are_refused_at_build() -> None:
    builder = AgentBuilder().with_chat_client(ScriptedChatClient()).with_tool(make_tool("dup"))
    builder.with_tool(make_tool("dup"))
    with pytest.raises(ToolDefinitionError, match="two tools are named 'dup'"):
        builder.build()


async def test_injected_tool_clashing_with_a_registered_one_is_refused() -> None:
    log: list[str] = []
    provider = RecordingProvider("p", ContextResult(tools=[make_tool("dup")]), log)
    agent = (
        AgentBuilder()
        .with_tool(make_tool("dup"))
        .with_context_provider(provider)
        .with_chat_client(ScriptedChatClient(["x"]))
        .build()
    )
    with pytest.raises(ToolDefinitionError, match="two tools are named 'dup'"):
        await agent.run("hi")
    assert log[-1] == "invoked:p"  # providers still hear about the failure


def test_run_sync_for_scripts() -> None:
    agent = AgentBuilder().with_chat_client(ScriptedChatClient(["sync ok"])).build()
    assert agent.run_sync("hi").text == "sync ok"


async def test_tool_loop_is_wrapped_only_when_tools_exist() -> None:
    from raf import FunctionInvokingChatClient

    plain = AgentBuilder().with_chat_client(ScriptedChatClient()).build()
    assert isinstance(plain.chat_client, ScriptedChatClient)
    tooled = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient([reply("", call("t")), "done"]))
        .with_tool(make_tool("t"))
        .with_max_tool_rounds(3)
        .build()
    )
    assert isinstance(tooled.chat_client, FunctionInvokingChatClient)
    assert tooled.chat_client.max_tool_rounds == 3
    assert (await tooled.run("go")).text == "done"


async def test_tools_injected_by_a_provider_alone_still_get_the_tool_loop() -> None:
    log: list[str] = []
    provider = RecordingProvider("p", ContextResult(tools=[make_tool("dyn")]), log)
    model = ScriptedChatClient([reply("", call("dyn", text="x", call_id="c1")), "after"])
    agent = AgentBuilder().with_context_provider(provider).with_chat_client(model).build()
    response = await agent.run("go")
    assert response.text == "after"
    assert response.messages[1].function_results[0].result == "dyn:x"


async def test_minimal_user_classes_work_as_tools_and_providers() -> None:
    """The protocols give defaults (kind "unknown", requires_approval false): a tool with only
    name/description/parameters/invoke and a provider with only on_invoking are enough."""

    class Minimal:
        name = "minimal"
        description = "returns a plain value"
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
        }

        async def invoke(self, arguments: Any, context: Any) -> Any:
            return arguments["x"] * 2  # a plain value, not a ToolResult

    class OnlyInvoking:
        async def on_invoking(self, agent: Any, session: Any, messages: Any, options: Any) -> Any:
            return ContextResult(instructions="be minimal")

    model = ScriptedChatClient([reply("", call("minimal", x=21, call_id="m")), "42"])
    agent = (
        AgentBuilder()
        .with_tool(Minimal())  # type: ignore[arg-type]
        .with_context_provider(OnlyInvoking())  # type: ignore[arg-type]
        .with_chat_client(model)
        .build()
    )
    response = await agent.run("double 21")
    assert response.messages[1].function_results[0].result == 42
    assert "be minimal" in model.requests[0].system
    provider = agent.context_providers[1]
    assert (provider.name, provider.kind) == ("OnlyInvoking", "unknown")


def test_objects_that_are_not_tools_or_providers_are_refused_clearly() -> None:
    from raf import Agent, ConfigurationError

    with pytest.raises(ToolDefinitionError, match="is not a tool: give a function"):
        AgentBuilder().with_tool(object())  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="decorated with @tool"):
        Agent(chat_client=ScriptedChatClient(), tools=[object()])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="not a chat client; give a model string"):
        Agent(chat_client=object())  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="needs an async on_invoking"):
        AgentBuilder().with_chat_client(ScriptedChatClient()).with_context_provider(
            object()  # type: ignore[arg-type]
        ).build()


async def test_hooks_and_invoke_written_as_plain_functions_work() -> None:
    class SyncProvider:
        name, kind = "sync", "test"

        def on_invoking(self, agent: Any, session: Any, messages: Any, options: Any) -> Any:
            return ContextResult(instructions="sync instructions")

        def on_invoked(self, *args: Any) -> None:
            seen.append("invoked")

    class SyncTool:
        name = "sync_tool"
        description = "answers at once"
        parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

        def invoke(self, arguments: Any, context: Any) -> Any:
            return "sync result"

    seen: list[str] = []
    model = ScriptedChatClient([reply("", call("sync_tool", call_id="s")), "ok"])
    agent = (
        AgentBuilder()
        .with_context_provider(SyncProvider())  # type: ignore[arg-type]
        .with_tool(SyncTool())  # type: ignore[arg-type]
        .with_chat_client(model)
        .build()
    )
    response = await agent.run("go")
    assert response.messages[1].function_results[0].result == "sync result"
    assert "sync instructions" in model.requests[0].system
    assert seen == ["invoked"]


async def test_run_takes_session_and_options_positionally_as_the_spec_writes_it() -> None:
    from raf import AgentRunOptions

    model = ScriptedChatClient(["one", "two"])
    agent = AgentBuilder().with_chat_client(model).build()
    session = agent.create_session()
    await agent.run("first", session, AgentRunOptions())
    response = await agent.run("second", session)
    assert response.text == "two" and len(session.messages) == 4
