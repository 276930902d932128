"""OllamaClient (native `/api/chat`) against a loopback server written from Ollama's API
documentation (tests/clients/ollama_peer.py: JSON and JSON-lines answers, tool calls,
images, errors), because a real Ollama needs a model download."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import BaseModel

from raf.agent.builder import AgentBuilder
from raf.clients.errors import BadRequestError, ModelNotFoundError, ServerError
from raf.clients.media import MediaError, attachment
from raf.clients.models import parse_model_spec, resolve_model
from raf.clients.ollama.client import OllamaClient
from raf.clients.retry import RetryingChatClient
from raf.core.contents import DataContent, FunctionCallContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from tests.clients.common import PNG, get_weather
from tests.clients.ollama_peer import OllamaPeer


@pytest.fixture
def peer() -> Iterator[OllamaPeer]:
    with OllamaPeer() as server:
        yield server


OPEN: list[OllamaClient] = []


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def client(peer: OllamaPeer, model: str = "qwen-peer", **settings: object) -> OllamaClient:
    made = OllamaClient(model, base_url=peer.url, **settings)  # type: ignore[arg-type]
    OPEN.append(made)
    return made


async def test_plain_answer_with_ollama_options(peer: OllamaPeer) -> None:
    made = client(peer, keep_alive="30m", num_ctx=8192, options={"repeat_penalty": 1.1})
    answer = await made.get_response(
        [ChatMessage.system("Be brief."), ChatMessage.user("hello")],
        ChatOptions(temperature=0.2, max_tokens=100, seed=7),
    )
    assert answer.text == "You said: hello"
    assert answer.finish_reason is FinishReason.STOP and answer.model_id == "qwen-peer"
    assert answer.usage is not None and answer.usage.input_tokens == 3
    sent = peer.requests[0]
    assert sent["stream"] is False and sent["keep_alive"] == "30m"
    assert sent["options"] == {
        "repeat_penalty": 1.1,
        "temperature": 0.2,
        "seed": 7,
        "num_predict": 100,
        "num_ctx": 8192,
    }
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]


async def test_stream_of_json_lines_folds_like_the_whole(peer: OllamaPeer) -> None:
    made = client(peer, think=True)
    messages = [ChatMessage.user("several words to stream")]
    updates = [u async for u in made.get_streaming_response(messages)]
    assert [u.reasoning for u in updates if u.kind is UpdateKind.REASONING_DELTA] == ["Hmm. "]
    deltas = [u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert len(deltas) > 3 and "".join(deltas) == "You said: several words to stream"
    assert peer.requests[0]["think"] is True and peer.requests[0]["stream"] is True
    whole = await made.get_response(messages)
    assert fold_updates(updates).messages[0].contents == whole.messages[0].contents


async def test_agent_runs_a_tool(peer: OllamaPeer) -> None:
    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(get_weather).build()
    answer = await agent.run('call get_weather {"city": "Lima"}')
    assert answer.text == "The tools said: sunny in Lima"
    second = peer.requests[1]["messages"]
    assert second[1]["tool_calls"] == [
        {"function": {"name": "get_weather", "arguments": {"city": "Lima"}}}
    ]
    assert second[2] == {"role": "tool", "content": "sunny in Lima", "tool_name": "get_weather"}
    assert peer.requests[0]["tools"][0]["function"]["name"] == "get_weather"


async def test_streamed_tool_call(peer: OllamaPeer) -> None:
    updates = [
        u
        async for u in client(peer).get_streaming_response(
            [ChatMessage.user('call get_weather {"city": "Quito"}')],
            ChatOptions(tools=[get_weather]),
        )
    ]
    ended = [u.content for u in updates if u.kind is UpdateKind.TOOL_CALL_ENDED]
    assert len(ended) == 1 and isinstance(ended[0], FunctionCallContent)
    assert ended[0].arguments == {"city": "Quito"} and ended[0].name == "get_weather"
    assert updates[-1].finish_reason is FinishReason.TOOL_CALLS


async def test_structured_output_is_a_format_schema(peer: OllamaPeer) -> None:
    class Forecast(BaseModel):
        city: str
        degrees: int

    agent = AgentBuilder().with_chat_client(client(peer)).with_output_type(Forecast).build()
    answer = await agent.run("weather?")
    assert answer.value == Forecast(city="example", degrees=1)
    assert peer.requests[0]["format"]["properties"].keys() == {"city", "degrees"}


async def test_an_image_reaches_a_vision_model(peer: OllamaPeer) -> None:
    message = ChatMessage(
        role=Role.USER, contents=[TextContent(text="what is this"), attachment(PNG, "image/png")]
    )
    answer = await client(peer, "llava-peer").get_response([message])
    assert answer.text == f"You said: what is this I saw {len(PNG)} bytes of images."
    assert peer.requests[0]["messages"][0]["images"] == [base64.b64encode(PNG).decode()]


async def test_links_and_documents_are_refused_before_sending(peer: OllamaPeer) -> None:
    link = DataContent(uri="https://example.com/cat.png", media_type="image/png")
    with pytest.raises(MediaError, match="Ollama takes images as bytes"):
        await client(peer, "llava-peer").get_response(
            [ChatMessage(role=Role.USER, contents=[link])]
        )
    pdf = attachment(b"%PDF-1.4", "application/pdf")
    with pytest.raises(MediaError, match="Ollama does not take .*application/pdf"):
        await client(peer, "llava-peer").get_response([ChatMessage(role=Role.USER, contents=[pdf])])
    assert peer.requests == []


async def test_errors_keep_status_and_message(peer: OllamaPeer) -> None:
    with pytest.raises(ModelNotFoundError, match='model "nope" not found, try pulling it first'):
        await client(peer, "nope").get_response([ChatMessage.user("hi")])
    with pytest.raises(ServerError, match="does not support images") as caught:
        image = ChatMessage(role=Role.USER, contents=[attachment(PNG, "image/png")])
        [u async for u in client(peer).get_streaming_response([image])]
    assert caught.value.status == 500
    peer.fail_next(400, "invalid options")
    with pytest.raises(BadRequestError, match="HTTP 400.*invalid options"):
        await client(peer).get_response([ChatMessage.user("hi")])


async def test_retries_a_busy_server(peer: OllamaPeer) -> None:
    peer.fail_next(503, "server busy", count=2)
    retrying = RetryingChatClient(client(peer), base_delay=0.01)
    assert (await retrying.get_response([ChatMessage.user("hi")])).text == "You said: hi"
    assert len(peer.requests) == 3


def test_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:5555")
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    spec = parse_model_spec("ollama-native:qwen3:8b")
    assert (spec.provider, spec.model, spec.base_url) == (
        "ollama-native",
        "qwen3:8b",
        "http://127.0.0.1:5555",
    )
    resolved = resolve_model("ollama-native:qwen3:8b", num_ctx=4096)
    assert isinstance(resolved, RetryingChatClient)
    inner = resolved.inner
    assert isinstance(inner, OllamaClient) and inner.base_url == "http://127.0.0.1:5555"
    assert inner.wire.num_ctx == 4096
