"""OpenAIChatClient against llm-katan (real OpenAI wire format) and a scripted server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from raf.agent.builder import AgentBuilder
from raf.clients.errors import (
    AuthenticationError,
    ClientError,
    ContextOverflowError,
    InvalidResponseError,
    MissingApiKeyError,
    ModelConnectionError,
    ModelNotFoundError,
    RateLimitError,
    StreamInterruptedError,
)
from raf.clients.openai.client import OpenAIChatClient
from raf.core.contents import (
    ApprovalRequestContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    UsageContent,
)
from raf.core.errors import ModelError, RafError
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from raf.core.usage import UsageDetails
from tests.clients.conftest import KATAN_KEY, KATAN_MODEL
from tests.clients.faultserver import FaultServer, Reply, chunk, completion

CALLS: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Weather of a city.

    Args:
        city: the city
    """
    CALLS.append(city)
    return f"sunny in {city}"


@tool
def get_time(zone: str) -> str:
    """Time in a zone."""
    return "noon"


OPEN: list[OpenAIChatClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def katan_client(katan: str, **kwargs: object) -> OpenAIChatClient:
    client = OpenAIChatClient(KATAN_MODEL, base_url=f"{katan}/v1", api_key=KATAN_KEY, **kwargs)  # type: ignore[arg-type]
    return track(client)


def track(client: OpenAIChatClient) -> OpenAIChatClient:
    OPEN.append(client)
    return client


def fault_client(fault: FaultServer, **kwargs: object) -> OpenAIChatClient:
    client = OpenAIChatClient(
        "m",
        base_url=f"{fault.url}/v1",
        api_key="sk-secret-abcdef123456",
        **kwargs,  # type: ignore[arg-type]
    )
    return track(client)


async def test_answers_text_with_usage(katan: str) -> None:
    client = katan_client(katan)
    response = await client.get_response([ChatMessage.user("hello katan")], ChatOptions())
    assert "hello katan" in response.text
    assert response.finish_reason is FinishReason.STOP
    assert response.usage is not None and response.usage.output_tokens > 0
    assert response.model_id == KATAN_MODEL
    await client.aclose()


async def test_streams_text_under_one_message_id(katan: str) -> None:
    client = katan_client(katan)
    updates = [
        u
        async for u in client.get_streaming_response(
            [ChatMessage.system("be brief"), ChatMessage.user("stream me")], ChatOptions()
        )
    ]
    kinds = [u.kind for u in updates]
    assert kinds.count(UpdateKind.TEXT_DELTA) > 1
    assert kinds[-2:] == [UpdateKind.USAGE, UpdateKind.FINISHED]
    assert len({u.message_id for u in updates}) == 1 and updates[0].message_id
    folded = fold_updates(updates)
    assert "stream me" in folded.text
    assert folded.usage is not None and folded.usage.total_tokens > 0


async def test_tool_call_is_parsed(katan: str) -> None:
    client = katan_client(katan)
    response = await client.get_response(
        [ChatMessage.user("weather?")], ChatOptions(tools=[get_weather, get_time])
    )
    (call,) = response.messages[-1].function_calls
    assert call.name == "get_weather" and isinstance(call.arguments, dict)
    assert call.arguments  # katan fills the schema
    assert response.finish_reason is FinishReason.TOOL_CALLS


async def test_agent_runs_tool_through_katan(katan: str) -> None:
    CALLS.clear()
    agent = (
        AgentBuilder("weather")
        .with_instructions("Use tools.")
        .with_chat_client(katan_client(katan))
        .with_tool(get_weather)
        .with_max_tool_rounds(1)
        .build()
    )
    session = agent.create_session()
    response = await agent.run("What's the weather?", session=session)
    assert CALLS, "the tool was not called"
    assert response.text  # the last round runs without tools and answers in text
    roles = [m.role for m in session.messages]
    assert (roles[0] is Role.USER and Role.TOOL in roles) or any(
        m.function_results for m in session.messages
    )


async def test_agent_streams_through_katan(katan: str) -> None:
    agent = AgentBuilder("echo").with_chat_client(katan_client(katan)).build()
    text = "".join(
        [
            u.text
            async for u in agent.run_stream("streamed hello")
            if u.kind is UpdateKind.TEXT_DELTA
        ]
    )
    assert "streamed hello" in text


def scripted_stream() -> list[object]:
    return [
        chunk({"role": "assistant", "reasoning_content": "think "}),
        chunk({"reasoning_content": "hard"}),
        chunk({"content": "Hello"}),
        chunk({"content": " world"}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"ci'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{not json"},
                    }
                ]
            }
        ),
        chunk({}, finish="tool_calls"),
        chunk({}, usage={"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}),
        "[DONE]",
    ]


def scripted_completion() -> object:
    return completion(
        "Hello world",
        [("get_weather", '{"city": "Oslo"}'), ("get_time", "{not json")],
        reasoning_content="think hard",
    )


async def test_stream_assembles_parallel_calls_and_reasoning(fault: FaultServer) -> None:
    fault.reply(Reply(events=scripted_stream()))
    client = fault_client(fault)
    updates = [
        u async for u in client.get_streaming_response([ChatMessage.user("x")], ChatOptions())
    ]
    kinds = [u.kind for u in updates]
    assert kinds.count(UpdateKind.REASONING_DELTA) == 2
    assert kinds.count(UpdateKind.TOOL_CALL_STARTED) == 2
    assert kinds.count(UpdateKind.TOOL_CALL_ARGUMENTS_DELTA) == 3
    ended = [u.content for u in updates if u.kind is UpdateKind.TOOL_CALL_ENDED]
    assert ended == [
        FunctionCallContent(call_id="call_0", name="get_weather", arguments={"city": "Oslo"}),
        FunctionCallContent(
            call_id="call_1", name="get_time", arguments={}, raw_arguments="{not json"
        ),
    ]
    assert len({u.message_id for u in updates}) == 1
    assert updates[-1].finish_reason is FinishReason.TOOL_CALLS


async def test_stream_calls_without_an_index_stay_apart(fault: FaultServer) -> None:
    # Gemini's OpenAI-compatible API sends each call whole, without "index".
    def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    fault.reply(
        Reply(
            events=[
                chunk({"role": "assistant", "tool_calls": [call("a", "get_weather", '{"city"')]}),
                chunk({"tool_calls": [{"function": {"arguments": ': "Oslo"}'}}]}),
                chunk({"tool_calls": [call("b", "get_time", "{}")]}),
                chunk({}, finish="tool_calls"),
                "[DONE]",
            ]
        )
    )
    updates = [
        u
        async for u in fault_client(fault).get_streaming_response(
            [ChatMessage.user("x")], ChatOptions()
        )
    ]
    ended = [u.content for u in updates if u.kind is UpdateKind.TOOL_CALL_ENDED]
    assert ended == [
        FunctionCallContent(call_id="a", name="get_weather", arguments={"city": "Oslo"}),
        FunctionCallContent(call_id="b", name="get_time", arguments={}),
    ]


async def test_whole_response_equals_folded_stream(fault: FaultServer) -> None:
    client = fault_client(fault)
    fault.reply(Reply(events=scripted_stream()))
    streamed = fold_updates(
        [u async for u in client.get_streaming_response([ChatMessage.user("x")], ChatOptions())]
    )
    fault.reply(Reply(json_body=scripted_completion()))
    whole = await client.get_response([ChatMessage.user("x")], ChatOptions())

    def shape(response: object) -> object:
        data = response.to_dict()  # type: ignore[attr-defined]
        for message in data["messages"]:
            message.pop("message_id", None)
        return data

    assert shape(whole) == shape(streamed)  # the model id included
    assert streamed.model_id
    contents = whole.messages[0].contents
    assert isinstance(contents[0], ReasoningContent) and isinstance(contents[1], TextContent)


async def test_request_maps_messages_tools_and_options(fault: FaultServer) -> None:
    fault.reply(Reply(json_body=completion("ok")))
    client = fault_client(fault, headers={"X-Team": "raf"}, organization="org-1")
    history = [
        ChatMessage.system("Be brief."),
        ChatMessage.user("weather in Oslo?"),
        ChatMessage(
            role=Role.ASSISTANT,
            contents=[
                TextContent(text="Checking."),
                FunctionCallContent(call_id="c1", name="get_weather", arguments={"city": "Oslo"}),
                ApprovalRequestContent(call_id="c1", name="get_weather"),
                UsageContent(usage=UsageDetails(input_tokens=1)),
            ],
        ),
        ChatMessage(
            role=Role.TOOL,
            contents=[FunctionResultContent(call_id="c1", result={"t": 3}, name="get_weather")],
        ),
    ]
    options = ChatOptions(
        tools=[get_weather],
        tool_choice="get_weather",
        temperature=0.1,
        max_tokens=9,
        seed=3,
        additional={"top_k": 5},
    )
    await client.get_response(history, options)
    seen = fault.seen[-1]
    body = seen.body
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["x-team"] == "raf" and seen.headers["openai-organization"] == "org-1"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather in Oslo?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"t": 3}'},
    ]
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert (body["temperature"], body["max_tokens"], body["seed"], body["top_k"]) == (0.1, 9, 3, 5)


async def test_tool_choice_none_sends_no_tools(fault: FaultServer) -> None:
    fault.reply(Reply(json_body=completion("ok")))
    await fault_client(fault).get_response(
        [ChatMessage.user("x")], ChatOptions(tools=[get_weather], tool_choice="none")
    )
    assert "tools" not in fault.seen[-1].body


@pytest.mark.parametrize(
    ("status", "message", "error_type"),
    [
        (404, "The model `nope` does not exist", ModelNotFoundError),
        (400, "This model's maximum context length is 8192 tokens", ContextOverflowError),
        (401, "Incorrect API key provided: sk-secret-abcdef123456", AuthenticationError),
        (429, "slow down", RateLimitError),
    ],
)
async def test_status_errors_say_what_to_do_without_the_key(
    fault: FaultServer, status: int, message: str, error_type: type[Exception]
) -> None:
    fault.reply(
        Reply(
            status=status,
            json_body={"error": {"message": message}},
            headers={"Retry-After": "2", "x-request-id": "req_peer0123456789"},
        )
    )
    client = fault_client(fault)
    with pytest.raises(error_type) as info:
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    text = str(info.value)
    # status, the provider's request id and its message survive
    assert isinstance(info.value, ClientError) and info.value.status == status
    assert info.value.request_id == "req_peer0123456789" and "req_peer0123456789" in text
    assert message[:20] in text  # (the key in it is redacted)
    assert "sk-secret-abcdef123456" not in text and "secret-abcdef" not in text
    assert isinstance(info.value, ModelError) and isinstance(info.value, RafError)
    assert ";" in text  # every message carries advice after the cause
    if isinstance(info.value, RateLimitError):
        assert info.value.retry_after == 2 and info.value.retryable


async def test_the_error_code_decides_when_the_message_does_not(fault: FaultServer) -> None:
    body = {"message": "Request too big.", "type": "invalid_request_error"}
    fault.reply(Reply(status=400, json_body={"error": {**body, "code": "context_length_exceeded"}}))
    with pytest.raises(ContextOverflowError, match="context window"):
        await fault_client(fault).get_response([ChatMessage.user("x")], ChatOptions())
    fault.reply(
        Reply(status=400, json_body={"error": {"message": "No.", "code": "model_not_found"}})
    )
    with pytest.raises(ModelNotFoundError, match="check the model name"):
        await fault_client(fault).get_response([ChatMessage.user("x")], ChatOptions())


async def test_malformed_json_is_an_invalid_response(fault: FaultServer) -> None:
    fault.reply(Reply(raw=b'{"id": "x", "choices": [ broken'))
    with pytest.raises(InvalidResponseError, match="not valid chat-completions"):
        await fault_client(fault).get_response([ChatMessage.user("x")], ChatOptions())


async def test_json_without_choices_is_an_invalid_response(fault: FaultServer) -> None:
    fault.reply(Reply(json_body={"id": "x", "object": "list", "data": []}))
    with pytest.raises(InvalidResponseError, match="another shape.*base URL"):
        await fault_client(fault).get_response([ChatMessage.user("x")], ChatOptions())


async def test_malformed_json_in_stream(fault: FaultServer) -> None:
    fault.reply(Reply(events=["{broken json"]))
    with pytest.raises(InvalidResponseError):
        async for _ in fault_client(fault).get_streaming_response(
            [ChatMessage.user("x")], ChatOptions()
        ):
            pass


async def test_stream_cut_midway_raises(fault: FaultServer) -> None:
    fault.reply(Reply(events=scripted_stream(), cut_after=3))
    seen = []
    with pytest.raises(StreamInterruptedError, match="broke off"):
        async for update in fault_client(fault).get_streaming_response(
            [ChatMessage.user("x")], ChatOptions()
        ):
            seen.append(update)
    assert seen, "data arrived before the cut"


async def test_connection_refused_names_the_url() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = track(
        OpenAIChatClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-abcdefgh123")
    )
    with pytest.raises(ModelConnectionError, match=f"127.0.0.1:{port}") as info:
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert info.value.retryable


def test_missing_key_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="OPENAI_API_KEY"):
        OpenAIChatClient("gpt-4o-mini")


def test_repr_never_shows_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    client = track(OpenAIChatClient("gpt-4o-mini"))
    assert "sk-from-env" not in repr(client) and "api_key=set" in repr(client)
    assert "sk-from-env" not in json.dumps(vars(client), default=repr)


async def test_server_answering_a_stream_with_plain_json_is_an_error(katan: str) -> None:
    # llm-katan answers stream=True requests with tools by one JSON body, not SSE.
    client = katan_client(katan)
    with pytest.raises(InvalidResponseError, match="without any event"):
        async for _ in client.get_streaming_response(
            [ChatMessage.user("weather?")], ChatOptions(tools=[get_weather])
        ):
            pass


async def test_agent_streams_a_tool_call_then_the_answer(fault: FaultServer) -> None:
    CALLS.clear()
    call_stream = [
        chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ],
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Bergen"}'}}]}),
        chunk({}, finish="tool_calls"),
        "[DONE]",
    ]
    answer_stream = [chunk({"content": "Sunny in "}), chunk({"content": "Bergen."}, "stop")]
    fault.reply(Reply(events=call_stream), Reply(events=[*answer_stream, "[DONE]"]))
    agent = AgentBuilder("w").with_chat_client(fault_client(fault)).with_tool(get_weather).build()
    session = agent.create_session()
    updates = [u async for u in agent.run_stream("weather in Bergen?", session=session)]
    assert CALLS == ["Bergen"]
    kinds = [u.kind for u in updates]
    assert kinds.index(UpdateKind.TOOL_CALL_STARTED) < kinds.index(UpdateKind.TOOL_CALLED)
    assert "".join(u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA) == "Sunny in Bergen."
    second = fault.seen[1].body["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "sunny in Bergen"}
    assert len(session.messages) == 4


WELCOME = b"<html><body>Welcome to nginx!</body></html>"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_base_url_that_is_a_web_page_says_so(fault: FaultServer, stream: bool) -> None:
    fault.reply(Reply(raw=WELCOME, content_type="text/html"))
    client = fault_client(fault)
    with pytest.raises(InvalidResponseError, match="base URL"):
        if stream:
            async for _ in client.get_streaming_response([ChatMessage.user("x")], ChatOptions()):
                pass
        else:
            await client.get_response([ChatMessage.user("x")], ChatOptions())
