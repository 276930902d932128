"""GoogleGenAIClient through the official `google-genai` SDK against a loopback server
written from the Gemini API's REST reference (tests/clients/gemini_peer.py:
generateContent JSON, streamGenerateContent server-sent events, thought signatures,
safety settings, Google's error bodies), because Gemini has no offline server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import BaseModel

from raf.agent.builder import AgentBuilder
from raf.clients.errors import AuthenticationError, ModelNotFoundError, ServerError
from raf.clients.gemini.native import GoogleGenAIClient
from raf.clients.media import MediaError, attachment
from raf.clients.models import resolve_model
from raf.clients.retry import RetryingChatClient
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
)
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from tests.clients.common import PNG, get_weather
from tests.clients.gemini_peer import SIGNATURE, GeminiPeer, camel

MODEL = "gemini-peer-flash"


@tool
def signed_only(city: str) -> str:
    """A tool whose calls the peer wants back with their thought signature."""
    return f"signed {city}"


@pytest.fixture
def peer() -> Iterator[GeminiPeer]:
    with GeminiPeer() as server:
        yield server


OPEN: list[GoogleGenAIClient] = []


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def client(peer: GeminiPeer, model: str = MODEL, **settings: object) -> GoogleGenAIClient:
    settings.setdefault("api_key", peer.key)
    made = GoogleGenAIClient(model, base_url=peer.url, **settings)  # type: ignore[arg-type]
    OPEN.append(made)
    return made


async def test_answers_with_usage_and_settings_on_the_wire(peer: GeminiPeer) -> None:
    answer = await client(peer).get_response(
        [ChatMessage.system("Be brief."), ChatMessage.user("hello gemini")],
        ChatOptions(temperature=0.3, max_tokens=64, stop=["END"], seed=3),
    )
    assert answer.text == "You said: hello gemini"
    assert answer.model_id == "gemini-peer-flash-001" and answer.finish_reason is FinishReason.STOP
    assert answer.usage is not None and answer.usage.input_tokens > 0
    sent = peer.requests[0]
    assert sent["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert sent["generationConfig"] == {
        "temperature": 0.3,
        "maxOutputTokens": 64,
        "stopSequences": ["END"],
        "seed": 3,
    }
    assert peer.paths[0].endswith(f"/models/{MODEL}:generateContent")


async def test_stream_folds_like_the_whole(peer: GeminiPeer) -> None:
    made = client(peer)
    messages = [ChatMessage.user("stream a few words")]
    updates = [u async for u in made.get_streaming_response(messages)]
    deltas = [u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert len(deltas) > 3 and "".join(deltas) == "You said: stream a few words"
    assert peer.paths[0].endswith(":streamGenerateContent?alt=sse")
    whole = await made.get_response(messages)
    assert fold_updates(updates).messages[0].contents == whole.messages[0].contents


async def test_agent_runs_a_tool(peer: GeminiPeer) -> None:
    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(get_weather).build()
    answer = await agent.run('call get_weather {"city": "Accra"}')
    assert answer.text == 'The tools said: "sunny in Accra"'
    second = peer.requests[1]["contents"]
    assert [c["role"] for c in second] == ["user", "model", "user"]
    call = second[1]["parts"][0]["functionCall"]
    assert call["name"] == "get_weather" and call["args"] == {"city": "Accra"}
    assert second[2]["parts"][0]["functionResponse"] == {
        "id": call["id"],
        "name": "get_weather",
        "response": {"result": "sunny in Accra"},
    }
    declared = camel(peer.requests[0]["tools"][0]["functionDeclarations"][0])
    assert declared["parametersJsonSchema"] == get_weather.parameters


async def test_thinking_budget_and_thought_signatures_round_trip(peer: GeminiPeer) -> None:
    made = client(peer, thinking_budget=512, include_thoughts=True)
    agent = AgentBuilder().with_chat_client(made).with_tool(signed_only).build()
    updates = [u async for u in agent.run_stream('call signed_only {"city": "Lagos"}')]
    thoughts = "".join(u.reasoning for u in updates if u.kind is UpdateKind.REASONING_DELTA)
    assert thoughts.startswith("Considering: call signed_only")
    assert "".join(u.text for u in updates) == 'The tools said: "signed Lagos"'
    config = camel(peer.requests[0]["generationConfig"]["thinkingConfig"])
    assert config == {"includeThoughts": True, "thinkingBudget": 512}
    call_part = peer.requests[1]["contents"][1]["parts"][-1]
    assert call_part["thoughtSignature"] == SIGNATURE and "functionCall" in call_part


async def test_a_lost_signature_is_the_peers_400(peer: GeminiPeer) -> None:
    history = [
        ChatMessage.user('call signed_only {"city": "x"}'),
        ChatMessage(
            role=Role.ASSISTANT,
            contents=[FunctionCallContent(call_id="fc-1", name="signed_only", arguments={})],
        ),
        ChatMessage.user("go on"),
    ]
    with pytest.raises(Exception, match="missing a thought_signature"):
        await client(peer).get_response(history)
    signed = [history[0], ChatMessage(
        role=Role.ASSISTANT,
        contents=[ReasoningContent(text="", signature=SIGNATURE), *history[1].contents],
    ), history[2]]  # fmt: skip
    assert (await client(peer).get_response(signed)).text == "You said: go on"


async def test_safety_settings_reach_the_model(peer: GeminiPeer) -> None:
    strict = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_LOW_AND_ABOVE"}]
    answer = await client(peer, safety_settings=strict).get_response(
        [ChatMessage.user("something dangerous")]
    )
    assert answer.finish_reason is FinishReason.CONTENT_FILTER and answer.text == ""
    assert peer.requests[0]["safetySettings"] == strict


async def test_google_search_grounding_streams_as_a_hosted_call(peer: GeminiPeer) -> None:
    made = client(peer, google_search=True)
    agent = AgentBuilder().with_chat_client(made).with_tool(get_weather).build()
    session = agent.create_session()
    updates = [
        u async for u in agent.run_stream("Who won the 2024 Tour de France?", session=session)
    ]
    offered = [camel(t) for t in peer.requests[0]["tools"]]
    assert {"googleSearch": {}} in offered and len(offered) == 2
    functions = next(t["functionDeclarations"] for t in offered if "functionDeclarations" in t)
    assert functions[0]["name"] == "get_weather"
    assert [u.kind for u in updates if u.tool_name == "google_search"] == [
        UpdateKind.TOOL_CALLING,
        UpdateKind.TOOL_CALLED,
    ]
    called = next(u for u in updates if u.kind is UpdateKind.TOOL_CALLED)
    assert isinstance(called.content, FunctionResultContent)
    grounding = called.content.result
    assert grounding["web_search_queries"] == ["Who won the 2024 Tour de France?"]
    assert grounding["grounding_chunks"][0]["web"]["uri"].startswith("https://")
    assert grounding["grounding_supports"][0]["grounding_chunk_indices"] == [0]
    assert "<div" in grounding["search_entry_point"]["rendered_content"]
    text = "".join(u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA)
    assert text == "Searched: Who won the 2024 Tour de France?"
    # the whole answer carries the same; the next request does not send it back
    whole = await made.get_response([ChatMessage.user("Who won the 2024 Tour de France?")])
    (kept,) = [c for c in whole.messages[0].contents if isinstance(c, FunctionResultContent)]
    assert kept.name == "google_search" and kept.call_id.startswith("google_search_peer-")
    assert kept.result["web_search_queries"] == grounding["web_search_queries"]
    await agent.run("And in 2023?", session=session)
    again = peer.requests[-1]["contents"]
    assert [c["role"] for c in again] == ["user", "model", "user"]
    assert all("functionResponse" not in part for c in again for part in c["parts"])


async def test_structured_output(peer: GeminiPeer) -> None:
    class Forecast(BaseModel):
        city: str
        degrees: int

    agent = AgentBuilder().with_chat_client(client(peer)).with_output_type(Forecast).build()
    assert (await agent.run("weather?")).value == Forecast(city="example", degrees=1)
    assert peer.requests[0]["generationConfig"]["responseMimeType"] == "application/json"


async def test_images_pdfs_audio_and_file_uris(peer: GeminiPeer) -> None:
    message = ChatMessage(
        role=Role.USER,
        contents=[
            TextContent(text="what are these"),
            attachment(PNG, "image/png"),
            attachment(b"%PDF-1.4", "application/pdf"),
            attachment(b"ID3audio", "audio/mpeg"),
            DataContent(
                uri="https://generativelanguage.googleapis.com/v1beta/files/abc",
                media_type="application/pdf",
            ),
        ],
    )
    answer = await client(peer).get_response([message])
    assert answer.text == (
        f"You said: what are these I received: image/png ({len(PNG)} bytes), "
        "application/pdf (8 bytes), audio/mpeg (8 bytes), application/pdf at "
        "https://generativelanguage.googleapis.com/v1beta/files/abc."
    )
    # a type raf does not send to Gemini is refused before any request
    video = DataContent(uri="https://example.com/clip.mp4", media_type="video/mp4")
    with pytest.raises(MediaError, match="Gemini does not take .*video/mp4"):
        await client(peer).get_response([ChatMessage(role=Role.USER, contents=[video])])
    assert len(peer.requests) == 1


async def test_a_tool_can_return_an_image(peer: GeminiPeer) -> None:
    @tool
    def snapshot() -> DataContent:
        """Take a picture."""
        return attachment(PNG, "image/png")

    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(snapshot).build()
    await agent.run("call snapshot {}")
    parts = peer.requests[1]["contents"][2]["parts"]
    assert (
        "functionResponse" in parts[0] and camel(parts[1]["inlineData"])["mimeType"] == "image/png"
    )


async def test_errors_keep_status_and_message(peer: GeminiPeer) -> None:
    with pytest.raises(AuthenticationError, match="API key not valid") as caught:
        await client(peer, api_key="wrong-key-000000").get_response([ChatMessage.user("hi")])
    assert caught.value.status == 401 and "wrong-key" not in str(caught.value)
    with pytest.raises(ModelNotFoundError, match="models/gemini-nope is not found.*NOT_FOUND"):
        await client(peer, "gemini-nope").get_response([ChatMessage.user("hi")])


async def test_retries_unavailable(peer: GeminiPeer) -> None:
    peer.fail_next(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", count=2)
    retrying = RetryingChatClient(client(peer), base_delay=0.01)
    assert (await retrying.get_response([ChatMessage.user("x")])).text == "You said: x"
    assert len(peer.requests) == 3
    peer.fail_next(503, "UNAVAILABLE", "The model is overloaded.")
    with pytest.raises(ServerError, match="overloaded.*UNAVAILABLE"):
        await client(peer).get_response([ChatMessage.user("x")])


def test_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k-0123456789")
    resolved = resolve_model("gemini-native:gemini-2.5-flash", thinking_budget=0)
    assert isinstance(resolved, RetryingChatClient)
    inner = resolved.inner
    assert isinstance(inner, GoogleGenAIClient) and inner.wire.thinking_budget == 0
