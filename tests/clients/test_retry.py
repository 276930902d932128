"""RetryingChatClient against a fault-injecting server: what is retried, how long it waits."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from raf.agent.builder import AgentBuilder
from raf.clients.errors import (
    AuthenticationError,
    BadRequestError,
    ClientError,
    ModelConnectionError,
    ModelNotFoundError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    StreamInterruptedError,
)
from raf.clients.openai.client import OpenAIChatClient
from raf.clients.retry import RetryingChatClient
from raf.core.chat_client import ChatClientBuilder
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import UpdateKind
from tests.clients.faultserver import FaultServer, Reply, chunk, completion

OPEN: list[OpenAIChatClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def leaf(url: str, timeout: float = 10.0) -> OpenAIChatClient:
    client = OpenAIChatClient(
        "m", base_url=f"{url}/v1", api_key="sk-test-123456789", timeout=timeout
    )
    OPEN.append(client)
    return client


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def error(status: int, message: str = "boom", **headers: str) -> Reply:
    return Reply(status=status, json_body={"error": {"message": message}}, headers=headers)


def stream_events() -> list[object]:
    return [
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, finish="stop"),
        "[DONE]",
    ]


async def test_429_waits_as_retry_after_says(fault: FaultServer) -> None:
    fault.reply(error(429, "slow down", **{"Retry-After": "3"}), Reply(json_body=completion("ok")))
    sleeps = Sleeps()
    client = RetryingChatClient(leaf(fault.url), sleep=sleeps, base_delay=0.01)
    response = await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert response.text == "ok"
    assert len(fault.seen) == 2 and sleeps.waits == [3.0]


async def test_503_with_retry_after_waits_as_asked(fault: FaultServer) -> None:
    fault.reply(error(503, "overloaded", **{"Retry-After": "4"}), Reply(json_body=completion("ok")))
    sleeps = Sleeps()
    client = RetryingChatClient(leaf(fault.url), sleep=sleeps, base_delay=0.01)
    assert (await client.get_response([ChatMessage.user("x")], ChatOptions())).text == "ok"
    assert sleeps.waits == [4.0]


async def test_a_retry_after_longer_than_allowed_is_not_cut_short(fault: FaultServer) -> None:
    fault.reply(error(429, "quota", **{"Retry-After": "120"}), Reply(json_body=completion("ok")))
    sleeps = Sleeps()
    client = RetryingChatClient(leaf(fault.url), sleep=sleeps, max_retry_after=60)
    with pytest.raises(RateLimitError, match="wait 120s") as info:
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert info.value.retry_after == 120 and sleeps.waits == [] and len(fault.seen) == 1


async def test_a_rate_limit_that_outlasts_the_retries_does_not_say_wrap_it(
    fault: FaultServer,
) -> None:
    fault.reply(error(429, "slow down"), error(429, "slow down"), error(429, "slow down"))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps(), max_retries=2)
    with pytest.raises(RateLimitError) as info:
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    message = str(info.value)
    assert "still rate limited after 2 retries" in message and "wrap the client" not in message
    assert len(fault.seen) == 3
    fault.reply(error(429, "slow down"))
    with pytest.raises(RateLimitError, match="wrap the client in RetryingChatClient"):
        await leaf(fault.url).get_response([ChatMessage.user("x")], ChatOptions())


async def test_reset_connection_is_retried(fault: FaultServer) -> None:
    fault.reply(Reply(reset=True), Reply(reset=True), Reply(json_body=completion("ok")))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps(), max_retries=2)
    assert (await client.get_response([ChatMessage.user("x")], ChatOptions())).text == "ok"
    assert client.attempts == 3 and len(fault.seen) == 3
    fault.reply(Reply(reset=True))
    with pytest.raises(ModelConnectionError, match="check the base URL"):
        await RetryingChatClient(leaf(fault.url), sleep=Sleeps(), max_retries=1).get_response(
            [ChatMessage.user("x")], ChatOptions()
        )
    assert len(fault.seen) == 2


async def test_stream_retries_a_reset_before_data(fault: FaultServer) -> None:
    fault.reply(Reply(reset=True), Reply(events=stream_events()))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps())
    updates = [
        u async for u in client.get_streaming_response([ChatMessage.user("x")], ChatOptions())
    ]
    assert "".join(u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA) == "Hello"
    assert client.attempts == 2


async def test_5xx_backs_off_exponentially_with_jitter(fault: FaultServer) -> None:
    fault.reply(error(500), error(503), error(502), Reply(json_body=completion("ok")))
    sleeps = Sleeps()
    client = RetryingChatClient(leaf(fault.url), sleep=sleeps, base_delay=1.0, max_retries=3)
    assert (await client.get_response([ChatMessage.user("x")], ChatOptions())).text == "ok"
    assert client.attempts == 4 and len(sleeps.waits) == 3
    for attempt, wait in enumerate(sleeps.waits):
        assert 0 <= wait <= 2**attempt


async def test_gives_up_after_max_retries(fault: FaultServer) -> None:
    fault.reply(error(500))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps(), max_retries=2)
    with pytest.raises(ServerError):
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert len(fault.seen) == 3


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, ModelNotFoundError),
        (422, BadRequestError),
    ],
)
async def test_other_4xx_are_never_retried(
    fault: FaultServer, status: int, kind: type[ClientError]
) -> None:
    fault.reply(error(status), Reply(json_body=completion("ok")))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps())
    with pytest.raises(kind, match=f"HTTP {status}") as info:
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert type(info.value) is kind
    assert info.value.retryable is False and info.value.status == status
    assert len(fault.seen) == 1
    if status in (400, 422):
        assert isinstance(info.value, BadRequestError)


async def test_slow_response_past_the_timeout_is_retried_then_raised(fault: FaultServer) -> None:
    fault.reply(Reply(json_body=completion("late"), delay=1.5))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps(), timeout=0.3, max_retries=1)
    with pytest.raises(RequestTimeoutError, match="did not answer within 0.3s"):
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert client.attempts == 2


async def test_client_timeout_alone_raises_a_timeout_error(fault: FaultServer) -> None:
    fault.reply(Reply(json_body=completion("late"), delay=1.5))
    with pytest.raises(RequestTimeoutError):
        await leaf(fault.url, timeout=0.3).get_response([ChatMessage.user("x")], ChatOptions())


async def test_refused_connection_is_retried() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = RetryingChatClient(leaf(f"http://127.0.0.1:{port}"), sleep=Sleeps(), max_retries=2)
    with pytest.raises(ModelConnectionError):
        await client.get_response([ChatMessage.user("x")], ChatOptions())
    assert client.attempts == 3


async def test_stream_retries_before_its_first_update(fault: FaultServer) -> None:
    fault.reply(error(503), Reply(events=stream_events()))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps())
    text = "".join(
        [
            u.text
            async for u in client.get_streaming_response([ChatMessage.user("x")], ChatOptions())
            if u.kind is UpdateKind.TEXT_DELTA
        ]
    )
    assert text == "Hello" and client.attempts == 2


async def test_stream_broken_midway_raises_without_retry(fault: FaultServer) -> None:
    fault.reply(Reply(events=stream_events(), cut_after=1), Reply(events=stream_events()))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps())
    got = []
    with pytest.raises(StreamInterruptedError):
        async for update in client.get_streaming_response([ChatMessage.user("x")], ChatOptions()):
            got.append(update)
    assert [u.text for u in got] == ["Hel"] and client.attempts == 1


async def test_agent_stores_nothing_when_the_stream_breaks(fault: FaultServer) -> None:
    model = ChatClientBuilder(leaf(fault.url)).use(RetryingChatClient.wrap(max_retries=1)).build()
    agent = AgentBuilder("a").with_chat_client(model).build()
    session = agent.create_session()
    fault.reply(Reply(events=stream_events()))
    async for _ in agent.run_stream("first", session=session):
        pass
    assert len(session.messages) == 2
    fault.reply(Reply(events=stream_events(), cut_after=1))
    with pytest.raises(StreamInterruptedError):
        async for _ in agent.run_stream("second", session=session):
            pass
    assert [m.text for m in session.messages] == ["first", "Hello"]


def test_builder_use_wraps_the_leaf(fault: FaultServer) -> None:
    inner = leaf(fault.url)
    model = ChatClientBuilder(inner).use(RetryingChatClient.wrap(max_retries=5)).build()
    assert isinstance(model, RetryingChatClient) and model.inner is inner
    assert model.max_retries == 5


async def test_stream_stalling_midway_times_out_without_retry(fault: FaultServer) -> None:
    fault.reply(Reply(events=stream_events(), stall_after=1, delay=1.5))
    client = RetryingChatClient(leaf(fault.url), sleep=Sleeps(), timeout=0.3)
    got = []
    with pytest.raises(RequestTimeoutError):
        async for update in client.get_streaming_response([ChatMessage.user("x")], ChatOptions()):
            got.append(update.text)
    assert got == ["Hel"] and client.attempts == 1


async def test_consumer_may_stop_a_stream_early(fault: FaultServer) -> None:
    fault.reply(Reply(events=stream_events()))
    client = leaf(fault.url)
    stream = client.get_streaming_response([ChatMessage.user("x")], ChatOptions())
    async for update in stream:
        assert update.text == "Hel"
        break
    await stream.aclose()  # type: ignore[attr-defined]
    fault.reply(Reply(json_body=completion("still works")))
    assert (await client.get_response([ChatMessage.user("x")], ChatOptions())).text == "still works"
