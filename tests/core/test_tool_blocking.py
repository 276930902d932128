"""`@tool(blocking=False)`: a sync function declared non-blocking runs inline, in the run's
thread; by default a sync tool runs on raf's tool threads. `run_in_thread` is the older
name of the same setting."""

from __future__ import annotations

import threading

import pytest

from raf import AgentBuilder, FunctionTool, ToolDefinitionError, tool
from raf.testing import ScriptedChatClient, call, reply


async def _thread_of(declared: dict[str, bool]) -> tuple[int, bool]:
    def where() -> int:
        """The thread this runs in."""
        return threading.get_ident()

    made = FunctionTool(where, **declared)  # type: ignore[arg-type]

    model = ScriptedChatClient([reply("", call("where", call_id="c1")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(made).build()
    response = await agent.run("where?")
    result = next(r for m in response.messages for r in m.function_results)
    return int(result.result), made.blocking


@pytest.mark.parametrize(
    ("declared", "inline"),
    [
        ({}, False),
        ({"blocking": True}, False),
        ({"blocking": False}, True),
        ({"run_in_thread": False}, True),
        ({"blocking": False, "run_in_thread": False}, True),
    ],
)
async def test_a_sync_tool_runs_inline_only_when_declared_non_blocking(
    declared: dict[str, bool], inline: bool
) -> None:
    ident, blocking = await _thread_of(declared)
    assert (ident == threading.get_ident()) is inline
    assert blocking is not inline


def test_the_two_spellings_must_agree() -> None:
    with pytest.raises(ToolDefinitionError, match="'f'.*disagree"):

        @tool(blocking=False, run_in_thread=True)
        def f() -> None:
            """Nothing."""


def test_blocking_must_be_a_bool() -> None:
    with pytest.raises(ToolDefinitionError, match="blocking must be True or False, got 'no'"):
        FunctionTool(print, blocking="no")  # type: ignore[arg-type]
