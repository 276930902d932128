"""McpContextProvider in a real agent run: server tools, resources and prompts as context."""

from __future__ import annotations

from raf.agent.builder import AgentBuilder
from raf.context.mcp import McpContextProvider
from raf.core.contents import FunctionResultContent
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.responses import FinishReason
from raf.core.sessions import AgentSession
from raf.core.tools import ToolContext
from raf.testing import ScriptedChatClient, call, reply
from tests.tools.peers import npm_bin, py_server_cmd


def provider(**extra: object) -> McpContextProvider:
    cmd = py_server_cmd()
    return McpContextProvider(
        {"name": "py", "command": cmd[0], "args": cmd[1:], **extra}, name="notes"
    )


async def test_agent_calls_mcp_tools_and_reads_resources() -> None:
    mcp = provider()
    model = ScriptedChatClient(
        [
            reply("", call("add", a=19, b=23, call_id="c1")),
            reply("", call("read_mcp_resource", uri="notes://welcome", call_id="c2")),
            reply(
                "", call("get_mcp_prompt", name="review", arguments={"topic": "X"}, call_id="c3")
            ),
            "42, and the note says hello.",
        ]
    )
    agent = AgentBuilder("a").with_chat_client(model).with_context_provider(mcp).build()
    try:
        assert not mcp.client.connected
        response = await agent.run("add and read")
        assert response.text == "42, and the note says hello."
        results = [
            c for m in response.messages for c in m.contents if isinstance(c, FunctionResultContent)
        ]
        texts = [str(r.result) for r in results]
        assert "42" in texts[0]
        assert "Hello from the Python MCP server." in texts[1]
        assert "Please review X carefully." in texts[2]
        first = model.requests[0]
        system = first.messages[0].text
        assert "notes://welcome" in system and "review(topic)" in system
        assert "A Python test server with notes." in system
        assert {"add", "read_mcp_resource", "get_mcp_prompt"} <= {t.name for t in first.tools}
    finally:
        await mcp.aclose()


async def test_per_tool_approval_pauses_the_run() -> None:
    mcp = provider(approval_mode={"add": "always"}, tool_prefix="py")
    model = ScriptedChatClient([reply("", call("py_add", a=1, b=2, call_id="c1")), "three"])
    agent = AgentBuilder("a").with_chat_client(model).with_context_provider(mcp).build()
    session = agent.create_session()
    try:
        first = await agent.run("add", session=session)
        assert first.finish_reason is FinishReason.AWAITING_APPROVAL
        done = await agent.run(
            [],
            session=session,
            options=AgentRunOptions(
                tool_approval_responses=[ToolApprovalResponse(call_id="c1", approved=True)]
            ),
        )
        assert done.text == "three"
        assert mcp.kind == "mcp" and mcp.name == "notes"
    finally:
        await mcp.aclose()


async def test_everything_server_resources_prompts_and_media() -> None:
    mcp = McpContextProvider(
        {"command": npm_bin("mcp-server-everything"), "args": ["stdio"], "name": "everything"}
    )
    try:
        result = await mcp.on_invoking(None, AgentSession(), [], AgentRunOptions())
        text = result.instructions or ""
        assert "Resources of MCP server 'everything' (read with read_mcp_resource):" in text
        assert "- args-prompt(city, state?)" in text
        tools = {t.name: t for t in result.tools}
        uri = "demo://resource/static/document/features.md"
        assert uri in text
        doc = await tools["read_mcp_resource"].invoke({"uri": uri}, ToolContext())
        assert not doc.is_error and len(str(doc.value)) > 100
        missing = await tools["read_mcp_resource"].invoke({"uri": "demo://nope"}, ToolContext())
        assert missing.is_error and "demo://nope" in (missing.error or "")
        prompt = await tools["get_mcp_prompt"].invoke(
            {"name": "args-prompt", "arguments": {"city": "Lisbon"}}, ToolContext()
        )
        assert "Lisbon" in str(prompt.value)
        image = await tools["get-tiny-image"].invoke({}, ToolContext())
        media = [b for b in image.value if b["type"] == "image"]
        assert media and media[0]["mime_type"] == "image/png" and "data" not in media[0]
    finally:
        await mcp.aclose()
