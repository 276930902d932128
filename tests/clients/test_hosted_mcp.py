"""Remote MCP servers the provider calls (hosted MCP on the Responses API), against the
loopback Responses server: each call waits for a person by default, the provider's
approval request pauses the run and the answer goes back once; header values and
`authorization` never show in an error, a log record or a span."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from raf.agent.builder import AgentBuilder
from raf.clients.hosted_tools import MCP_APPROVAL_KEY, hosted_tool, remote_mcp
from raf.clients.openai.responses import OpenAIResponsesClient
from raf.core.errors import ApprovalError, ModelError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions, ChatOptions, ToolApprovalResponse
from raf.core.responses import FinishReason
from raf.observability import instrument
from raf.stores.sessions import SqliteSessionStore
from tests.clients.responses_peer import ResponsesPeer
from tests.test_docs import page_blocks

SECRETS = ("Bearer mcp-live-7f3a9c2e", "team-4711-blue", "oauth-0a1b2c3d")


@pytest.fixture
def peer() -> Iterator[ResponsesPeer]:
    with ResponsesPeer() as server:
        yield server


def build(peer: ResponsesPeer, tmp_path: Path, **settings: Any) -> Any:
    model = OpenAIResponsesClient("gpt-5", base_url=peer.url, api_key=peer.key, **settings)
    docs = remote_mcp("docs", "https://mcp.example.com/mcp", allowed_tools=["lookup"])
    return (
        AgentBuilder("researcher")
        .with_chat_client(model)
        .with_tools([docs])
        .with_session_store(SqliteSessionStore(tmp_path / "sessions.sqlite"))
        .build()
    )


def test_a_remote_mcp_server_asks_before_each_call_unless_told_otherwise() -> None:
    assert remote_mcp("docs", "https://x.example/mcp").spec["require_approval"] == "always"
    declared = hosted_tool({"type": "mcp", "server_label": "d", "server_url": "https://x/mcp"})
    assert declared.spec["require_approval"] == "always" and declared.requires_approval
    never = remote_mcp("docs", "https://x.example/mcp", require_approval="never")
    assert not never.requires_approval
    assert not never.approval_required({"query": "x"})


async def run(agent: Any, session: Any, message: Any, stream: bool, **options: Any) -> Any:
    given = AgentRunOptions(**options)
    if not stream:
        return await agent.run(message, session=session, options=given)
    updates = [u async for u in agent.run_stream(message, session=session, options=given)]
    finished = [u for u in updates if u.finish_reason is not None]
    return finished[-1].finish_reason, "".join(u.text for u in updates)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("server_state", [False, True], ids=["history", "server-state"])
async def test_an_approval_request_pauses_the_run_and_its_answer_goes_back_once(
    peer: ResponsesPeer, tmp_path: Path, stream: bool, server_state: bool
) -> None:
    agent = build(peer, tmp_path, server_state=server_state)
    session = agent.create_session()
    await run(agent, session, "use mcp to look up the tides", stream)
    [asked] = session.pending_approvals
    assert asked.name == "mcp_docs"
    assert asked.arguments["server_label"] == "docs" and asked.arguments["tool"] == "lookup"
    assert asked.arguments["arguments"] == {"query": "tides"}
    assert asked.arguments[MCP_APPROVAL_KEY] == asked.call_id
    assert asked.reason is not None
    assert "server 'docs'" in asked.reason and "tool 'lookup'" in asked.reason
    assert len(peer.requests) == 1 and peer.approval_answers == []  # nothing was called

    approve = [ToolApprovalResponse(call_id=asked.call_id, approved=True)]
    answered = await run(agent, session, [], stream, tool_approval_responses=approve)
    text = answered[1] if stream else answered.text
    assert text == "The MCP server: lookup said: from the remote MCP server"
    assert peer.approval_answers == [
        {"type": "mcp_approval_response", "approval_request_id": asked.call_id, "approve": True}
    ]
    sent = peer.requests[1]
    if server_state:  # the provider holds the request: only the answer goes
        assert str(sent["previous_response_id"]).startswith("resp_")
        assert sent["input"] == [peer.approval_answers[0]]
    else:  # the whole history, the provider's request included
        kinds = [i.get("type", "message") for i in sent["input"]]
        assert kinds == ["message", "mcp_approval_request", "mcp_approval_response"]
    assert session.pending_approvals == []

    # the same answer again is refused before anything is sent
    with pytest.raises(ApprovalError):
        await run(agent, session, [], stream, tool_approval_responses=approve)
    assert len(peer.approval_answers) == 1 and len(peer.requests) == 2


async def test_a_denied_call_tells_the_provider_why(peer: ResponsesPeer, tmp_path: Path) -> None:
    agent = build(peer, tmp_path)
    session = agent.create_session()
    await agent.run("use mcp", session=session)
    [asked] = session.pending_approvals
    deny = ToolApprovalResponse(call_id=asked.call_id, approved=False, reason="not today")
    answer = await agent.run(
        [], session=session, options=AgentRunOptions(tool_approval_responses=[deny])
    )
    assert answer.finish_reason is FinishReason.STOP
    [sent] = peer.approval_answers
    assert sent["approve"] is False and "not today" in sent["reason"]
    assert "lookup was not approved" in answer.text
    assert not any(i.get("type") == "mcp_call" for r in peer.requests for i in r["input"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_hosted_tool_headers_never_show_in_errors_logs_or_spans(
    peer: ResponsesPeer, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    bearer, team, oauth = SECRETS
    tool = remote_mcp(
        "docs",
        "https://mcp.example.com/mcp",
        headers={"Authorization": bearer, "X-Team": team},
        authorization=oauth,
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = OpenAIResponsesClient("gpt-5", base_url=peer.url, api_key=peer.key)
    builder = AgentBuilder("researcher").with_chat_client(model).with_tools([tool])
    agent = instrument(builder, tracer_provider=provider, capture_content=True).build()
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ModelError) as caught:
        if stream:
            async for _ in agent.run_stream("quote tools"):
                pass
        else:
            await agent.run("quote tools")
    provider.shutdown()
    # the provider really quoted them back: they were sent, and only there
    assert peer.requests[0]["tools"][0]["headers"] == {"Authorization": bearer, "X-Team": team}
    message = str(caught.value)
    assert "Invalid 'tools'" in message and "***" in message
    shown = [message, repr(tool), repr(caught.value)]
    shown += [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    for span in exporter.get_finished_spans():
        shown += [str(v) for v in (span.attributes or {}).values()]
        shown.append(str(span.status.description))
        shown += [str(v) for e in span.events for v in (e.attributes or {}).values()]
    assert any("Invalid 'tools'" in text for text in shown[3:]), shown  # spans saw the error
    for secret in SECRETS:
        assert not [text for text in shown if secret in text], secret


def test_the_models_guide_example_asks_and_goes_on(
    peer: ResponsesPeer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guide" / "models.md"
    [block] = [b for b in page_blocks(page) if "test_hosted_mcp.py" in b.mark]
    monkeypatch.setenv("OPENAI_BASE_URL", peer.url)
    monkeypatch.setenv("OPENAI_API_KEY", peer.key)
    monkeypatch.setenv("DOCS_MCP_TOKEN", "docs-token-5150")
    exec(compile(block.code, f"docs/guide/models.md:{block.line}", "exec"), {"__name__": "x"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("docs lookup the remote MCP server 'docs'"), printed
    assert printed[-1] == "The MCP server: lookup said: from the remote MCP server"
    assert peer.requests[0]["tools"][0]["headers"] == {"Authorization": "Bearer docs-token-5150"}
    assert [a["approve"] for a in peer.approval_answers] == [True]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_failed_response_that_quotes_a_header_is_masked(stream: bool) -> None:
    """A response the provider reports as failed, its message quoting a header value,
    reaches the caller with the value masked, whole or streamed."""
    bearer = SECRETS[0]
    tool = remote_mcp("docs", "https://mcp.example.com/mcp", headers={"Authorization": bearer})
    failed = {
        "object": "response",
        "status": "failed",
        "model": "gpt-5",
        "output": [],
        "error": {"code": "server_error", "message": f"bad header {bearer}"},
    }

    async def complete(body: dict[str, Any]) -> dict[str, Any]:
        return failed

    class Events:
        async def __aiter__(self) -> Any:
            yield {"type": "response.failed", "response": failed}

        async def aclose(self) -> None:
            pass

    async def open_stream(body: dict[str, Any]) -> Events:
        return Events()

    model = OpenAIResponsesClient("gpt-5", base_url="http://127.0.0.1:9", api_key="sk-test")
    model.api.complete = complete  # type: ignore[method-assign]
    model.api.open_stream = open_stream  # type: ignore[method-assign, assignment]
    options = ChatOptions(tools=[tool])
    with pytest.raises(ModelError) as caught:
        if stream:
            async for _ in model.get_streaming_response([ChatMessage.user("hi")], options):
                pass
        else:
            await model.get_response([ChatMessage.user("hi")], options)
    assert "bad header ***" in str(caught.value)
    assert bearer not in str(caught.value)


PATH_TOKEN = "9f8e7d6c5b4a3f2e1d0c"
QUERY_TOKEN = "tok-5150-abcdefgh"
SECRET_URL = f"https://mcp.example.com/t/{PATH_TOKEN}/mcp?token={QUERY_TOKEN}&team=blue42"
URL_SECRETS = (PATH_TOKEN, QUERY_TOKEN)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
        ("https://mcp.example.com:8443/api/v1/sse/", "https://mcp.example.com:8443/api/v1/sse/"),
        (SECRET_URL, "https://mcp.example.com/t/***/mcp?token=***&team=***"),
        (
            "https://mcp.zapier.com/api/mcp/s/NjY0ZTk5YjIt/mcp",
            "https://mcp.zapier.com/api/mcp/s/***/mcp",
        ),
        ("https://x.example/AbCdEfGhIjKl/mcp", "https://x.example/***/mcp"),
        ("https://x.example/abcdefghijklmnopqrstu", "https://x.example/***"),
        ("https://user:pw-4711@x.example/mcp#frag-123", "https://***@x.example/mcp#***"),
        ("https://x.example/mcp?sk-abcdef1234", "https://x.example/mcp?***"),
        ("https://x.example/a%2Fb", "https://x.example/***"),
        ("https://[::1/mcp", "***"),
    ],
)
def test_a_server_url_shows_its_host_and_plain_path_and_masks_the_rest(
    url: str, shown: str
) -> None:
    tool = remote_mcp("docs", url)
    assert shown in repr(tool)
    reason = tool.approval_reason({MCP_APPROVAL_KEY: "r1", "tool": "lookup"})
    assert reason is not None and f" at {shown} asks" in reason
    for secret in tool.secrets:
        assert secret not in shown


def test_the_secrets_of_a_server_url_are_its_tokens_and_query_values() -> None:
    tool = remote_mcp("docs", SECRET_URL)
    assert PATH_TOKEN in tool.secrets and QUERY_TOKEN in tool.secrets
    assert not {"mcp", "t", "token", "team", "mcp.example.com"} & set(tool.secrets)
    escaped = remote_mcp("docs", "https://x.example/mcp?key=a%2Bb%20c-123")
    assert {"a%2Bb%20c-123", "a+b c-123"} <= set(escaped.secrets)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_server_url_s_tokens_never_show_in_errors_logs_or_spans(
    peer: ResponsesPeer, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    tool = remote_mcp("docs", SECRET_URL)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = OpenAIResponsesClient("gpt-5", base_url=peer.url, api_key=peer.key)
    builder = AgentBuilder("researcher").with_chat_client(model).with_tools([tool])
    agent = instrument(builder, tracer_provider=provider, capture_content=True).build()
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ModelError) as caught:
        if stream:
            async for _ in agent.run_stream("quote tools"):
                pass
        else:
            await agent.run("quote tools")
    provider.shutdown()
    assert peer.requests[0]["tools"][0]["server_url"] == SECRET_URL  # sent, and only there
    message = str(caught.value)
    assert "Invalid 'tools'" in message and "https://mcp.example.com/t/***/mcp" in message
    shown = [message, repr(tool), repr(caught.value)]
    shown += [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    for span in exporter.get_finished_spans():
        shown += [str(v) for v in (span.attributes or {}).values()]
        shown.append(str(span.status.description))
        shown += [str(v) for e in span.events for v in (e.attributes or {}).values()]
    assert any("Invalid 'tools'" in text for text in shown[3:]), shown
    for secret in URL_SECRETS:
        assert not [text for text in shown if secret in text], secret


async def test_an_approval_asked_of_a_secret_url_names_its_host_only(
    peer: ResponsesPeer, tmp_path: Path
) -> None:
    model = OpenAIResponsesClient("gpt-5", base_url=peer.url, api_key=peer.key)
    agent = (
        AgentBuilder("researcher")
        .with_chat_client(model)
        .with_tools([remote_mcp("docs", SECRET_URL, allowed_tools=["lookup"])])
        .with_session_store(SqliteSessionStore(tmp_path / "sessions.sqlite"))
        .build()
    )
    session = agent.create_session()
    await agent.run("use mcp to look up the tides", session=session)
    [asked] = session.pending_approvals
    assert asked.reason is not None and "https://mcp.example.com/t/***/mcp" in asked.reason
    assert agent.session_store is not None
    stored = await agent.session_store.load(session.id)
    assert stored is not None
    [kept] = stored.pending_approvals
    assert kept.reason == asked.reason
    for secret in URL_SECRETS:
        assert secret not in asked.reason and secret not in repr(asked)
