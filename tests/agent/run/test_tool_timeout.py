"""A tool call past its timeout is stopped and the model reads an error result."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from raf import (
    AgentBuilder,
    AgentRunOptions,
    ApprovalRequiredTool,
    BaseTool,
    ConfigurationError,
    ToolContext,
    ToolDefinitionError,
    ToolResult,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply

FINISHED: list[str] = []


@tool(timeout=0.05)
async def stuck(n: int) -> int:
    """Never answers in time."""
    await asyncio.sleep(30)
    FINISHED.append("stuck")
    return n


@tool
async def slow(n: int) -> int:
    """Answers after a second."""
    await asyncio.sleep(1)
    return n


@tool
async def quick(n: int) -> int:
    """Answers at once."""
    return n + 1


class SlowByHand(BaseTool):
    name = "by_hand"
    description = "A hand-written tool with a timeout."
    timeout = 0.05

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        await asyncio.sleep(30)
        return ToolResult.ok("late")


def _first_error(model: ScriptedChatClient) -> str:
    return model.requests[-1].messages[-1].function_results[0].error or ""


def _script(name: str) -> ScriptedChatClient:
    return ScriptedChatClient(
        [reply("", call(name, n=1, call_id="t1"), call("quick", n=1, call_id="q1")), "ok"]
    )


async def test_a_call_past_the_tools_timeout_becomes_an_error_result() -> None:
    model = _script("stuck")
    agent = AgentBuilder().with_chat_client(model).with_tools([stuck, quick]).build()
    response = await asyncio.wait_for(agent.run("go"), 10)
    assert response.text == "ok"
    timed_out, fine = model.requests[1].messages[-1].function_results
    assert timed_out.error is not None and "timed out after 0.05 s" in timed_out.error
    assert fine.result == 2  # its sibling ran as usual
    assert FINISHED == []


async def test_the_run_default_applies_to_tools_without_their_own() -> None:
    model = _script("slow")
    agent = AgentBuilder().with_chat_client(model).with_tools([slow, quick]).build()
    await asyncio.wait_for(agent.run("go", options=AgentRunOptions(tool_timeout=0.05)), 10)
    assert "timed out after 0.05 s" in (_first_error(model))


async def test_the_builder_sets_a_default_and_a_tools_own_timeout_wins() -> None:
    model = _script("by_hand")
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tools([ApprovalRequiredTool(SlowByHand()), quick])
        .with_tool_timeout(60)
        .build()
    )
    assert agent.tool_timeout == 60.0
    wrapped = agent.tools[0]
    assert getattr(wrapped, "timeout", None) == 0.05  # the approval wrapper passes it on
    builder = AgentBuilder().with_chat_client(model).with_tools([SlowByHand(), quick])
    await asyncio.wait_for(builder.with_tool_timeout(60).build().run("go"), 10)
    assert "timed out after 0.05 s" in _first_error(model)


async def test_without_a_timeout_a_slow_tool_finishes() -> None:
    model = ScriptedChatClient([reply("", call("slow", n=5, call_id="s")), "ok"])
    agent = AgentBuilder().with_chat_client(model).with_tool(slow).build()
    await agent.run("go")
    assert model.requests[1].messages[-1].function_results[0].result == 5


def test_a_bad_timeout_is_refused_where_it_is_declared() -> None:
    with pytest.raises(ToolDefinitionError, match="timeout must be a number of seconds above 0"):

        @tool(timeout=0)
        def never(n: int) -> int:
            """Never built."""
            return n

    with pytest.raises(ConfigurationError, match="with_tool_timeout"):
        AgentBuilder().with_tool_timeout(-1)
