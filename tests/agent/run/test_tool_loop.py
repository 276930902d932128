"""FunctionInvokingChatClient: rounds, concurrency, error results, caps."""

from __future__ import annotations

import asyncio
import time

from raf import (
    AgentBuilder,
    ChatMessage,
    ChatOptions,
    FinishReason,
    FunctionInvokingChatClient,
    ToolExecutionError,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply
from tests.agent.helpers import make_tool


async def test_loop_stops_at_max_tool_rounds_and_ends_with_text() -> None:
    ping = make_tool("ping")
    script = [reply("", call("ping", text=str(i))) for i in range(3)] + ["final words"]
    model = ScriptedChatClient(script)
    agent = AgentBuilder().with_chat_client(model).with_tool(ping).with_max_tool_rounds(3).build()
    response = await agent.run("go")
    assert response.text == "final words"
    assert response.finish_reason is FinishReason.STOP
    assert len(model.requests) == 4
    assert [r.tool_names for r in model.requests[:3]] == [["ping"]] * 3
    last = model.requests[3]
    assert last.tool_names == [] and last.options.tool_choice == "none"
    results = [r for m in response.messages for r in m.function_results]
    assert [r.result for r in results] == ["ping:0", "ping:1", "ping:2"]


async def test_calls_made_after_the_last_round_get_results_and_the_run_stops() -> None:
    model = ScriptedChatClient([reply("", call("ping", call_id="c1")), reply("", call("ping"))])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(make_tool("ping"))
        .with_max_tool_rounds(1)
        .build()
    )
    session = agent.create_session()
    response = await agent.run("go", session=session)
    last = response.messages[-1].function_results[0]
    assert "tool-round limit (1) was reached" in (last.error or "")
    calls = {c.call_id for m in session.messages for c in m.function_calls}
    answered = {r.call_id for m in session.messages for r in m.function_results}
    assert calls == answered


async def test_calls_of_one_message_run_concurrently_and_keep_order() -> None:
    @tool
    def slow_a() -> str:
        """Sleeps (blocking) then answers."""
        time.sleep(0.2)
        return "a"

    @tool
    async def slow_b() -> str:
        """Sleeps (async) then answers."""
        await asyncio.sleep(0.2)
        return "b"

    model = ScriptedChatClient(
        [reply("", call("slow_a", call_id="1"), call("slow_b", call_id="2")), "done"]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(slow_a).with_tool(slow_b).build()
    started = time.perf_counter()
    response = await agent.run("go")
    elapsed = time.perf_counter() - started
    assert elapsed < 0.35, f"two 0.2 s tools took {elapsed:.3f} s: not concurrent"
    results = response.messages[1].function_results
    assert [(r.call_id, r.result) for r in results] == [("1", "a"), ("2", "b")]


async def test_raising_unknown_and_invalid_calls_become_error_results_and_loop_goes_on() -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    @tool
    def refuse() -> str:
        """Refuses with a message for the model."""
        raise ToolExecutionError("not allowed today")

    @tool
    def needs_int(n: int) -> int:
        """Doubles n."""
        return n * 2

    model = ScriptedChatClient(
        [
            reply(
                "",
                call("explode", call_id="1"),
                call("nope", call_id="2"),
                call("needs_int", n="x", call_id="3"),
                call("refuse", call_id="4"),
            ),
            "recovered",
        ]
    )
    agent = AgentBuilder().with_chat_client(model).with_tools([explode, refuse, needs_int]).build()
    response = await agent.run("go")
    assert response.text == "recovered"
    errors = [r.error or "" for r in response.messages[1].function_results]
    assert "RuntimeError: kaboom" in errors[0]
    assert "unknown tool 'nope'" in errors[1] and "explode" in errors[1]
    assert "invalid arguments for tool 'needs_int'" in errors[2]
    assert errors[3] == "not allowed today"
    # the model saw all four results in the next request
    seen = model.requests[1].messages[-1].function_results
    assert [r.call_id for r in seen] == ["1", "2", "3", "4"]


async def test_invalid_json_arguments_are_reported_to_the_model() -> None:
    from raf import FunctionCallContent

    bad = FunctionCallContent(call_id="c", name="needs", arguments={}, raw_arguments="{oops")
    model = ScriptedChatClient([ChatMessage.assistant(calls=[bad]), "ok"])
    agent = AgentBuilder().with_chat_client(model).with_tool(make_tool("needs")).build()
    response = await agent.run("go")
    assert "not valid JSON" in (response.messages[1].function_results[0].error or "")


async def test_results_are_capped_with_a_note() -> None:
    @tool
    def big() -> str:
        """A large result."""
        return "x" * 5000

    model = ScriptedChatClient([reply("", call("big")), "ok"])
    client = FunctionInvokingChatClient(model, tools=[big], max_result_chars=100)
    response = await client.get_response([ChatMessage.user("go")], ChatOptions())
    result = response.messages[1].function_results[0].result
    assert result.startswith("x" * 100)
    assert "[truncated: showing 100 of 5000 characters" in result
    assert len(result) < 300


async def test_usage_is_summed_over_rounds() -> None:
    from raf import UsageDetails

    usage = UsageDetails(input_tokens=10, output_tokens=2, total_tokens=12)
    model = ScriptedChatClient([reply("", call("t")), "done"], usage=usage)
    agent = AgentBuilder().with_chat_client(model).with_tool(make_tool("t")).build()
    response = await agent.run("go")
    assert response.usage == UsageDetails(input_tokens=20, output_tokens=4, total_tokens=24)
