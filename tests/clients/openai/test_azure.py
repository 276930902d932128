"""AzureOpenAIClient through the official `openai` SDK (`AsyncAzureOpenAI`) against a
loopback server written from Azure OpenAI's REST reference (tests/clients/azure_peer.py:
deployment paths, `api-version`, `api-key` or Entra ID bearer tokens, Azure's error
bodies and stream chunks), because Azure has no offline server."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any

import pytest
from azure.core.credentials import AccessToken

from raf.agent.builder import AgentBuilder
from raf.clients.errors import (
    AuthenticationError,
    MissingApiKeyError,
    ModelNotFoundError,
    RateLimitError,
)
from raf.clients.media import MediaError, attachment
from raf.clients.models import resolve_model
from raf.clients.openai.azure import DEFAULT_API_VERSION, AzureOpenAIClient
from raf.clients.retry import RetryingChatClient
from raf.core.contents import DataContent, TextContent
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.responses import UpdateKind, fold_updates
from tests.clients.azure_peer import AzurePeer
from tests.clients.common import PNG, get_weather

DEPLOYMENT = "gpt-4o-deploy"


@pytest.fixture
def peer() -> Iterator[AzurePeer]:
    with AzurePeer() as server:
        yield server


OPEN: list[AzureOpenAIClient] = []


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def client(peer: AzurePeer, model: str = DEPLOYMENT, **settings: Any) -> AzureOpenAIClient:
    if "token_provider" not in settings and "credential" not in settings:
        settings.setdefault("api_key", peer.key)
    made = AzureOpenAIClient(model, endpoint=peer.endpoint, **settings)
    OPEN.append(made)
    return made


async def test_api_key_goes_in_the_api_key_header(peer: AzurePeer) -> None:
    answer = await client(peer).get_response([ChatMessage.user("hello azure")])
    assert answer.text == "You said: hello azure"
    assert answer.model_id == "gpt-4o-2024-11-20"
    assert peer.headers[0]["api-key"] == peer.key and "authorization" not in peer.headers[0]
    assert peer.queries[0]["api-version"] == [DEFAULT_API_VERSION]


async def test_entra_id_token_provider(peer: AzurePeer) -> None:
    peer.tokens.add("entra-token-1")
    asked: list[int] = []

    def provider() -> str:
        asked.append(1)
        return "entra-token-1"

    answer = await client(peer, token_provider=provider).get_response([ChatMessage.user("hi")])
    assert answer.text == "You said: hi" and asked
    assert peer.headers[0]["authorization"] == "Bearer entra-token-1"
    assert "api-key" not in peer.headers[0]

    async def async_provider() -> str:
        return "entra-token-1"

    answer = await client(peer, token_provider=async_provider).get_response(
        [ChatMessage.user("again")]
    )
    assert answer.text == "You said: again"


class _Credential:
    """An azure-identity style async credential (the AsyncTokenCredential protocol)."""

    def __init__(self) -> None:
        self.scopes: list[tuple[str, ...]] = []

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken("entra-token-2", 4_102_444_800)

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> _Credential:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


async def test_azure_identity_credential(peer: AzurePeer) -> None:
    peer.tokens.add("entra-token-2")
    credential = _Credential()
    made = client(peer, credential=credential)
    assert (await made.get_response([ChatMessage.user("hi")])).text == "You said: hi"
    assert credential.scopes == [("https://cognitiveservices.azure.com/.default",)]
    assert made.api.auth == "entra-id"  # type: ignore[attr-defined]


async def test_a_refused_token_keeps_status_request_id_and_message(peer: AzurePeer) -> None:
    with pytest.raises(AuthenticationError) as caught:
        await client(peer, token_provider=lambda: "stale-token").get_response(
            [ChatMessage.user("hi")]
        )
    error = caught.value
    assert error.status == 401 and error.request_id and error.request_id.endswith("-peer")
    assert "Access denied due to invalid subscription key" in str(error)
    with pytest.raises(ModelNotFoundError, match="deployment for this resource does not exist"):
        await client(peer, "no-such-deployment").get_response([ChatMessage.user("hi")])


async def test_stream_with_azures_filter_chunk(peer: AzurePeer) -> None:
    made = client(peer)
    updates = [u async for u in made.get_streaming_response([ChatMessage.user("a b c d")])]
    assert "".join(u.text for u in updates) == "You said: a b c d"
    assert fold_updates(updates).usage is not None
    assert updates[-1].kind is UpdateKind.FINISHED and updates[-1].model_id == "gpt-4o-2024-11-20"


async def test_agent_runs_a_tool(peer: AzurePeer) -> None:
    agent = AgentBuilder().with_chat_client(client(peer)).with_tool(get_weather).build()
    answer = await agent.run('call get_weather {"city": "Bern"}')
    assert answer.text == "The tools said: sunny in Bern"
    assert peer.requests[0]["tools"][0]["function"]["name"] == "get_weather"


async def test_image_and_pdf_parts(peer: AzurePeer) -> None:
    message = ChatMessage(
        role=Role.USER,
        contents=[
            TextContent(text="look"),
            attachment(PNG, "image/png"),
            attachment(b"%PDF-1.4", "application/pdf"),
            DataContent(uri="https://example.com/cat.jpg", media_type="image/jpeg"),
        ],
    )
    answer = await client(peer).get_response([message])
    assert answer.text == (
        f"You said: look I received: image/png ({len(PNG)} bytes), application/pdf (8 bytes), "
        "image at https://example.com/cat.jpg."
    )
    parts = peer.requests[0]["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "file", "image_url"]


async def test_audio_goes_as_input_audio(peer: AzurePeer) -> None:
    message = ChatMessage(
        role=Role.USER,
        contents=[
            TextContent(text="hear this"),
            attachment(b"RIFF0000WAVE", "audio/wav"),
            attachment(b"ID3\x03", "audio/mpeg"),
        ],
    )
    answer = await client(peer).get_response([message])
    assert answer.text == "You said: hear this I received: audio/wav, audio/mp3."
    parts = peer.requests[0]["messages"][0]["content"]
    assert parts[1] == {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(b"RIFF0000WAVE").decode(), "format": "wav"},
    }
    assert parts[2]["input_audio"]["format"] == "mp3"
    link = DataContent(uri="https://example.com/talk.wav", media_type="audio/wav")
    with pytest.raises(MediaError, match="chat completions takes audios as bytes, not links"):
        await client(peer).get_response([ChatMessage(role=Role.USER, contents=[link])])
    assert len(peer.requests) == 1


async def test_retries_rate_limits(peer: AzurePeer) -> None:
    peer.fail_next(429, "429", "Requests to the ChatCompletions_Create Operation have exceeded "
                   "call rate limit.", count=2)  # fmt: skip
    retrying = RetryingChatClient(client(peer), base_delay=0.01)
    assert (await retrying.get_response([ChatMessage.user("x")])).text == "You said: x"
    assert len(peer.requests) == 3
    # the SDK's own retries are off: RetryingChatClient alone decides
    peer.fail_next(429, "429", "Requests have exceeded call rate limit.")
    with pytest.raises(RateLimitError, match="exceeded call rate limit"):
        await client(peer).get_response([ChatMessage.user("once")])
    assert len(peer.requests) == 4


def test_settings_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIClient("d")
    with pytest.raises(MissingApiKeyError, match="AZURE_OPENAI_API_KEY"):
        AzureOpenAIClient("d", endpoint="http://127.0.0.1:9")
    with pytest.raises(ConfigurationError, match="not both"):
        AzureOpenAIClient(
            "d", endpoint="http://127.0.0.1:9", token_provider=lambda: "t", credential=_Credential()
        )
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")
    resolved = resolve_model("azure:my-deploy", token_provider=lambda: "t")
    assert isinstance(resolved, RetryingChatClient)
    assert isinstance(resolved.inner, AzureOpenAIClient) and resolved.inner.model == "my-deploy"
