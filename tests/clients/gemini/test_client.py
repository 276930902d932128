"""GeminiChatClient against llm-katan's Google (Vertex AI) OpenAI-compatible endpoint.

llm-katan serves Google's OpenAI-compatible chat completions under the Vertex AI path
and answers errors in Google's shape; the two error shapes it cannot produce (a list
body, a refused key as HTTP 400) are scripted on the fault server.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import pytest

from raf.agent.builder import AgentBuilder
from raf.clients.errors import (
    AuthenticationError,
    InvalidResponseError,
    MissingApiKeyError,
    RateLimitError,
)
from raf.clients.gemini.client import GEMINI_BASE_URL, GeminiChatClient
from raf.clients.models import model_info, parse_model_spec, resolve_model
from raf.clients.retry import RetryingChatClient
from raf.core.errors import ConfigurationError
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import FinishReason, UpdateKind, fold_updates
from tests.clients.conftest import KATAN_KEY, KATAN_MODEL, run_katan
from tests.clients.faultserver import FaultServer, Reply

VERTEX_PATH = "/v1/projects/raf-test/locations/us-central1/endpoints/openapi"
OPEN: list[GeminiChatClient] = []


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


@pytest.fixture(scope="module")
def katan_with_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llm-katan that refuses any key but KATAN_KEY (and echoes a wrong one back)."""
    with run_katan(
        tmp_path_factory.mktemp("katan-keys"),
        "vertexai",
        "--validate-keys",
        "--api-keys",
        f"vertexai={KATAN_KEY}",
    ) as url:
        yield url


def _unstamped(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)


def gemini(base: str, key: str = KATAN_KEY) -> GeminiChatClient:
    client = GeminiChatClient(KATAN_MODEL, base_url=base + VERTEX_PATH, api_key=key)
    OPEN.append(client)
    return client


async def test_answers_text_with_usage(katan: str) -> None:
    response = await gemini(katan).get_response([ChatMessage.user("hello gemini")])
    assert "hello gemini" in response.text
    assert response.finish_reason is FinishReason.STOP
    assert response.usage is not None and response.usage.output_tokens > 0
    assert response.model_id == KATAN_MODEL


async def test_stream_folds_to_the_whole_answer(katan: str) -> None:
    client = gemini(katan)
    messages = [ChatMessage.system("be brief"), ChatMessage.user("stream from gemini")]
    updates = [u async for u in client.get_streaming_response(messages)]
    kinds = [u.kind for u in updates]
    assert kinds.count(UpdateKind.TEXT_DELTA) > 1
    assert kinds[-2:] == [UpdateKind.USAGE, UpdateKind.FINISHED]
    assert len({u.message_id for u in updates}) == 1
    whole = await client.get_response(messages)
    # llm-katan's echo stamps the second it answered; two calls may straddle a second
    assert _unstamped(fold_updates(updates).text) == _unstamped(whole.text)


async def test_tool_call_is_parsed(katan: str) -> None:
    response = await gemini(katan).get_response(
        [ChatMessage.user("look up raf")], ChatOptions(tools=[lookup])
    )
    (call,) = response.messages[-1].function_calls
    assert call.name == "lookup" and isinstance(call.arguments.get("term"), str)
    assert response.finish_reason is FinishReason.TOOL_CALLS


async def test_a_refused_key_is_an_authentication_error_that_hides_it(
    katan_with_keys: str,
) -> None:
    wrong = "AIzaWrongKey-0123456789abcdef"
    with pytest.raises(AuthenticationError) as info:
        await gemini(katan_with_keys, key=wrong).get_response([ChatMessage.user("x")])
    assert wrong not in str(info.value) and "gemini" in str(info.value)
    assert not info.value.retryable
    answered = await gemini(katan_with_keys).get_response([ChatMessage.user("right key")])
    assert "right key" in answered.text


async def test_googles_400_for_a_bad_key_means_authentication(fault: FaultServer) -> None:
    fault.reply(
        Reply(
            status=400,
            json_body=[
                {
                    "error": {
                        "code": 400,
                        "message": "API key not valid. Please pass a valid API key.",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ],
        )
    )
    with pytest.raises(AuthenticationError, match=r"API key not valid.*INVALID_ARGUMENT"):
        await gemini(fault.url).get_response([ChatMessage.user("x")])


async def test_quota_errors_keep_googles_status_word(fault: FaultServer) -> None:
    fault.reply(
        Reply(
            status=429,
            json_body=[
                {
                    "error": {
                        "code": 429,
                        "message": "Resource has been exhausted (e.g. check quota).",
                        "status": "RESOURCE_EXHAUSTED",
                    }
                }
            ],
            headers={"retry-after": "3"},
        )
    )
    with pytest.raises(RateLimitError, match="RESOURCE_EXHAUSTED") as info:
        await gemini(fault.url).get_response([ChatMessage.user("x")])
    assert info.value.retry_after == 3


async def test_a_web_page_names_the_base_url_to_check(fault: FaultServer) -> None:
    fault.reply(Reply(raw=b"<html>hello</html>", content_type="text/html"))
    with pytest.raises(InvalidResponseError, match="GEMINI_BASE_URL"):
        await gemini(fault.url).get_response([ChatMessage.user("x")])


def test_model_string_key_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_BASE_URL", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-env-0123456789")
    client = resolve_model("gemini:gemini-2.5-flash")
    assert isinstance(client, RetryingChatClient)
    inner = client.inner
    assert isinstance(inner, GeminiChatClient) and inner.model == "gemini-2.5-flash"
    assert inner.base_url == GEMINI_BASE_URL and inner.provider == "gemini"
    assert "AIza-from-env" not in repr(inner) and "api_key=set" in repr(inner)
    monkeypatch.setenv("GEMINI_BASE_URL", "http://127.0.0.1:9/v1beta/openai/")
    moved = resolve_model("gemini:gemini-2.5-flash", retry=False)
    assert isinstance(moved, GeminiChatClient) and moved.base_url == (
        "http://127.0.0.1:9/v1beta/openai/"
    )
    assert model_info("gemini:gemini-2.5-flash").context_window == 1_048_576
    assert model_info("gemini:gemini-2.0-flash").max_output_tokens == 8_192
    assert str(parse_model_spec("gemini:gemini-2.5-pro")) == "gemini:gemini-2.5-pro"


def test_missing_key_and_misspelt_provider_say_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="GEMINI_API_KEY"):
        resolve_model("gemini:gemini-2.5-flash")
    with pytest.raises(ConfigurationError, match="did you mean gemini:gemini-2.5-flash"):
        parse_model_spec("gemni:gemini-2.5-flash")
    with pytest.raises(ConfigurationError, match="gemini:gemini-2.5-flash"):
        parse_model_spec("gemini:")


async def test_an_agent_streams_through_a_gemini_model_string(katan: str) -> None:
    client = resolve_model(f"gemini:{KATAN_MODEL}", base_url=katan + VERTEX_PATH, api_key=KATAN_KEY)
    agent = AgentBuilder("g").with_chat_client(client).build()
    text = "".join(
        [u.text async for u in agent.run_stream("hello there") if u.kind is UpdateKind.TEXT_DELTA]
    )
    assert "hello there" in text
    assert isinstance(client, RetryingChatClient)
    await client.aclose()
