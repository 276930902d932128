"""BedrockClient through boto3 against a loopback server written from the AWS Bedrock
runtime API reference (tests/clients/bedrock_peer.py: Converse JSON, ConverseStream in the
AWS event stream binary framing that botocore parses, SigV4-signed requests, AWS error
headers), because Bedrock has no offline server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import BaseModel

from raf.agent.builder import AgentBuilder
from raf.clients.bedrock.client import BedrockClient
from raf.clients.errors import (
    AuthenticationError,
    BadRequestError,
    RateLimitError,
    StreamInterruptedError,
)
from raf.clients.media import MediaError, attachment
from raf.clients.retry import RetryingChatClient
from raf.core.contents import DataContent, FunctionCallContent, ReasoningContent, TextContent
from raf.core.errors import ConfigurationError
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from tests.clients.bedrock_peer import ACCESS_KEY, SECRET_KEY, BedrockPeer
from tests.clients.common import PNG, get_weather

MODEL = "anthropic.claude-peer-v1:0"


@pytest.fixture
def peer() -> Iterator[BedrockPeer]:
    with BedrockPeer() as server:
        yield server


OPEN: list[BedrockClient] = []


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def client(peer: BedrockPeer, model: str = MODEL, **settings: object) -> BedrockClient:
    settings.setdefault("aws_access_key_id", ACCESS_KEY)
    settings.setdefault("aws_secret_access_key", SECRET_KEY)
    made = BedrockClient(model, region="us-east-1", endpoint_url=peer.url, **settings)  # type: ignore[arg-type]
    OPEN.append(made)
    return made


async def test_converse_answers_with_usage(peer: BedrockPeer) -> None:
    answer = await client(peer).get_response(
        [ChatMessage.system("Be brief."), ChatMessage.user("hello bedrock")],
        ChatOptions(max_tokens=200, temperature=0.1, stop=["###"]),
    )
    assert answer.text == "You said: hello bedrock"
    assert answer.finish_reason is FinishReason.STOP and answer.model_id == MODEL
    assert answer.response_id and answer.response_id.endswith("-peer-request")
    assert answer.usage is not None and answer.usage.input_tokens > 0
    sent = peer.requests[0]
    assert sent["system"] == [{"text": "Be brief."}]
    assert sent["inferenceConfig"] == {
        "maxTokens": 200,
        "temperature": 0.1,
        "stopSequences": ["###"],
    }
    assert peer.paths[0] == "/model/anthropic.claude-peer-v1%3A0/converse"


async def test_converse_stream_event_frames_fold_like_the_whole(peer: BedrockPeer) -> None:
    made = client(peer)
    messages = [ChatMessage.user("stream me five words")]
    updates = [u async for u in made.get_streaming_response(messages)]
    deltas = [u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert len(deltas) > 3 and "".join(deltas) == "You said: stream me five words"
    assert peer.paths[0].endswith("/converse-stream")
    assert updates[-1].model_id == MODEL
    whole = await made.get_response(messages)
    streamed = fold_updates(updates)
    assert streamed.messages[0].contents == whole.messages[0].contents
    assert streamed.usage == whole.usage


async def test_agent_runs_a_tool_with_alternating_turns(peer: BedrockPeer) -> None:
    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(get_weather).build()
    answer = await agent.run('call get_weather {"city": "Oslo"}')
    assert answer.text == "The tools said: sunny in Oslo"
    second = peer.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    use = second[1]["content"][0]["toolUse"]
    assert use["name"] == "get_weather" and use["input"] == {"city": "Oslo"}
    assert second[2]["content"] == [
        {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "sunny in Oslo"}]}}
    ]
    spec = peer.requests[0]["toolConfig"]["tools"][0]["toolSpec"]
    assert spec["name"] == "get_weather" and spec["inputSchema"]["json"] == get_weather.parameters


async def test_streamed_tool_call_and_signed_reasoning(peer: BedrockPeer) -> None:
    made = client(peer, additional_fields={"thinking": {"type": "enabled", "budget_tokens": 1024}})
    updates = [
        u
        async for u in made.get_streaming_response(
            [ChatMessage.user('call get_weather {"city": "Riga"}')],
            ChatOptions(tools=[get_weather]),
        )
    ]
    pieces = [u.arguments_delta for u in updates if u.kind is UpdateKind.TOOL_CALL_ARGUMENTS_DELTA]
    assert len(pieces) > 1
    call = next(u.content for u in updates if u.kind is UpdateKind.TOOL_CALL_ENDED)
    assert isinstance(call, FunctionCallContent) and call.arguments == {"city": "Riga"}
    assert updates[-1].finish_reason is FinishReason.TOOL_CALLS
    folded = fold_updates(updates).messages[0].contents
    reasoning = folded[0]
    assert isinstance(reasoning, ReasoningContent) and reasoning.signature == "sig-1"
    assert reasoning.text == 'Thinking about call get_weather {"city": "Riga"}'
    # the signed reasoning goes back with the next turn
    history = [
        ChatMessage.user('call get_weather {"city": "Riga"}'),
        ChatMessage(role=Role.ASSISTANT, contents=folded[:1]),
        ChatMessage.user("thanks"),
    ]
    await made.get_response(history)
    sent = peer.requests[-1]["messages"][1]["content"][0]
    assert sent == {
        "reasoningContent": {"reasoningText": {"text": reasoning.text, "signature": "sig-1"}}
    }


async def test_structured_output(peer: BedrockPeer) -> None:
    class Forecast(BaseModel):
        city: str
        degrees: int

    agent = AgentBuilder().with_chat_client(client(peer)).with_output_type(Forecast).build()
    answer = await agent.run("weather?")
    assert answer.value == Forecast(city="example", degrees=1)
    assert peer.requests[0]["outputConfig"]["textFormat"]["type"] == "json_schema"


async def test_images_documents_and_audio_as_bytes(peer: BedrockPeer) -> None:
    message = ChatMessage(
        role=Role.USER,
        contents=[
            TextContent(text="look and listen"),
            attachment(PNG, "image/png"),
            attachment(b"%PDF-1.4 x", "application/pdf"),
            attachment(b"RIFF....WAVE", "audio/wav"),
        ],
    )
    answer = await client(peer).get_response([message])
    assert answer.text == (
        f"You said: look and listen I received: image/png ({len(PNG)} bytes), "
        "document/pdf (10 bytes), audio/wav (12 bytes)."
    )
    link = DataContent(uri="https://example.com/a.png", media_type="image/png")
    with pytest.raises(MediaError, match="Converse API takes images as bytes"):
        await client(peer).get_response([ChatMessage(role=Role.USER, contents=[link])])
    assert len(peer.requests) == 1


async def test_a_tool_result_can_carry_an_image(peer: BedrockPeer) -> None:
    @tool
    def snapshot() -> DataContent:
        """Take a picture."""
        return attachment(PNG, "image/png")

    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(snapshot).build()
    answer = await agent.run("call snapshot {}")
    assert answer.text == f"The tools said: image/png ({len(PNG)} bytes)"
    result = peer.requests[1]["messages"][2]["content"][0]["toolResult"]["content"]
    assert list(result[0]) == ["image"]


async def test_errors_keep_status_request_id_and_message(peer: BedrockPeer) -> None:
    wrong = client(peer, aws_access_key_id="AKIDWRONG")
    with pytest.raises(AuthenticationError, match="security token included in the request") as c:
        await wrong.get_response([ChatMessage.user("hi")])
    assert c.value.status == 403 and c.value.request_id and "peer-request" in c.value.request_id
    assert SECRET_KEY not in str(c.value)
    with pytest.raises(BadRequestError, match="model identifier is invalid.*ValidationException"):
        await client(peer, "meta.nope").get_response([ChatMessage.user("hi")])


async def test_an_error_event_inside_the_stream(peer: BedrockPeer) -> None:
    with pytest.raises(StreamInterruptedError):
        [u async for u in client(peer).get_streaming_response([ChatMessage.user("break now")])]


async def test_retries_throttling(peer: BedrockPeer) -> None:
    peer.fail_next(429, "ThrottlingException", "Too many requests, please wait.", count=2)
    retrying = RetryingChatClient(client(peer), base_delay=0.01)
    assert (await retrying.get_response([ChatMessage.user("x")])).text == "You said: x"
    assert len(peer.requests) == 3
    peer.fail_next(429, "ThrottlingException", "Too many requests, please wait.")
    with pytest.raises(RateLimitError, match="Too many requests"):
        await client(peer).get_response([ChatMessage.user("x")])


def test_a_region_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(ConfigurationError, match="AWS region"):
        BedrockClient(MODEL)
