"""What a tool call is handed: a function tool gets the run's `ToolContext` or
`RunContext` exactly when it declares one; any other tool always gets the full context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raf import (
    AgentBuilder,
    ChatMessage,
    ChatOptions,
    FunctionInvokingChatClient,
    FunctionTool,
    RunContext,
    ToolContext,
    ToolResult,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply


def test_reads_context_says_whether_the_function_declares_a_context() -> None:
    def plain(a: int) -> int:
        """Plain."""
        return a

    def with_tool_context(a: int, ctx: ToolContext) -> int:
        """Takes the tool context."""
        return a

    def with_run_context(a: int, run: RunContext) -> int:
        """Takes the run."""
        return a

    assert FunctionTool(plain).reads_context is False
    assert FunctionTool(with_tool_context).reads_context is True
    assert FunctionTool(with_run_context).reads_context is True


async def test_a_declared_context_carries_the_call_session_and_run() -> None:
    seen: list[ToolContext] = []

    @tool
    def note(text: str, ctx: ToolContext) -> str:
        """Notes a text."""
        seen.append(ctx)
        return text

    model = ScriptedChatClient([reply("", call("note", call_id="c7", text="x")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(note).build()
    session = agent.create_session()
    response = await agent.run("go", session=session)
    assert response.text == "done"
    [ctx] = seen
    assert ctx.call_id == "c7"
    assert ctx.session is session
    assert ctx.run is not None and ctx.run.session is session
    assert ctx.agent is agent
    assert ctx.idempotency_key.startswith("raf-")


async def test_a_function_tool_subclass_gets_the_full_context() -> None:
    """The context is left out only for a plain `FunctionTool` whose function takes none:
    a subclass may read it in its own `invoke`."""
    seen: list[ToolContext] = []

    class Recording(FunctionTool):
        async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            seen.append(context)
            return await super().invoke(arguments, context)

    def echo(text: str) -> str:
        """Echoes."""
        return text

    model = ScriptedChatClient([reply("", call("echo", call_id="c9", text="hi")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(Recording(echo)).build()
    response = await agent.run("go")
    assert response.text == "done"
    [ctx] = seen
    assert ctx.call_id == "c9" and ctx.run is not None


async def test_a_tool_that_is_not_a_function_tool_gets_the_full_context() -> None:
    seen: list[ToolContext] = []

    class Hand:
        name = "hand"
        kind = "function"
        description = "A hand-written tool."
        requires_approval = False

        def __init__(self) -> None:
            self.parameters: dict[str, Any] = {"type": "object", "properties": {}}

        def approval_required(self, arguments: Mapping[str, Any]) -> bool:
            return False

        async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            seen.append(context)
            return ToolResult(value="ok")

    model = ScriptedChatClient([reply("", call("hand", call_id="c3")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(Hand()).build()
    response = await agent.run("go")
    assert response.text == "done"
    assert [ctx.call_id for ctx in seen] == ["c3"]


async def test_results_of_every_type_reach_the_model_as_before() -> None:
    """Numbers, None and booleans pass as they are; a long text and a long structure are
    cut with a note (the loop's inline check must agree with the full one)."""

    @tool
    def number() -> int:
        """A number."""
        return 5

    @tool
    def nothing() -> None:
        """Nothing."""

    @tool
    def long_text() -> str:
        """A long text."""
        return "x" * 50

    @tool
    def long_list() -> list[str]:
        """A long list."""
        return ["y" * 10] * 10

    script: list[ChatMessage | str] = [
        reply("", call("number"), call("nothing"), call("long_text"), call("long_list")),
        "done",
    ]
    model = ScriptedChatClient(script)
    tools = [number, nothing, long_text, long_list]
    client = FunctionInvokingChatClient(model, tools=tools, max_result_chars=20)
    response = await client.get_response([ChatMessage.user("go")], ChatOptions())
    results = [r.result for m in response.messages for r in m.function_results]
    assert results[0] == 5 and results[1] is None
    assert results[2].startswith("x" * 20 + "\n[truncated: showing 20 of 50 characters")
    assert results[3].startswith('["yyyyyyyyyy", "yyyy')
    assert "[truncated: showing 20 of" in results[3]
