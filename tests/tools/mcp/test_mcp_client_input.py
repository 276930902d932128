"""What a real MCP server (the Python SDK's, over stdio) asks of raf's client during a
tool call: elicitation and sampling, answered by handlers or by a person through the
agent's approvals, and the progress and log notices it sends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from raf.agent.builder import AgentBuilder
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions, ChatOptions, ToolApprovalResponse
from raf.core.responses import FinishReason
from raf.core.tools import ToolContext
from raf.testing import FunctionChatClient, call, reply
from raf.tools.mcp import (
    ElicitationAnswer,
    ElicitationRequest,
    McpClient,
    McpError,
    McpNotice,
    McpToolset,
    SamplingAnswer,
    SamplingRequest,
)

from .test_mcp_client import py_config as base_config


def py_config(**extra: object) -> Any:
    """The Python test server over the initialize handshake, where its tools may ask."""
    return base_config(protocol="legacy", **extra)


SUMMARY_SYSTEM = "You write one-line summaries."


async def test_handlers_answer_elicitation_and_sampling_and_hear_notices() -> None:
    asked: list[ElicitationRequest] = []
    sampled: list[SamplingRequest] = []
    notices: list[McpNotice] = []

    async def elicit(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer(action="accept", content={"name": "Ada"})

    async def sample(request: SamplingRequest) -> SamplingAnswer:
        sampled.append(request)
        return SamplingAnswer(text="short", model="tiny")

    client = McpClient(py_config(), elicitation=elicit, sampling=sample, on_notice=notices.append)
    try:
        booked = await client.call_tool("book", {"day": "friday"})
        # seats was left out: the schema's default (2) is filled in before the server sees it
        assert booked.structured_content == {"result": "booked 2 seats on friday for Ada"}
        assert asked[0].message == "Book a table on friday: for whom?"
        assert set(asked[0].schema["properties"]) == {"name", "seats"}
        summary = await client.call_tool("summarize", {"text": "a long story"})
        assert summary.structured_content == {"result": "summary: short (by tiny)"}
        assert sampled[0].system_prompt == SUMMARY_SYSTEM
        assert sampled[0].messages == [("user", "Summarise: a long story")]
        await client.call_tool("countdown", {"steps": 3})
    finally:
        await client.aclose()
    progress = [(n.progress, n.total, n.message) for n in notices if n.kind == "progress"]
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    logs = [(n.level, n.message) for n in notices if n.kind == "log"]
    assert logs == [("info", f"counted {i}") for i in (1, 2, 3)]


async def test_without_a_handler_or_a_call_the_server_is_declined() -> None:
    client = McpClient(py_config(elicitation="decline", sampling="never"))
    try:
        booked = await client.call_tool("book", {"day": "monday"})
        assert booked.structured_content == {"result": "not booked (decline)"}
        with pytest.raises(McpError, match="Sampling not supported"):
            await client.call_tool("summarize", {"text": "x"})
    finally:
        await client.aclose()


def _model(tool: str, arguments: dict[str, Any]) -> FunctionChatClient:
    """Calls `tool` for the user's message, reports the tool's answer, and answers a
    sampling request (recognised by its system prompt) with a summary."""

    def respond(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        if messages and messages[0].role is Role.SYSTEM and messages[0].text == SUMMARY_SYSTEM:
            return "the agent's summary"
        last = messages[-1]
        if last.role is Role.TOOL:
            result = last.function_results[0]
            value = result.result["result"] if isinstance(result.result, dict) else None
            return f"done: {result.error or value}"
        return reply("", call(tool, arguments, call_id="c1"))

    return FunctionChatClient(respond)


async def test_an_elicitation_pauses_the_run_and_the_answer_resumes_it() -> None:
    async with McpToolset(py_config()) as toolset:
        agent = (
            AgentBuilder("booker")
            .with_chat_client(_model("book", {"day": "friday"}))
            .with_tools(toolset.tools)
            .build()
        )
        session = agent.create_session()
        paused = await agent.run("book me a table", session=session)
        assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
        [request] = paused.pending_approvals
        assert request.name == "book" and request.call_id == "c1"
        assert "Book a table on friday: for whom?" in (request.reason or "")
        assert "name (string)" in (request.reason or "")
        assert "mcp-input:c1" in session.provider_state
        answer = ToolApprovalResponse(call_id="c1", approved=True, answer={"name": "Grace"})
        done = await agent.run(
            [], session=session, options=AgentRunOptions(tool_approval_responses=[answer])
        )
        assert done.text == "done: booked 2 seats on friday for Grace"
        assert "mcp-input:c1" not in session.provider_state


async def test_a_denied_question_ends_the_call_and_forgets_it() -> None:
    async with McpToolset(py_config()) as toolset:
        agent = (
            AgentBuilder("booker")
            .with_chat_client(_model("book", {"day": "friday"}))
            .with_tools(toolset.tools)
            .build()
        )
        session = agent.create_session()
        await agent.run("book me a table", session=session)
        no = ToolApprovalResponse(call_id="c1", approved=False, reason="not now")
        done = await agent.run(
            [], session=session, options=AgentRunOptions(tool_approval_responses=[no])
        )
        assert done.finish_reason is not FinishReason.AWAITING_APPROVAL
        assert done.text.startswith("done: ") and "not now" in done.text
        assert "mcp-input:c1" not in session.provider_state


async def test_sampling_uses_the_agents_model_once_approved() -> None:
    async with McpToolset(py_config()) as toolset:
        agent = (
            AgentBuilder("summariser")
            .with_chat_client(_model("summarize", {"text": "a long story"}))
            .with_tools(toolset.tools)
            .build()
        )
        session = agent.create_session()
        paused = await agent.run("summarise it", session=session)
        [request] = paused.pending_approvals
        assert "asks the agent's model" in (request.reason or "")
        assert "Summarise: a long story" in (request.reason or "")
        yes = ToolApprovalResponse(call_id="c1", approved=True)
        done = await agent.run(
            [], session=session, options=AgentRunOptions(tool_approval_responses=[yes])
        )
        assert done.text.startswith("done: summary: the agent's summary (by ")


async def test_sampling_always_answers_without_asking() -> None:
    async with McpToolset(py_config(sampling="always")) as toolset:
        tool = next(t for t in toolset.tools if t.name == "summarize")
        agent = AgentBuilder("a").with_chat_client(_model("summarize", {})).build()
        result = await tool.invoke({"text": "story"}, ToolContext(agent=agent, call_id="x"))
        assert result.value == {"result": "summary: the agent's summary (by raf)"}
