"""OpenAIResponsesClient through the official `openai` SDK against a loopback Responses
API server written for these tests from OpenAI's documentation (tests/clients/
responses_peer.py: JSON and server-sent events, stored responses, reasoning items checked
as OpenAI checks them), because no official Responses server runs offline."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import BaseModel

from raf.agent.builder import AgentBuilder
from raf.clients.errors import (
    AuthenticationError,
    ModelNotFoundError,
    ServerError,
)
from raf.clients.hosted_tools import code_interpreter, remote_mcp, web_search
from raf.clients.media import MediaError, attachment
from raf.clients.models import parse_model_spec, resolve_model
from raf.clients.openai.client import OpenAIChatClient
from raf.clients.openai.responses import OpenAIResponsesClient, responses_client
from raf.clients.retry import RetryingChatClient
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    ReasoningContent,
    TextContent,
)
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from tests.clients.common import PNG, get_weather
from tests.clients.responses_peer import ResponsesPeer


@pytest.fixture
def peer() -> Iterator[ResponsesPeer]:
    with ResponsesPeer() as server:
        yield server


OPEN: list[OpenAIResponsesClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def client(peer: ResponsesPeer, model: str = "gpt-5", **settings: object) -> OpenAIResponsesClient:
    made = OpenAIResponsesClient(model, base_url=peer.url, api_key=peer.key, **settings)  # type: ignore[arg-type]
    OPEN.append(made)
    return made


async def test_answers_text_with_usage_under_the_response_id(peer: ResponsesPeer) -> None:
    answer = await client(peer).get_response(
        [ChatMessage.system("Be brief."), ChatMessage.user("hello there")]
    )
    assert answer.text == "You said: hello there"
    assert answer.finish_reason is FinishReason.STOP
    assert answer.model_id == "gpt-5-2025-08-07"
    assert answer.response_id is not None and answer.response_id.startswith("resp_")
    assert answer.messages[0].message_id == answer.response_id
    assert answer.usage is not None and answer.usage.input_tokens > 0
    assert answer.usage.total_tokens == answer.usage.input_tokens + answer.usage.output_tokens
    sent = peer.requests[0]
    assert sent["instructions"] == "Be brief."
    assert sent["store"] is False
    assert sent["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "hello there"}]}
    ]


async def test_stream_folds_into_the_whole_answer(peer: ResponsesPeer) -> None:
    made = client(peer)
    messages = [ChatMessage.user("stream these words please")]
    updates = [u async for u in made.get_streaming_response(messages)]
    deltas = [u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert len(deltas) > 3 and "".join(deltas) == "You said: stream these words please"
    assert {u.message_id for u in updates} == {updates[0].message_id}
    assert updates[0].message_id.startswith("resp_")
    assert updates[-1].kind is UpdateKind.FINISHED and updates[-1].model_id == "gpt-5-2025-08-07"
    assert peer.requests[0]["stream"] is True
    streamed = fold_updates(updates)
    whole = await made.get_response(messages)
    assert [c for m in streamed.messages for c in m.contents] == [
        c for m in whole.messages for c in m.contents
    ]
    assert streamed.usage == whole.usage


async def test_agent_calls_a_tool_and_reads_its_result(peer: ResponsesPeer) -> None:
    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(get_weather).build()
    answer = await agent.run('call get_weather {"city": "Paris"}')
    assert answer.text == "The tools said: sunny in Paris"
    first, second = peer.requests
    assert first["tools"][0] == {
        "type": "function",
        "name": "get_weather",
        "description": get_weather.description,
        "parameters": get_weather.parameters,
    }
    kinds = [item.get("type", "message") for item in second["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]
    assert second["input"][1]["arguments"] == '{"city": "Paris"}'
    assert second["input"][2] == {
        "type": "function_call_output",
        "call_id": second["input"][1]["call_id"],
        "output": "sunny in Paris",
    }


async def test_streamed_tool_call_announces_and_completes(peer: ResponsesPeer) -> None:
    made = client(peer)
    options = ChatOptions(tools=[get_weather])
    updates = [
        u
        async for u in made.get_streaming_response(
            [ChatMessage.user('call get_weather {"city": "Oslo"}')], options
        )
    ]
    kinds = [u.kind for u in updates]
    assert kinds[0] is UpdateKind.TOOL_CALL_STARTED and updates[0].tool_name == "get_weather"
    pieces = [u.arguments_delta for u in updates if u.kind is UpdateKind.TOOL_CALL_ARGUMENTS_DELTA]
    assert len(pieces) > 1 and "".join(pieces) == '{"city": "Oslo"}'
    ended = next(u for u in updates if u.kind is UpdateKind.TOOL_CALL_ENDED)
    assert isinstance(ended.content, FunctionCallContent)
    assert ended.content.arguments == {"city": "Oslo"} and ended.content.call_id.startswith("call_")
    assert updates[-1].finish_reason is FinishReason.TOOL_CALLS


async def test_encrypted_reasoning_goes_back_when_nothing_is_stored(peer: ResponsesPeer) -> None:
    made = client(peer, reasoning_effort="low", reasoning_summary="auto")
    agent = AgentBuilder().with_chat_client(made).with_tool(get_weather).build()
    updates = [u async for u in agent.run_stream('call get_weather {"city": "Rome"}')]
    thought = "".join(u.reasoning for u in updates if u.kind is UpdateKind.REASONING_DELTA)
    assert 'The user asked: call get_weather {"city": "Rome"}' in thought
    first, second = peer.requests
    assert first["reasoning"] == {"effort": "low", "summary": "auto"}
    assert first["include"] == ["reasoning.encrypted_content"] and first["store"] is False
    sent_back = [i for i in second["input"] if i.get("type") == "reasoning"]
    assert len(sent_back) == 1 and sent_back[0]["encrypted_content"]
    assert sent_back[0]["id"].startswith("rs_")
    # the reasoning item comes right before the call it led to
    kinds = [i.get("type", "message") for i in second["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    text = "".join(u.text for u in updates)
    assert f"I remember my reasoning {sent_back[0]['id']}" in text


async def test_reasoning_without_its_encrypted_form_is_refused_by_the_peer(
    peer: ResponsesPeer,
) -> None:
    """The peer checks reasoning as OpenAI does: unstored and unencrypted is a 404."""
    made = client(peer)
    history = [
        ChatMessage.user("hi"),
        ChatMessage(
            role=Role.ASSISTANT,
            contents=[
                ReasoningContent(text="thought", signature="rs_9999"),
                TextContent(text="ok"),
            ],
        ),
        ChatMessage.user("again"),
    ]
    with pytest.raises(ModelNotFoundError) as caught:
        await made.get_response(history)
    assert "rs_9999" in str(caught.value) and "store" in str(caught.value)
    assert caught.value.status == 404 and caught.value.request_id is not None


async def test_reasoning_of_other_providers_is_not_sent(peer: ResponsesPeer) -> None:
    history = [
        ChatMessage.user("hi"),
        ChatMessage(
            role=Role.ASSISTANT,
            contents=[
                ReasoningContent(text="claude thought", signature="EqQBCkYIBxgCKkD"),
                TextContent(text="ok"),
            ],
        ),
        ChatMessage.user("again"),
    ]
    answer = await client(peer).get_response(history)
    assert answer.text == "You said: again"
    assert [i.get("type", "message") for i in peer.requests[0]["input"]] == ["message"] * 3


async def test_server_state_sends_only_what_followed_the_last_answer(peer: ResponsesPeer) -> None:
    made = client(peer, server_state=True, reasoning_effort="low")
    agent = AgentBuilder().with_chat_client(made).with_instructions("Be kind.").build()
    session = agent.create_session()
    first = await agent.run("first turn", session=session)
    second = await agent.run("second turn", session=session)
    assert second.text.startswith("You said: second turn")
    one, two = peer.requests
    assert one["store"] is True and "previous_response_id" not in one
    assert "include" not in one  # stored reasoning needs no encrypted copy
    assert two["previous_response_id"] == first.messages[-1].message_id
    assert two["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "second turn"}]}
    ]
    assert two["instructions"] == "Be kind."  # not carried by previous_response_id


async def test_structured_output(peer: ResponsesPeer) -> None:
    class Forecast(BaseModel):
        city: str
        degrees: int

    agent = AgentBuilder().with_chat_client(client(peer)).with_output_type(Forecast).build()
    answer = await agent.run("weather?")
    assert answer.value == Forecast(city="example", degrees=1)
    fmt = peer.requests[0]["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is True
    assert fmt["name"] and set(fmt["schema"]["properties"]) == {"city", "degrees"}


async def test_hosted_tools_pass_through_and_show_in_the_stream(peer: ResponsesPeer) -> None:
    agent = (
        AgentBuilder()
        .with_chat_client(client(peer))
        .with_tools(
            [
                web_search(search_context_size="low"),
                code_interpreter(),
                remote_mcp(
                    "docs",
                    "https://mcp.example.com/sse",
                    allowed_tools=["lookup"],
                    require_approval="never",
                ),
            ]
        )
        .build()
    )
    updates = [
        u async for u in agent.run_stream("use web_search and use code_interpreter and use mcp")
    ]
    calling = [u.tool_name for u in updates if u.kind is UpdateKind.TOOL_CALLING]
    called = [u for u in updates if u.kind is UpdateKind.TOOL_CALLED]
    assert calling == ["web_search", "code_interpreter", "mcp_docs"]
    assert [u.tool_name for u in called] == calling
    assert called[0].content is not None and called[0].content.result["action"]["type"] == "search"  # type: ignore[union-attr]
    assert called[1].content.result["outputs"] == [{"type": "logs", "logs": "4\n"}]  # type: ignore[union-attr]
    assert called[2].content.result["output"] == "from the remote MCP server"  # type: ignore[union-attr]
    assert "".join(u.text for u in updates).startswith("You said: use web_search")
    assert peer.requests[0]["tools"] == [
        {"type": "web_search", "search_context_size": "low"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://mcp.example.com/sse",
            "require_approval": "never",
            "allowed_tools": ["lookup"],
        },
    ]
    assert len(peer.requests) == 1  # raf never ran a hosted tool itself


async def test_a_hosted_tool_on_chat_completions_is_refused_before_sending() -> None:
    chat = OpenAIChatClient("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    with pytest.raises(ConfigurationError, match="web_search.*openai-responses"):
        await chat.get_response([ChatMessage.user("hi")], ChatOptions(tools=[web_search()]))
    await chat.aclose()


def test_a_hosted_tool_without_what_it_needs_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="'vector_store_ids'"):
        from raf.clients.hosted_tools import hosted_tool

        hosted_tool({"type": "file_search"})
    with pytest.raises(ConfigurationError, match="must be one of"):
        from raf.clients.hosted_tools import hosted_tool

        hosted_tool({"type": "telepathy"})


async def test_images_and_documents_reach_the_model(peer: ResponsesPeer, tmp_path) -> None:
    pdf = tmp_path / "brief.pdf"
    pdf.write_bytes(b"%PDF-1.4 tiny")
    message = ChatMessage(
        role=Role.USER,
        contents=[
            TextContent(text="describe these"),
            attachment(PNG, "image/png"),
            DataContent(uri="https://example.com/cat.jpg", media_type="image/jpeg"),
            attachment(pdf),
        ],
    )
    answer = await client(peer).get_response([message])
    assert answer.text == (
        f"You said: describe these I received: image/png ({len(PNG)} bytes), "
        "image at https://example.com/cat.jpg, application/pdf (13 bytes)."
    )
    parts = peer.requests[0]["input"][0]["content"]
    assert [p["type"] for p in parts] == ["input_text", "input_image", "input_image", "input_file"]
    assert parts[3]["filename"] == "attachment.pdf"


async def test_audio_is_refused_before_any_request(peer: ResponsesPeer) -> None:
    message = ChatMessage(
        role=Role.USER,
        contents=[TextContent(text="hear this"), attachment(b"RIFF0000", "audio/wav")],
    )
    with pytest.raises(MediaError, match="Responses API does not take .*audio/wav"):
        await client(peer).get_response([message])
    assert peer.requests == []


async def test_status_request_id_and_message_survive(peer: ResponsesPeer) -> None:
    wrong = OpenAIResponsesClient("gpt-5", base_url=peer.url, api_key="sk-wrong-0000000000")
    OPEN.append(wrong)
    with pytest.raises(AuthenticationError) as caught:
        await wrong.get_response([ChatMessage.user("hi")])
    error = caught.value
    assert error.status == 401 and error.request_id and error.request_id.startswith("req_")
    assert "Incorrect API key provided." in str(error) and error.request_id in str(error)
    assert "sk-wrong" not in str(error)
    with pytest.raises(ModelNotFoundError, match="missing-model"):
        await client(peer, "missing-model").get_response([ChatMessage.user("hi")])


async def test_a_failed_response_is_a_server_error(peer: ResponsesPeer) -> None:
    for stream in (False, True):
        made = client(peer)
        with pytest.raises(ServerError, match="The model failed to answer") as caught:
            if stream:
                [u async for u in made.get_streaming_response([ChatMessage.user("fail")])]
            else:
                await made.get_response([ChatMessage.user("fail")])
        assert caught.value.retryable


async def test_retries_server_errors(peer: ResponsesPeer) -> None:
    peer.fail_next(500, "The server had an error while processing your request.", count=2)
    retrying = RetryingChatClient(client(peer), base_delay=0.01)
    answer = await retrying.get_response([ChatMessage.user("after the storm")])
    assert answer.text == "You said: after the storm"
    assert len(peer.requests) == 3
    # the SDK's own retries are off: RetryingChatClient alone decides
    peer.fail_next(500, "The server had an error while processing your request.")
    with pytest.raises(ServerError, match="server had an error"):
        await client(peer).get_response([ChatMessage.user("once")])
    assert len(peer.requests) == 4


async def test_a_bad_request_is_not_retried(peer: ResponsesPeer) -> None:
    peer.fail_next(400, "Invalid value for 'temperature'.", code="invalid_value")
    retrying = RetryingChatClient(client(peer), base_delay=0.01)
    with pytest.raises(Exception, match="Invalid value for 'temperature'"):
        await retrying.get_response([ChatMessage.user("hi")])
    assert len(peer.requests) == 1


def test_model_string_and_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789")
    spec = parse_model_spec("openai-responses:gpt-5")
    assert (spec.provider, spec.model, str(spec)) == (
        "openai-responses",
        "gpt-5",
        "openai-responses:gpt-5",
    )
    resolved = resolve_model("openai-responses:gpt-5", server_state=True)
    assert isinstance(resolved, RetryingChatClient)
    inner = resolved.inner
    assert isinstance(inner, OpenAIResponsesClient) and inner.server_state and inner.store
    hooked = responses_client("gpt-5", base_url="http://127.0.0.1:9/v1", timeout=5)
    assert isinstance(hooked, OpenAIResponsesClient) and hooked.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigurationError, match="takes no setting 'stream_usage'"):
        resolve_model("openai-responses:gpt-5", stream_usage=False)


def test_request_body_is_json(peer: ResponsesPeer) -> None:
    """Everything the wire format builds is plain JSON (nothing the SDK must convert)."""
    made = client(peer, reasoning_effort="high")
    body = made.wire.request(
        [ChatMessage.user("x")],
        ChatOptions(tools=[get_weather, web_search()], tool_choice="get_weather", max_tokens=50),
        model="gpt-5",
        stream=False,
    )
    assert json.loads(json.dumps(body)) == body
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["max_output_tokens"] == 50


def test_hosted_results_in_a_session_do_not_reach_other_apis() -> None:
    """A session answered with a hosted web search can move to any other client: the
    answer's own (hosted) results are never sent as tool results."""
    from raf.clients.anthropic.wire import to_anthropic_messages
    from raf.clients.bedrock.wire import to_converse
    from raf.clients.gemini.wire import to_contents
    from raf.clients.ollama.wire import to_ollama_messages
    from raf.clients.openai.responses_wire import to_input
    from raf.clients.openai.wire import to_openai_messages
    from raf.core.contents import FunctionResultContent

    searched = FunctionResultContent(call_id="ws_1", name="web_search", result={"status": "ok"})
    history = [
        ChatMessage.user("search"),
        ChatMessage(role=Role.ASSISTANT, contents=[searched, TextContent(text="found it")]),
        ChatMessage.user("thanks"),
    ]
    shapes = [
        to_anthropic_messages(history)[1],
        to_converse(history)[1],
        to_contents(history)[1],
        to_ollama_messages(history),
        to_openai_messages(history),
        to_input(history)[1],
    ]
    for shape in shapes:
        text = json.dumps(shape)
        assert "ws_1" not in text and "found it" in text, text
