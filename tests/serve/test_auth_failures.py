"""Failed authentication is limited per client address on every surface of `raf serve`
that authenticates (raf's API, OpenAI-compatible, A2A, AG-UI, the UI's API): past its
wrong tokens an address gets 429 with Retry-After, its token not even looked at, while
other addresses and the probes go on.

Every server listens on loopback and is stopped by its test; clients come from distinct
loopback addresses (127.0.0.x), which count like any other address. Waits are bounded.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from raf import AgentBuilder
from raf.serve import AgentHost, ServeLimits, ServeSecurity, create_app, serve_in_thread
from raf.serve.limits import FailedAuthLimiter
from raf.serve.ui import ServeUI
from raf.testing import ScriptedChatClient

from .conftest import TOKEN_A, TOKEN_B

WAIT = 30.0
"""The longest any request may take here (a bound, not a measurement)."""
WRONG = "wrong-token-0123456789abcdef"

SURFACES = {
    "raf's API": ("GET", "/agents", None),
    "OpenAI": ("GET", "/v1/models", None),
    "A2A": ("POST", "/a2a/quick", {"jsonrpc": "2.0", "id": 1, "method": "GetTask"}),
    "AG-UI": ("POST", "/agui/quick", {"threadId": "t", "runId": "r", "messages": []}),
    "UI": ("GET", "/ui/api/catalog", None),
}
"""A request of each surface: method, path and JSON body."""


@contextlib.contextmanager
def serving(limits: ServeLimits | None = None) -> Iterator[str]:
    """One agent, `quick`, behind tokens A and B, with every surface and the UI on."""
    agent = AgentBuilder("quick").with_chat_client(ScriptedChatClient([])).build()
    host = AgentHost([agent])
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B], limits=limits)
    with serve_in_thread(create_app(host, security, ui=ServeUI.attach(host))) as url:
        yield url


def client(url: str, source: str, token: str | None) -> httpx.Client:
    """A client whose connections come from the loopback address `source`."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    transport = httpx.HTTPTransport(local_address=source)
    return httpx.Client(base_url=url, transport=transport, headers=headers, timeout=WAIT)


def ask(http: httpx.Client, surface: str) -> httpx.Response:
    method, path, body = SURFACES[surface]
    return http.request(method, path, json=body)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_address_past_its_wrong_tokens_gets_429_on_every_surface(surface: str) -> None:
    limits = ServeLimits(auth_failures=3, auth_failure_window=60)
    with (
        serving(limits) as url,
        client(url, "127.0.0.9", WRONG) as guesser,
        client(url, "127.0.0.9", TOKEN_A) as same_place,
        client(url, "127.0.0.1", TOKEN_A) as elsewhere,
    ):
        assert [ask(guesser, surface).status_code for _ in range(3)] == [401] * 3
        barred = ask(guesser, surface)
        assert barred.status_code == 429, barred.text
        assert int(barred.headers["retry-after"]) >= 1
        error = barred.json()["error"]
        if surface == "OpenAI":
            assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
        elif surface == "A2A":  # a JSON-RPC error: raf's code in its ErrorInfo
            assert error["code"] == -32600 and barred.json()["jsonrpc"] == "2.0"
            assert error["data"][0]["metadata"]["code"] == "too_many_auth_failures"
        else:
            assert error["code"] == "too_many_auth_failures"
        for said in ("127.0.0.9", "--auth-failures 3", "--auth-failure-window 60"):
            assert said in error["message"], error["message"]
        # the right token from that address is not even looked at
        assert ask(same_place, surface).status_code == 429
        # another address succeeding changes nothing for it, and is not refused itself
        assert ask(elsewhere, surface).status_code not in (401, 429)
        assert ask(guesser, surface).status_code == 429
        assert guesser.get("/health").status_code == 200  # probes are never refused


def test_six_hundred_wrong_tokens_get_ten_401s() -> None:
    """The default ten tries; the window is long here so that a slow machine earns no
    try back while the 600 are sent."""
    limits = ServeLimits(auth_failure_window=3600)
    assert limits.auth_failures == 10
    with serving(limits) as url, client(url, "127.0.0.1", WRONG) as guesser:
        statuses = Counter(guesser.get("/agents").status_code for _ in range(600))
    assert statuses == {401: 10, 429: 590}, statuses


def test_a_missing_token_is_no_guess_and_tokens_right_from_the_start_are_never_barred() -> None:
    limits = ServeLimits(auth_failures=2, auth_failure_window=60)
    with (
        serving(limits) as url,
        client(url, "127.0.0.1", None) as bare,
        client(url, "127.0.0.1", TOKEN_B) as signed,
    ):
        assert [bare.get("/agents").status_code for _ in range(20)] == [401] * 20
        assert [signed.get("/agents").status_code for _ in range(20)] == [200] * 20


def test_the_failure_table_earns_tries_back_and_stays_bounded() -> None:
    limiter = FailedAuthLimiter(10, 60.0, keep=1000)
    for _ in range(10):
        assert limiter.waiting("a", now=0.0) == 0.0
        limiter.failed("a", now=0.0)
    assert limiter.waiting("a", now=0.0) == pytest.approx(6.0)  # one try each 60/10 s
    assert limiter.waiting("b", now=0.0) == 0.0  # another address is not touched
    assert limiter.waiting("a", now=6.0) == 0.0
    limiter.failed("a", now=6.0)
    assert limiter.waiting("a", now=6.5) > 0
    for address in range(50_000):
        limiter.failed(f"10.0.{address // 256}.{address % 256}", now=7.0)
    assert len(limiter) == 1000
    # a minute later every one of them has all its tries back: one call forgets them all
    limiter.failed("late", now=70.0)
    assert len(limiter) == 1
    assert FailedAuthLimiter(0, 60.0).waiting("a") == 0.0  # 0: off
