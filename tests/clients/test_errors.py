"""Client errors: advice in every message, and an API key never in errors, logs or reprs."""

from __future__ import annotations

import json
import logging
import socket

import pytest

from raf.clients.anthropic.client import AnthropicChatClient
from raf.clients.errors import (
    BadRequestError,
    ContextOverflowError,
    ModelNotFoundError,
    RateLimitError,
    Secret,
    ServerError,
    error_for_status,
    parse_retry_after,
    redact,
)
from raf.clients.openai.client import OpenAIChatClient
from raf.clients.retry import RetryingChatClient
from raf.core.errors import ModelError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from tests.clients.faultserver import FaultServer, Reply

CO = ContextOverflowError
KEY = "sk-proj-TOPSECRET-0123456789abcdef"


def test_redact_hides_given_secrets_and_key_shapes() -> None:
    text = f"bad key {KEY}; Authorization: Bearer abcdefghijklmnop; api_key=zzzzzzzzzz"
    out = redact(text, [KEY])
    assert "TOPSECRET" not in out and "abcdefghijklmnop" not in out and "zzzzzzzzzz" not in out
    assert redact("sk-ant-api03-AAAAAAAAAAAAAAAA") == "***"


def test_secret_never_shows_itself() -> None:
    secret = Secret(KEY)
    assert "TOPSECRET" not in repr(secret) and "TOPSECRET" not in str(secret)
    assert f"{secret}" == "Secret('***')" and secret.reveal() == KEY


@pytest.mark.parametrize(
    ("status", "detail", "kind", "retryable"),
    [
        (404, "model not found", ModelNotFoundError, False),
        (400, "context_length_exceeded", ContextOverflowError, False),
        (413, "request too large", ContextOverflowError, False),
        (429, "rate", RateLimitError, True),
        (503, "overloaded", ServerError, True),
        (529, "overloaded", ServerError, True),
        # llama.cpp's server, Gemini's compatible API
        (400, "the request exceeds the available context size, try increasing it", CO, False),
        (400, "The input token count (9) exceeds the maximum number of tokens allowed", CO, False),
        # DeepSeek and OpenRouter answer 400 for a model they do not know
        (400, "Model Not Exist", ModelNotFoundError, False),
        (400, "foo/bar is not a valid model ID", ModelNotFoundError, False),
        (400, "This model's maximum context length is 8192 tokens", CO, False),
        (400, "messages must not be empty", BadRequestError, False),
    ],
)
def test_status_mapping(status: int, detail: str, kind: type[ModelError], retryable: bool) -> None:
    error = error_for_status(status, f"{detail} for {KEY}", provider="p", model="m", secrets=[KEY])
    assert isinstance(error, kind) and error.retryable is retryable and error.status == status
    assert "TOPSECRET" not in str(error)


def test_retry_after_parses_seconds_and_dates() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def test_key_appears_in_no_error_log_or_repr(
    fault: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fault.reply(
        Reply(status=401, json_body={"error": {"message": f"Incorrect API key provided: {KEY}"}}),
    )
    openai_client = OpenAIChatClient("m", base_url=f"{fault.url}/v1", api_key=KEY)
    anthropic_client = AnthropicChatClient("m", base_url=fault.url, api_key=KEY)
    texts: list[str] = [repr(openai_client), repr(anthropic_client)]
    for client in (openai_client, anthropic_client):
        retrying = RetryingChatClient(client, max_retries=1, base_delay=0.0)
        texts.append(repr(retrying))
        with pytest.raises(ModelError) as info:
            await retrying.get_response([ChatMessage.user("x")], ChatOptions())
        texts += [str(info.value), repr(info.value)]
    fault.reply(Reply(status=500, json_body={"error": {"message": f"boom {KEY}"}}))
    with pytest.raises(ServerError) as info:
        await RetryingChatClient(openai_client, max_retries=1, base_delay=0.0).get_response(
            [ChatMessage.user("x")], ChatOptions()
        )
    texts += [str(info.value)]
    texts += [record.getMessage() for record in caplog.records]
    assert any("retry" in t for t in texts)  # the retry warning was logged and checked
    for text in texts:
        assert "TOPSECRET" not in text, text
    await openai_client.aclose()
    await anthropic_client.aclose()


async def test_keys_in_headers_and_urls_stay_hidden(fault: FaultServer) -> None:
    # Azure-style: the key travels in an `api-key` header (echoed back by the server) or
    # in the URL; neither reaches an error or a repr.
    header_key = "azure0123456789TOPSECRETabcdef"
    host = fault.url.removeprefix("http://")
    clients: list[tuple[OpenAIChatClient | AnthropicChatClient, str]] = [
        (
            OpenAIChatClient(
                "m", base_url=f"{fault.url}/v1", api_key="x-unused", headers={"api-key": header_key}
            ),
            header_key,
        ),
        (
            OpenAIChatClient("m", base_url=f"http://user:{KEY}@{host}/v1", api_key="sk-o-0000"),
            KEY,
        ),
        (
            AnthropicChatClient(
                "m", base_url=fault.url, api_key="sk-ant-000000", headers={"api-key": header_key}
            ),
            header_key,
        ),
    ]
    texts = [repr(c) for c, _ in clients] + [json.dumps(vars(c), default=repr) for c, _ in clients]
    for client, secret in clients:
        fault.reply(Reply(status=401, json_body={"error": {"message": f"bad key {secret}"}}))
        with pytest.raises(ModelError) as info:
            await client.get_response([ChatMessage.user("x")], ChatOptions())
        texts.append(str(info.value))
        await client.aclose()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    dead_client = OpenAIChatClient(
        "m", base_url=f"http://127.0.0.1:{dead}/v1?api-key={header_key}", api_key="sk-x-0000"
    )
    texts.append(repr(dead_client))
    with pytest.raises(ModelError) as info:
        await dead_client.get_response([ChatMessage.user("x")], ChatOptions())
    texts.append(str(info.value))
    await dead_client.aclose()
    assert any("refused the API key" in t for t in texts) and any(
        "cannot reach" in t for t in texts
    )
    for text in texts:
        assert "TOPSECRET" not in text, text
