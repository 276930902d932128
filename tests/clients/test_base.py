"""The shared base: the error table and the one stream skeleton, on a provider in memory.

A provider here is the extension point itself (what a user writing a fifth provider
writes): it hands scripted events to the real skeleton and the real wire format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from raf.clients.base import ModelClient
from raf.clients.errors import (
    AuthenticationError,
    ClientError,
    InvalidResponseError,
    ModelConnectionError,
    RequestTimeoutError,
    StreamInterruptedError,
)
from raf.clients.openai.wire import ChatCompletionsWire
from raf.clients.provider import ChunkStream, ErrorTable, Provider
from raf.core.messages import ChatMessage
from raf.core.responses import UpdateKind


class Refused(Exception):
    """A stand-in SDK's status error."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


class Slow(Refused):
    """A subclass listed after its base: the first matching row must still win."""


def text_chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    return {"id": "r1", "choices": [choice]}


class ScriptStream(ChunkStream):
    def __init__(self, events: list[dict[str, Any] | BaseException]) -> None:
        self.events = events
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        for event in self.events:
            if isinstance(event, BaseException):
                raise event
            yield event

    async def aclose(self) -> None:
        self.closed = True


class ScriptProvider(Provider):
    protocol = "scripted chunks"
    hint = "; check the script"

    def __init__(self, *events: dict[str, Any] | BaseException, key: str = "") -> None:
        super().__init__("script", key=key or None, base_url="http://127.0.0.1:1/v1")
        self.streams: list[ScriptStream] = []
        self.script = list(events)

    def error_table(self) -> ErrorTable:
        return (((Slow,), "timeout"), ((Refused,), "status"), ((OSError,), "connection"))

    async def complete(self, body: dict[str, Any]) -> Any:
        raise NotImplementedError("these tests stream")

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        stream = ScriptStream(self.script)
        self.streams.append(stream)
        return stream


def client(provider: ScriptProvider) -> ModelClient[ChatCompletionsWire]:
    return ModelClient("m", provider, ChatCompletionsWire())


async def drain(provider: ScriptProvider) -> list[Any]:
    return [u async for u in client(provider).get_streaming_response([ChatMessage.user("x")])]


async def test_a_whole_stream_ends_with_finish_and_is_closed() -> None:
    provider = ScriptProvider(text_chunk("Hel"), text_chunk("lo", finish="stop"))
    updates = await drain(provider)
    assert "".join(u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA) == "Hello"
    assert updates[-1].kind is UpdateKind.FINISHED and provider.streams[0].closed


async def test_a_consumer_that_stops_early_still_closes_the_stream() -> None:
    provider = ScriptProvider(text_chunk("a"), text_chunk("b"), text_chunk("c", "stop"))
    stream = client(provider).get_streaming_response([ChatMessage.user("x")])
    first = await anext(aiter(stream))
    assert first.text == "a" and not provider.streams[0].closed
    await stream.aclose()  # type: ignore[attr-defined]
    assert provider.streams[0].closed


async def test_a_transport_failure_after_data_is_an_interrupted_stream() -> None:
    provider = ScriptProvider(text_chunk("partial"), ConnectionResetError("reset by peer"))
    with pytest.raises(StreamInterruptedError, match="broke off: reset by peer"):
        await drain(provider)
    assert provider.streams[0].closed


async def test_the_same_failure_before_data_is_translated_by_the_table() -> None:
    with pytest.raises(ModelConnectionError, match="127.0.0.1:1"):
        await drain(ScriptProvider(ConnectionResetError("refused")))


async def test_a_raf_error_after_data_keeps_its_own_words() -> None:
    named = ClientError("the model ran out of context", provider="script")
    with pytest.raises(ClientError, match="ran out of context") as info:
        await drain(ScriptProvider(text_chunk("so far"), named))
    assert info.value is named


async def test_no_event_is_not_the_protocol_and_no_end_is_a_cut() -> None:
    with pytest.raises(InvalidResponseError, match="without any event.*check the script"):
        await drain(ScriptProvider())
    with pytest.raises(StreamInterruptedError, match="end marker"):
        await drain(ScriptProvider(text_chunk("no finish reason")))


def test_the_first_matching_row_of_the_table_decides() -> None:
    provider = ScriptProvider(key="sk-script-secret-123456")
    assert isinstance(provider.translate(Slow(500, "slow"), "m"), RequestTimeoutError)
    refused = provider.translate(Refused(401, "bad key sk-script-secret-123456"), "m")
    assert isinstance(refused, AuthenticationError)
    assert "sk-script-secret" not in str(refused) and "127.0.0.1:1" in str(refused)
    unknown = KeyError("not in the table")
    assert provider.translate(unknown, "m") is unknown
