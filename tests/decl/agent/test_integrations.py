"""Declared integrations that need async discovery: MCP servers (a real stdio server) and
OpenAPI documents load at the first run, inside a provider, and then behave as tools."""

from __future__ import annotations

import sys
from pathlib import Path

from raf import AgentRunOptions, FinishReason, ToolApprovalResponse
from raf.context.mcp import McpContextProvider
from raf.decl import DeclAgentBuilder
from raf.decl.agent.contexts import ToolsetProvider
from raf.testing import ScriptedChatClient, call, reply

SERVER = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "mcp_py_server.py"


def mcp_document(extra: str = "") -> str:
    return (
        "name: a\ntools:\n  - kind: mcp\n    name: py\n    config:\n"
        f"      command: {sys.executable}\n      args: ['{SERVER}', stdio]\n"
        "      tools: [add]\n" + extra
    )


async def close(agent) -> None:
    for provider in agent.context_providers:
        if hasattr(provider, "aclose"):
            await provider.aclose()


async def test_mcp_tools_are_discovered_at_the_first_run_and_called():
    model = ScriptedChatClient([reply("", call("add", a=2, b=3, call_id="c1")), "five"])
    agent = DeclAgentBuilder().from_yaml_str(mcp_document()).with_chat_client(model).build()
    assert agent.tools == ()
    assert [type(p) for p in agent.context_providers[1:]] == [ToolsetProvider]
    try:
        response = await agent.run("add 2 and 3")
    finally:
        await close(agent)
    assert model.requests[0].tool_names == ["add"]
    (result,) = [r for m in response.messages for r in m.function_results]
    assert result.error is None and "5" in str(result.result)
    assert response.text == "five"


async def test_mcp_approval_mode_always_pauses_the_run():
    model = ScriptedChatClient([reply("", call("add", a=1, b=1, call_id="c1")), "two"])
    document = mcp_document("      approvalMode: always\n")
    agent = DeclAgentBuilder().from_yaml_str(document).with_chat_client(model).build()
    session = agent.create_session()
    try:
        paused = await agent.run("add", session=session)
        assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
        options = AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id="c1", approved=True)]
        )
        done = await agent.run([], session=session, options=options)
    finally:
        await close(agent)
    assert done.text == "two"


def test_mcp_context_becomes_an_mcp_context_provider():
    text = (
        "name: a\ncontexts:\n  - kind: mcp\n    name: notes\n    config:\n"
        f"      command: {sys.executable}\n      args: ['{SERVER}', stdio]\n"
    )
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(ScriptedChatClient([])).build()
    (provider,) = agent.context_providers[1:]
    assert isinstance(provider, McpContextProvider) and provider.name == "notes"


def test_mcp_oauth_sampling_and_protocol_are_declared() -> None:
    text = (
        "name: a\ncontexts:\n  - kind: mcp\n    name: crm\n    config:\n"
        "      url: https://mcp.example.com/mcp\n      protocol: legacy\n"
        "      sampling: always\n      elicitation: decline\n"
        "      oauth:\n        clientId: raf-app\n        clientSecret: s3cret\n"
        "        scopes: [crm.read]\n        tokenFile: tokens.json\n"
    )
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(ScriptedChatClient([])).build()
    (provider,) = agent.context_providers[1:]
    assert isinstance(provider, McpContextProvider)
    config = provider.client.config
    assert (config.protocol, config.sampling, config.elicitation) == ("legacy", "always", "decline")
    assert config.oauth is not None
    assert (config.oauth.client_id, config.oauth.client_secret) == ("raf-app", "s3cret")
    assert config.oauth.scopes == ["crm.read"]
    assert config.oauth.token_file and Path(config.oauth.token_file).is_absolute()
    assert "s3cret" not in repr(config)


SPEC = """
openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: "http://127.0.0.1:9"}]
paths:
  /pets/{id}:
    get:
      operationId: getPet
      summary: Get a pet
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses: {"200": {description: ok}}
"""


async def test_openapi_document_tools_are_offered_after_loading(tmp_path):
    (tmp_path / "pets.yaml").write_text(SPEC, encoding="utf-8")
    text = "name: a\ntools:\n  - kind: openapi\n    name: pets\n    config: {specUrl: pets.yaml}\n"
    model = ScriptedChatClient(["no call needed"])
    builder = DeclAgentBuilder().from_yaml_str(text, base_dir=tmp_path).with_chat_client(model)
    agent = builder.build()
    await agent.run("hi")
    assert model.requests[0].tool_names == ["getPet"]
