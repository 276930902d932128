"""Server limits: slow and idle clients, JSON only, JSON depth, rate, streams at once.

Every server here listens on loopback, every socket a test opens has a timeout and is
closed at the end, and waits are bounded: a limit that does not hold fails the test
instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import Generator, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from raf.core.errors import ConfigurationError
from raf.serve import ServeLimits, ServeSecurity
from raf.serve.limits import json_too_deep
from raf.serve.security import SecurityMiddleware

from .conftest import TOKEN_A, TOKEN_B, Served, start

WAIT = 30.0
"""The longest any test waits for the server to act (a bound, not a measurement)."""


def served_with(limits: ServeLimits, *tokens: str) -> Generator[Served, None, None]:
    security = ServeSecurity.for_bind("127.0.0.1", tokens=list(tokens), limits=limits)
    yield from start(security)


def address(served: Served) -> tuple[str, int]:
    parts = urlsplit(served.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def closed_by_server(sock: socket.socket, within: float = WAIT) -> bool:
    """Whether the server closes `sock` within `within` seconds (reading what it sent)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


def is_open(sock: socket.socket) -> bool:
    """Whether the server still holds `sock` open, without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def read_response(sock: socket.socket) -> bytes:
    """One whole response (headers and the body its Content-Length names), so that
    nothing of it is left to be taken for a sign of life later."""
    sock.settimeout(WAIT)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk, data
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.fixture(scope="module")
def slow_limits() -> Iterator[Served]:
    """A server that gives a client half a second to send its headers or its body."""
    yield from served_with(ServeLimits(header_timeout=0.5, body_timeout=0.5, keep_alive=30))


def test_half_sent_headers_are_dropped_while_other_clients_are_answered(
    slow_limits: Served,
) -> None:
    host, port = address(slow_limits)
    with contextlib.ExitStack() as stack:
        silent = stack.enter_context(socket.create_connection((host, port), timeout=WAIT))
        half = stack.enter_context(socket.create_connection((host, port), timeout=WAIT))
        half.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        with slow_limits.client() as client:
            assert client.get("/health").status_code == 200
        assert closed_by_server(half)
        assert closed_by_server(silent)
        # a kept-alive connection whose next request stalls mid-headers is dropped too
        kept = stack.enter_context(socket.create_connection((host, port), timeout=WAIT))
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200 OK" in kept.recv(4096)
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0")
        assert closed_by_server(kept)
        with slow_limits.client() as client:
            assert client.get("/health").status_code == 200


def test_a_body_sent_too_slowly_is_408(slow_limits: Served) -> None:
    host, port = address(slow_limits)
    with socket.create_connection((host, port), timeout=WAIT) as sock:
        sock.sendall(
            b"POST /agents/helper/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{"session'
        )
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(4096):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"body_timeout" in answer


def test_an_idle_kept_alive_connection_is_closed_after_keep_alive(slow_limits: Served) -> None:
    """After its answer a connection may idle `keep_alive` seconds, no longer: one server
    closes it after 1 s while another, allowing 30 s, still holds its own open."""
    with contextlib.ExitStack() as stack:
        brief = next(
            stack.enter_context(contextlib.closing(served_with(ServeLimits(keep_alive=1))))
        )
        kept = []
        for served in (brief, slow_limits):
            sock = stack.enter_context(socket.create_connection(address(served), timeout=WAIT))
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200")
            kept.append(sock)
        short, long = kept
        assert closed_by_server(short)
        time.sleep(2)  # past the short one's second, far within the long one's 30
        assert is_open(long)


def test_two_thousand_idle_connections_do_not_lock_clients_out() -> None:
    # the header deadline is long here: the connection cap alone must make room
    limits = ServeLimits(header_timeout=120, max_connections=500)
    with contextlib.ExitStack() as stack:
        served = next(stack.enter_context(contextlib.closing(served_with(limits))))
        host, port = address(served)
        sockets: list[socket.socket] = []
        for index in range(2000):
            sock = stack.enter_context(socket.create_connection((host, port), timeout=WAIT))
            if index % 2:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half-open
            sockets.append(sock)
        with served.client() as client:
            assert client.get("/health").status_code == 200
            assert client.get("/agents").status_code == 200
        # the server holds at most its cap: the oldest idle connections were closed
        deadline = time.monotonic() + WAIT
        while sum(is_open(s) for s in sockets) > limits.max_connections:
            assert time.monotonic() < deadline, "the server kept more than its cap open"
            time.sleep(0.2)
        assert not is_open(sockets[0]) and is_open(sockets[-1])


def test_a_body_that_is_not_json_is_415(served: Served) -> None:
    with served.client() as client:
        plain = client.post(
            "/agents/helper/sessions",
            content=b'{"session_id": "from-a-page"}',
            headers={"content-type": "text/plain"},
        )
        assert plain.status_code == 415, plain.text
        assert plain.json()["error"]["code"] == "unsupported_media_type"
        # a browser on another local port posting with no body at all is refused too
        page = client.post(
            "/agents/helper/runs", headers={"origin": "http://localhost:3000"}, content=b""
        )
        assert page.status_code == 415
        assert client.get("/agents/helper/sessions/from-a-page").status_code == 404
        declared = client.post(
            "/agents/helper/sessions",
            json={"session_id": "declared"},
            headers={"origin": "http://localhost:3000"},
        )
        assert declared.status_code == 201
        assert client.post("/agents/helper/sessions").status_code == 201  # no body, no page


def test_json_nested_too_deep_is_a_clear_400_without_a_traceback(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    deep = "[" * 1000 + "]" * 1000
    bodies = {
        "/agents/helper/runs": '{"messages": ' + deep + "}",
        "/v1/chat/completions": '{"model": "helper", "messages": ' + deep + "}",
    }
    with caplog.at_level(logging.WARNING), served.client() as client:
        for path, body in bodies.items():
            answer = client.post(
                path, content=body.encode(), headers={"content-type": "application/json"}
            )
            assert answer.status_code == 400, (path, answer.text)
            # OpenAI has no code for it: null under /v1, the message says why
            code = None if path.startswith("/v1") else "json_too_deep"
            assert answer.json()["error"]["code"] == code
            assert "64 levels" in answer.json()["error"]["message"]
        # nesting inside a string is text, not depth: this id is refused for its length
        text = client.post("/agents/helper/sessions", json={"session_id": "[" * 1000})
        assert text.status_code == 422 and "json_too_deep" not in text.text
    assert not [r for r in caplog.records if r.exc_info], caplog.text


def test_json_depth_is_counted_outside_strings() -> None:
    assert not json_too_deep(b'{"a": [1, {"b": "[[[[[[[["}]}', 3)
    assert json_too_deep(b'{"a": [1, {"b": "x"}]}', 2)
    assert not json_too_deep(b'{"a": "\\"[[[[", "b": [[]]}', 3)


def test_each_token_has_its_own_rate_limit() -> None:
    limits = ServeLimits(rate_per_second=0.5, rate_burst=3)
    with contextlib.closing(served_with(limits, TOKEN_A, TOKEN_B)) as servers:
        served = next(servers)
        with served.client(TOKEN_A) as alice, served.client(TOKEN_B) as bob:
            assert [alice.get("/agents").status_code for _ in range(3)] == [200] * 3
            limited = alice.get("/agents")
            assert limited.status_code == 429
            assert limited.json()["error"]["code"] == "rate_limited"
            assert int(limited.headers["retry-after"]) >= 1
            assert bob.get("/agents").status_code == 200
            assert alice.get("/health").status_code == 200  # probes are not limited


async def test_requests_past_max_streams_get_503_with_retry_after() -> None:
    release = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    security = ServeSecurity.for_bind("127.0.0.1", limits=ServeLimits(max_streams=1))
    transport = httpx.ASGITransport(app=SecurityMiddleware(app, security))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        first = asyncio.ensure_future(client.get("/agents"))
        await asyncio.sleep(0.05)
        # a bound, so that a server answering past its cap fails here instead of hanging
        busy = await asyncio.wait_for(client.get("/agents"), WAIT)
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert busy.json()["error"]["code"] == "server_busy"
        assert "(--max-streams 1)" in busy.json()["error"]["message"]
        release.set()
        assert (await asyncio.wait_for(first, WAIT)).text == "done"
        assert (await client.get("/agents")).status_code == 200


def test_limits_are_checked_when_built() -> None:
    for bad in ({"header_timeout": 0}, {"max_connections": -1}, {"rate_burst": 0}):
        with pytest.raises(ConfigurationError, match=next(iter(bad))):
            ServeLimits(**bad)
    assert ServeLimits(rate_per_second=0).rate_per_second == 0
    assert ServeSecurity.for_bind("127.0.0.1", max_body_bytes=10).limits.max_body_bytes == 10


def test_raf_serve_flags_set_the_limits() -> None:
    import argparse

    from raf.cli.serve import limits_from, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    flags = "--header-timeout 2.5 --max-connections 50 --rate-limit 0 --max-json-depth 8"
    args = parser.parse_args(["serve", "a.yaml", *flags.split()])
    limits = limits_from(args)
    assert (limits.header_timeout, limits.max_connections) == (2.5, 50)
    assert (limits.rate_per_second, limits.max_json_depth) == (0, 8)
    assert limits.body_timeout == ServeLimits().body_timeout
    assert json.dumps(limits.max_body_bytes) == str(1024 * 1024)
