"""Rate and stream limits as a developer meets them: a local load test with default
limits is not refused, a caller over its limit is told which limit and which flag, and
the bucket of one caller (a token, or an address) is not another's.

Every server listens on loopback and is stopped by its test; clients on 127.0.0.2 are
loopback too. Waits are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from typing import Any

import httpx
import pytest

from raf import AgentBuilder
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.serve import AgentHost, ServeLimits, ServeSecurity, create_app, serve_in_thread
from raf.serve.limits import RateLimiter
from raf.testing import FunctionChatClient, ScriptedChatClient

from .conftest import TOKEN_A, TOKEN_B

WAIT = 30.0
"""The longest any request may take here (a bound, not a measurement)."""


@contextlib.contextmanager
def serving(
    model: Any, limits: ServeLimits | None = None, tokens: Sequence[str] = ()
) -> Iterator[str]:
    """One agent, `quick`, on `model`, served on loopback with `limits`."""
    agent = AgentBuilder("quick").with_chat_client(model).build()
    security = ServeSecurity.for_bind("127.0.0.1", tokens=list(tokens), limits=limits)
    with serve_in_thread(create_app(AgentHost([agent]), security, a2a=False)) as url:
        yield url


def client(url: str, source: str = "127.0.0.1", token: str | None = None) -> httpx.Client:
    """A client whose connections come from the loopback address `source`."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    transport = httpx.HTTPTransport(local_address=source)
    return httpx.Client(base_url=url, transport=transport, headers=headers, timeout=WAIT)


def test_a_burst_of_runs_from_one_loopback_client_is_not_limited_by_default() -> None:
    """600 runs as fast as four threads can send them: far over the 200 a burst may be
    and the 50 a second that follow, which bind a token or a remote address, not the
    developer's own machine."""
    runs = 600
    with serving(ScriptedChatClient(["done"] * runs)) as url, client(url) as http:

        def run(_: int) -> int:
            return http.post("/agents/quick/runs", json={"messages": "hi"}).status_code

        with ThreadPoolExecutor(4) as pool:
            statuses = Counter(pool.map(run, range(runs)))
    assert statuses == {200: runs}


def test_an_address_over_its_limit_is_told_which_limit_and_others_go_on() -> None:
    limits = ServeLimits(loopback_rate_per_second=0.5, rate_burst=3)
    with (
        serving(ScriptedChatClient([]), limits) as url,
        client(url, "127.0.0.2") as noisy,
        client(url, "127.0.0.1") as quiet,
    ):
        assert [noisy.get("/agents").status_code for _ in range(3)] == [200] * 3
        limited = noisy.get("/agents")
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        error = limited.json()["error"]
        assert error["code"] == "rate_limited"
        for said in ("this address (127.0.0.2)", "--loopback-rate-limit 0.5", "--rate-burst 3"):
            assert said in error["message"], error["message"]
        assert [quiet.get("/agents").status_code for _ in range(3)] == [200] * 3
        assert noisy.get("/health").status_code == 200  # probes are never limited


def test_an_address_a_local_proxy_forwards_has_the_rate_limit() -> None:
    """A client a proxy on this machine forwards (X-Forwarded-For, trusted from loopback
    only) is a remote address: `--rate-limit` binds it; the machine itself stays free."""
    limits = ServeLimits(rate_per_second=0.5, rate_burst=2)
    forwarded = {"x-forwarded-for": "203.0.113.7"}
    with serving(ScriptedChatClient([]), limits) as url, client(url) as http:
        assert [http.get("/agents", headers=forwarded).status_code for _ in range(2)] == [200] * 2
        limited = http.get("/agents", headers=forwarded)
        assert limited.status_code == 429
        message = limited.json()["error"]["message"]
        assert "this address (203.0.113.7)" in message and "--rate-limit 0.5" in message
        assert [http.get("/agents").status_code for _ in range(5)] == [200] * 5


def test_a_token_is_one_caller_wherever_it_is_used_from() -> None:
    limits = ServeLimits(rate_per_second=0.5, rate_burst=3)
    with (
        serving(ScriptedChatClient([]), limits, [TOKEN_A, TOKEN_B]) as url,
        client(url, "127.0.0.1", TOKEN_A) as here,
        client(url, "127.0.0.2", TOKEN_A) as there,
        client(url, "127.0.0.2", TOKEN_B) as other,
    ):
        assert [c.get("/agents").status_code for c in (here, there, here)] == [200] * 3
        limited = there.get("/agents")
        assert limited.status_code == 429
        message = limited.json()["error"]["message"]
        assert "this token" in message and "--rate-limit 0.5 --rate-burst 3" in message
        assert other.get("/agents").status_code == 200


def test_the_rate_limiter_forgets_idle_callers_and_stays_bounded() -> None:
    limiter = RateLimiter(10.0, 5, keep=1000)
    for caller in range(50_000):
        assert limiter.wait(f"10.0.{caller // 256}.{caller % 256}", now=0.0) == 0.0
    assert len(limiter) == 1000
    # half a second later every one of them has refilled: one call lets them all go
    limiter.wait("late", now=0.5)
    assert len(limiter) == 1
    # a limited caller is kept, and still limited
    hot = RateLimiter(1.0, 2)
    assert [hot.wait("hot", now=0.0) for _ in range(3)][:2] == [0.0, 0.0]
    assert hot.wait("cold", now=0.1) == 0.0 and hot.wait("hot", now=0.2) > 0


def test_two_hundred_concurrent_streams_are_all_answered_by_default() -> None:
    """Each model call waits until all 200 are in flight, so every stream is open at
    once; none may be refused."""
    streams = 200
    inside = 0
    most = 0

    async def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        deadline = time.monotonic() + 10
        while most < streams and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        inside -= 1
        return "streamed"

    async def one(http: httpx.AsyncClient) -> tuple[int, str]:
        body = {"messages": "hi", "stream": True}
        async with http.stream("POST", "/agents/quick/runs", json=body) as response:
            text = "".join([chunk async for chunk in response.aiter_text()])
        return response.status_code, text

    async def all_at_once(url: str) -> list[tuple[int, str]]:
        limits = httpx.Limits(max_connections=streams + 10)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=WAIT) as http:
            return await asyncio.gather(*(one(http) for _ in range(streams)))

    with serving(FunctionChatClient(answer)) as url:
        answers = asyncio.run(all_at_once(url))
    refused = [text for status, text in answers if status != 200]
    assert not refused, (len(refused), refused[:1])
    assert all("event: update" in text and "streamed" in text for _, text in answers)
    assert most == streams


def test_every_limit_is_a_flag_of_raf_serve_with_its_default_in_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from raf.cli.serve import LIMIT_FLAGS, limits_from, register

    parser = argparse.ArgumentParser(prog="raf")
    register(parser.add_subparsers())
    assert sorted(LIMIT_FLAGS.values()) == sorted(f.name for f in fields(ServeLimits))
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    defaults = ServeLimits()
    for flag, name in LIMIT_FLAGS.items():
        option = "--" + flag.replace("_", "-")
        assert option in shown, option
        assert f"(default {getattr(defaults, name)})" in shown, option
    given = ["--max-header-bytes", "4096", "--loopback-rate-limit", "20", "--max-streams", "9"]
    limits = limits_from(parser.parse_args(["serve", "a.yaml", *given]))
    assert (limits.max_header_bytes, limits.loopback_rate_per_second) == (4096, 20)
    assert limits.max_streams == 9
