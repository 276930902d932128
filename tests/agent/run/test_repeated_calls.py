"""A run stops repeating itself: identical calls with identical results turn the tools off."""

from __future__ import annotations

import pytest

from raf import AgentBuilder, ConfigurationError, FunctionInvokingChatClient, UpdateKind, tool
from raf.core.contents import FunctionResultContent
from raf.testing import ScriptedChatClient, call, reply

CALLS: list[str] = []


@tool
def check_status(job: str) -> str:
    """Look at a job's status (it does not change)."""
    CALLS.append(job)
    return "still pending"


@tool
def count(job: str) -> str:
    """A result that changes on every call."""
    CALLS.append(job)
    return f"seen {len(CALLS)} times"


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def _looping_model(final: str = "It is still pending.") -> ScriptedChatClient:
    return ScriptedChatClient(
        [reply("", call("check_status", job="j1", call_id=f"c{n}")) for n in range(3)]
        + [final, reply("", call("check_status", job="j1", call_id="c9")), "never asked"]
    )


async def test_three_identical_calls_end_the_loop_with_a_note() -> None:
    model = _looping_model()
    agent = AgentBuilder().with_chat_client(model).with_tool(check_status).build()
    session = agent.create_session()
    response = await agent.run("is j1 done?", session=session)
    assert response.text == "It is still pending."
    assert CALLS == ["j1", "j1", "j1"]
    assert len(model.requests) == 4
    assert [r.tool_names for r in model.requests[:3]] == [["check_status"]] * 3
    assert model.requests[3].tool_names == []  # the last call is made without tools
    results = [c for m in response.messages for c in m.function_results]
    assert [r.result for r in results[:2]] == ["still pending", "still pending"]
    note = results[2].result
    assert note.startswith("still pending\n\n[stopped repeating: 'check_status' was called 3")
    assert "tools are off for the rest of this turn" in note
    # the model read the note: it is in the conversation of the final call
    seen = [c for m in model.requests[3].messages for c in m.function_results]
    assert seen[-1].result == note


async def test_the_model_calling_a_tool_anyway_gets_the_reason() -> None:
    model = ScriptedChatClient(
        [reply("", call("check_status", job="j1")) for _ in range(4)] + ["unused"]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(check_status).build()
    response = await agent.run("is j1 done?")
    assert CALLS == ["j1"] * 3
    last = [c for m in response.messages for c in m.function_results][-1]
    assert last.error is not None and last.error.startswith("not run: 'check_status' was called")


async def test_changing_results_or_arguments_do_not_stop_the_loop() -> None:
    model = ScriptedChatClient(
        [reply("", call("count", job="j1")) for _ in range(4)]
        + [reply("", call("check_status", job=f"j{n}")) for n in range(4)]
        + ["done"]
    )
    agent = AgentBuilder().with_chat_client(model).with_tools([count, check_status]).build()
    assert (await agent.run("go")).text == "done"
    assert len(CALLS) == 8
    assert all(r.tool_names for r in model.requests)


async def test_the_check_can_be_turned_off() -> None:
    model = ScriptedChatClient(
        [reply("", call("check_status", job="j1")) for _ in range(5)] + ["gave up"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(check_status)
        .with_max_repeated_calls(None)
        .build()
    )
    assert (await agent.run("go")).text == "gave up"
    assert CALLS == ["j1"] * 5
    assert all(r.tool_names for r in model.requests)


async def test_a_higher_limit_and_identical_calls_in_one_batch() -> None:
    batch = reply("", *[call("check_status", job="j1") for _ in range(4)])
    model = ScriptedChatClient([batch, "four is enough"])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(check_status)
        .with_max_repeated_calls(4)
        .build()
    )
    response = await agent.run("go")
    assert response.text == "four is enough"
    results = [c for m in response.messages for c in m.function_results]
    assert ["stopped repeating" in str(r.result) for r in results] == [False] * 3 + [True]
    assert model.requests[1].tool_names == []


async def test_a_repeated_error_stops_too_and_streams_the_note() -> None:
    @tool
    def broken(job: str) -> str:
        """Always fails the same way."""
        CALLS.append(job)
        raise RuntimeError("disk full")

    model = ScriptedChatClient(
        [reply("", call("broken", job="j1")) for _ in range(3)] + ["the disk is full"]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(broken).build()
    called = [
        u.content
        async for u in agent.run_stream("go")
        if u.kind is UpdateKind.TOOL_CALLED and isinstance(u.content, FunctionResultContent)
    ]
    assert len(called) == 3
    assert all(c.error and "disk full" in c.error for c in called)
    assert ["stopped repeating" in (c.error or "") for c in called] == [False, False, True]
    assert model.requests[3].tool_names == []


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_repeated_calls must be 2 or more"):
        AgentBuilder().with_max_repeated_calls(1)
    with pytest.raises(ValueError, match="max_repeated_calls"):
        FunctionInvokingChatClient(ScriptedChatClient([]), max_repeated_calls=-2)
    assert FunctionInvokingChatClient(ScriptedChatClient([]), max_repeated_calls=0)
