"""A tool with `ends_run = True` ends the run once a call of it succeeds: the model is
not asked again after its batch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raf.agent.builder import AgentBuilder
from raf.core.tools import BaseTool, ToolContext, ToolResult
from raf.testing import ScriptedChatClient, call, reply


class Finish(BaseTool):
    name = "finish"
    description = "end the run"
    ends_run = True

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.fail("not now") if self.fail else ToolResult.ok("done")


async def test_a_successful_call_ends_the_run_without_another_model_call():
    model = ScriptedChatClient([reply("Wrapping up.", call("finish")), "never asked"])
    agent = AgentBuilder().with_chat_client(model).with_tool(Finish()).build()
    response = await agent.run("go")
    assert len(model.requests) == 1
    assert response.text == "Wrapping up."


async def test_a_failed_call_goes_back_to_the_model():
    model = ScriptedChatClient([reply("", call("finish")), "answered"])
    agent = AgentBuilder().with_chat_client(model).with_tool(Finish(fail=True)).build()
    response = await agent.run("go")
    assert len(model.requests) == 2
    assert response.text == "answered"


async def test_an_approved_call_of_a_wrapped_tool_still_ends_the_run():
    from raf.core.options import AgentRunOptions, ToolApprovalResponse
    from raf.core.tools import ApprovalRequiredTool

    model = ScriptedChatClient([reply("", call("finish")), "never asked"])
    agent = AgentBuilder().with_chat_client(model).with_tool(ApprovalRequiredTool(Finish())).build()
    session = agent.create_session()
    paused = await agent.run("go", session=session)
    request = paused.pending_approvals[0]
    answer = ToolApprovalResponse(call_id=request.call_id, approved=True)
    await agent.run([], session=session, options=AgentRunOptions(tool_approval_responses=[answer]))
    assert len(model.requests) == 1
