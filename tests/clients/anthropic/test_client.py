"""AnthropicChatClient against llm-katan's Messages API and a scripted server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from raf.agent.builder import AgentBuilder
from raf.clients.anthropic.client import AnthropicChatClient
from raf.clients.errors import (
    ContextOverflowError,
    InvalidResponseError,
    MissingApiKeyError,
    RateLimitError,
    StreamInterruptedError,
)
from raf.core.contents import (
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
)
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from tests.clients.conftest import KATAN_KEY, KATAN_MODEL
from tests.clients.faultserver import FaultServer, Reply

OPEN: list[AnthropicChatClient] = []
CALLS: list[str] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def client_for(url: str, key: str = KATAN_KEY, model: str = KATAN_MODEL) -> AnthropicChatClient:
    client = AnthropicChatClient(model, base_url=url, api_key=key)
    OPEN.append(client)
    return client


@tool
def lookup(term: str) -> str:
    """Look a term up.

    Args:
        term: what to look up
    """
    CALLS.append(term)
    return f"{term}: found"


async def test_text_with_system_prompt_and_usage(katan: str) -> None:
    client = client_for(katan)
    response = await client.get_response(
        [ChatMessage.system("Be brief."), ChatMessage.user("hello claude")], ChatOptions()
    )
    assert "hello claude" in response.text
    assert response.finish_reason is FinishReason.STOP
    assert response.usage is not None and response.usage.output_tokens > 0


async def test_stream_with_tool_input_json_deltas(katan: str) -> None:
    client = client_for(katan)
    updates = [
        u
        async for u in client.get_streaming_response(
            [ChatMessage.user("look it up")], ChatOptions(tools=[lookup])
        )
    ]
    kinds = [u.kind for u in updates]
    assert UpdateKind.TOOL_CALL_ARGUMENTS_DELTA in kinds
    (ended,) = [u.content for u in updates if u.kind is UpdateKind.TOOL_CALL_ENDED]
    assert isinstance(ended, FunctionCallContent) and ended.name == "lookup"
    assert ended.arguments and ended.raw_arguments is None
    assert len({u.message_id for u in updates}) == 1
    assert fold_updates(updates).finish_reason is FinishReason.TOOL_CALLS


async def test_agent_calls_tool_through_katan(katan: str) -> None:
    CALLS.clear()
    agent = (
        AgentBuilder("a")
        .with_chat_client(client_for(katan))
        .with_tool(lookup)
        .with_max_tool_rounds(1)
        .build()
    )
    session = agent.create_session()
    updates = [u async for u in agent.run_stream("find raf", session=session)]
    assert CALLS and any(u.kind is UpdateKind.TOOL_CALLED for u in updates)
    assert any(m.function_results for m in session.messages)


def thinking_events(cut: bool = False) -> list[object]:
    events: list[object] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-x",
                    "stop_reason": None,
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 90,
                        "cache_creation_input_tokens": 5,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Let me see."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "sig=="},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Two calls."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ]
    for i, term in ((2, "a"), (3, "b")):
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {
                        "type": "tool_use",
                        "id": f"tu_{term}",
                        "name": "lookup",
                        "input": {},
                    },
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": '{"term": '},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": f'"{term}"}}'},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 42},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events[:5] if cut else events


def thinking_message() -> object:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "content": [
            {"type": "thinking", "thinking": "Let me see.", "signature": "sig=="},
            {"type": "text", "text": "Two calls."},
            {"type": "tool_use", "id": "tu_a", "name": "lookup", "input": {"term": "a"}},
            {"type": "tool_use", "id": "tu_b", "name": "lookup", "input": {"term": "b"}},
        ],
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 90,
            "cache_creation_input_tokens": 5,
            "output_tokens": 42,
        },
    }


async def test_thinking_parallel_calls_and_cache_usage_fold_like_the_whole(
    fault: FaultServer,
) -> None:
    client = client_for(fault.url, key="sk-ant-secret-0987654321")
    fault.reply(Reply(events=thinking_events()))
    streamed = fold_updates(
        [u async for u in client.get_streaming_response([ChatMessage.user("x")], ChatOptions())]
    )
    fault.reply(Reply(json_body=thinking_message()))
    whole = await client.get_response([ChatMessage.user("x")], ChatOptions())
    for response in (streamed, whole):
        contents = response.messages[0].contents
        assert contents[0] == ReasoningContent(text="Let me see.", signature="sig==")
        assert contents[1] == TextContent(text="Two calls.")
        assert [c.arguments for c in response.messages[0].function_calls] == [
            {"term": "a"},
            {"term": "b"},
        ]
        usage = response.usage
        assert usage is not None
        assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
            105,
            90,
            5,
        )
        assert usage.output_tokens == 42
        assert response.finish_reason is FinishReason.TOOL_CALLS
    assert streamed.messages[0].contents == whole.messages[0].contents


async def test_request_mapping_sends_thinking_back_and_groups_results(
    fault: FaultServer,
) -> None:
    fault.reply(Reply(json_body=thinking_message()))
    client = client_for(fault.url, key="sk-ant-secret-0987654321")
    history = [
        ChatMessage.system("Be brief."),
        ChatMessage.user("find a and b"),
        ChatMessage(
            role=Role.ASSISTANT,
            contents=[
                ReasoningContent(text="hmm", signature="s1"),
                ReasoningContent(text="unsigned"),
                FunctionCallContent(call_id="tu_a", name="lookup", arguments={"term": "a"}),
                FunctionCallContent(call_id="tu_b", name="lookup", arguments={"term": "b"}),
            ],
        ),
        ChatMessage(
            role=Role.TOOL,
            contents=[
                FunctionResultContent(call_id="tu_a", result="A"),
                FunctionResultContent(call_id="tu_b", error="failed"),
            ],
        ),
    ]
    await client.get_response(
        history, ChatOptions(tools=[lookup], tool_choice="required", max_tokens=50, stop=["END"])
    )
    seen = fault.seen[-1]
    body = seen.body
    assert seen.path == "/v1/messages" and seen.headers["x-api-key"] == "sk-ant-secret-0987654321"
    assert body["system"] == "Be brief." and body["max_tokens"] == 50
    assert body["stop_sequences"] == ["END"] and body["tool_choice"] == {"type": "any"}
    assert body["tools"][0]["input_schema"]["required"] == ["term"]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "find a and b"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s1"},
                {"type": "tool_use", "id": "tu_a", "name": "lookup", "input": {"term": "a"}},
                {"type": "tool_use", "id": "tu_b", "name": "lookup", "input": {"term": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_a", "content": "A", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_b",
                    "content": "Error: failed",
                    "is_error": True,
                },
            ],
        },
    ]


async def test_stream_cut_midway_raises(fault: FaultServer) -> None:
    fault.reply(Reply(events=thinking_events(), cut_after=4))
    with pytest.raises(StreamInterruptedError):
        async for _ in client_for(fault.url).get_streaming_response(
            [ChatMessage.user("x")], ChatOptions()
        ):
            pass


async def test_stream_ending_without_message_stop_raises(fault: FaultServer) -> None:
    fault.reply(Reply(events=thinking_events(cut=True)))
    with pytest.raises(StreamInterruptedError):
        async for _ in client_for(fault.url).get_streaming_response(
            [ChatMessage.user("x")], ChatOptions()
        ):
            pass


async def test_errors_are_raf_errors_without_the_key(fault: FaultServer) -> None:
    key = "sk-ant-secret-0987654321"
    fault.reply(
        Reply(
            status=429,
            json_body={
                "type": "error",
                "error": {"type": "rate_limit_error", "message": f"too fast for {key}"},
            },
            headers={"retry-after": "7", "request-id": "req_011CPeerAnthropic"},
        )
    )
    with pytest.raises(RateLimitError) as info:
        await client_for(fault.url, key=key).get_response([ChatMessage.user("x")], ChatOptions())
    assert info.value.retry_after == 7 and key not in str(info.value)
    # status, the provider's request id and its message survive
    assert info.value.status == 429 and info.value.request_id == "req_011CPeerAnthropic"
    assert "too fast for" in str(info.value) and "req_011CPeerAnthropic" in str(info.value)
    fault.reply(
        Reply(
            status=400,
            json_body={
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 300000 tokens > 200000",
                },
            },
        )
    )
    with pytest.raises(ContextOverflowError, match="context window"):
        await client_for(fault.url, key=key).get_response([ChatMessage.user("x")], ChatOptions())


def test_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        AnthropicChatClient("claude-sonnet-4-5")


def test_repr_hides_the_key() -> None:
    client = client_for("http://127.0.0.1:9", key="sk-ant-hidden-1234567")
    assert "hidden" not in repr(client) and "api_key=set" in repr(client)


WELCOME = b"<html><body>Welcome to nginx!</body></html>"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_base_url_that_is_a_web_page_says_so(fault: FaultServer, stream: bool) -> None:
    fault.reply(Reply(raw=WELCOME, content_type="text/html"))
    client = client_for(fault.url)
    with pytest.raises(InvalidResponseError, match="base URL"):
        if stream:
            async for _ in client.get_streaming_response([ChatMessage.user("x")], ChatOptions()):
                pass
        else:
            await client.get_response([ChatMessage.user("x")], ChatOptions())


async def test_redacted_thinking_is_kept_and_sent_back_as_it_came(fault: FaultServer) -> None:
    message = thinking_message()
    assert isinstance(message, dict)
    message["content"] = [
        {"type": "thinking", "thinking": "First.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED=="},
        {"type": "thinking", "thinking": "Second.", "signature": "sig-2"},
        {"type": "tool_use", "id": "tu_a", "name": "lookup", "input": {"term": "a"}},
    ]
    fault.reply(Reply(json_body=message))
    client = client_for(fault.url, key="sk-ant-secret-0987654321")
    whole = await client.get_response([ChatMessage.user("x")], ChatOptions(tools=[lookup]))
    reasoning = [c for c in whole.messages[0].contents if isinstance(c, ReasoningContent)]
    assert reasoning == [
        ReasoningContent(text="First.", signature="sig-1"),
        ReasoningContent(text="", protected_data="ENCRYPTED=="),
        ReasoningContent(text="Second.", signature="sig-2"),
    ]
    fault.reply(Reply(json_body=thinking_message()))
    history = [
        ChatMessage.user("x"),
        whole.messages[0],
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="tu_a", result="A")]),
    ]
    await client.get_response(history, ChatOptions(tools=[lookup]))
    sent = fault.seen[-1].body["messages"][1]["content"]
    assert sent[:3] == [
        {"type": "thinking", "thinking": "First.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED=="},
        {"type": "thinking", "thinking": "Second.", "signature": "sig-2"},
    ]
