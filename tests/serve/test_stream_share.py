"""One caller cannot hold every stream slot: past its share of `--max-streams` a token (or,
without tokens, an address other than loopback) gets 429 with Retry-After, in the shape
of the API it called, while other callers still get the slots left.

Every server listens on loopback and is stopped by its test; the model of each run waits
until the test releases it (or a bound passes), so the streams are open at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence

import httpx
import pytest

from raf import AgentBuilder
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.serve import AgentHost, ServeLimits, ServeSecurity, create_app, serve_in_thread
from raf.testing import FunctionChatClient

from .conftest import TOKEN_A, TOKEN_B

WAIT = 30.0
"""The longest any request or run may take here (a bound, not a measurement)."""
RUN = {"messages": "hi", "stream": True}


@contextlib.contextmanager
def serving(limits: ServeLimits, tokens: Sequence[str]) -> Iterator[tuple[str, threading.Event]]:
    """One agent, `quick`, whose every model call waits for the event yielded."""
    release = threading.Event()

    async def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        deadline = time.monotonic() + WAIT
        while not release.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return "released"

    agent = AgentBuilder("quick").with_chat_client(FunctionChatClient(answer)).build()
    security = ServeSecurity.for_bind("127.0.0.1", tokens=list(tokens), limits=limits)
    app = create_app(AgentHost([agent]), security, a2a=False)
    try:
        with serve_in_thread(app) as url:
            yield url, release
    finally:
        release.set()


@contextlib.asynccontextmanager
async def held(http: httpx.AsyncClient) -> AsyncIterator[httpx.Response]:
    """A streamed run, open (its head answered) until the block ends."""
    async with http.stream("POST", "/agents/quick/runs", json=RUN) as response:
        yield response


def caller(url: str, token: str | None = None, **headers: str) -> httpx.AsyncClient:
    if token:
        headers["authorization"] = f"Bearer {token}"
    return httpx.AsyncClient(base_url=url, headers=headers, timeout=WAIT)


async def test_a_token_past_its_share_gets_429_and_another_token_still_gets_a_slot() -> None:
    limits = ServeLimits(max_streams=8, stream_share=0.25)  # two each
    with serving(limits, [TOKEN_A, TOKEN_B]) as (url, release):
        async with caller(url, TOKEN_A) as alice, caller(url, TOKEN_B) as bob:
            async with held(alice) as one, held(alice) as two:
                assert (one.status_code, two.status_code) == (200, 200)
                over = await alice.post("/agents/quick/runs", json=RUN)
                assert over.status_code == 429, over.text
                assert over.headers["retry-after"] == "1"
                error = over.json()["error"]
                assert error["code"] == "too_many_streams"
                for said in ("this token", "2 requests", "--stream-share 0.25", "--max-streams 8"):
                    assert said in error["message"], error["message"]
                shaped = await alice.post(
                    "/v1/chat/completions",
                    json={"model": "quick", "messages": [{"role": "user", "content": "hi"}]},
                )
                assert shaped.status_code == 429
                assert shaped.json()["error"]["type"] == "requests"
                assert "--stream-share" in shaped.json()["error"]["message"]
                async with held(bob) as theirs:
                    assert theirs.status_code == 200
                    assert (await alice.get("/health")).status_code == 200  # probes are free
                    release.set()
                    assert "released" in (await theirs.aread()).decode()
                assert "released" in (await one.aread()).decode()
            # its streams ended: the token has its share again, once the server has seen
            # the second stream's connection close (asynchronous: bounded, not timed)
            deadline = time.monotonic() + WAIT
            again = await alice.post("/agents/quick/runs", json=RUN)
            while again.status_code == 429 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                again = await alice.post("/agents/quick/runs", json=RUN)
            assert again.status_code == 200 and "released" in again.text


async def test_without_tokens_an_address_a_proxy_forwards_has_a_share_and_loopback_does_not() -> (
    None
):
    limits = ServeLimits(max_streams=4, stream_share=0.25)  # one each
    with serving(limits, []) as (url, release):
        async with (
            caller(url, **{"x-forwarded-for": "203.0.113.7"}) as remote,
            caller(url, **{"x-forwarded-for": "203.0.113.8"}) as neighbour,
            caller(url) as local,
            held(remote) as one,
        ):
            assert one.status_code == 200
            over = await remote.post("/agents/quick/runs", json=RUN)
            assert over.status_code == 429
            assert "this address (203.0.113.7)" in over.json()["error"]["message"]
            async with held(neighbour) as theirs, held(local) as mine, held(local) as more:
                assert [r.status_code for r in (theirs, mine, more)] == [200] * 3
                release.set()


def test_the_share_is_a_fraction_of_the_slots_checked_when_built() -> None:
    assert ServeLimits().streams_per_caller == 125
    assert ServeLimits(max_streams=3, stream_share=0.1).streams_per_caller == 1
    assert ServeLimits(stream_share=1).streams_per_caller == 500
    for bad in (0, -0.5, 1.5):
        with pytest.raises(ConfigurationError, match="stream_share"):
            ServeLimits(stream_share=bad)
