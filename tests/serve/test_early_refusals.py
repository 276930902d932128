"""Requests refused before any work: a head past its size limit gets 431 while it is
still arriving (with either of uvicorn's parsers), and a body that is not Unicode text
gets 400 in the shape of the API it was sent to, never a 500.

Every server listens on loopback and is stopped by its test or module; every socket has
a timeout and is closed, and waits are bounded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import resource
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from raf.serve import AgentHost, ServeLimits, ServeSecurity, create_app, serve_in_thread
from raf.serve.connections import HeadCounter
from raf.serve.errors import ServeError
from raf.serve.requests import body_text, parse_body
from raf.serve.server import HttpParser

from .conftest import TOKEN_A, Served, build_agents, start

WAIT = 30.0
"""The longest any test waits for the server to act (a bound, not a measurement)."""

LIMIT = ServeLimits().max_header_bytes
PIECE = b"a" * 65536
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module", params=["httptools", "h11"])
def parsed(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """A server with default limits and a token, on each of uvicorn's parsers."""
    parser: HttpParser = request.param
    agents, _, _ = build_agents()
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A])
    app = create_app(AgentHost(agents), security, a2a=False)
    with serve_in_thread(app, parser=parser) as url:
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        yield parts.hostname, parts.port


def rss_bytes() -> int:
    """This process's resident memory now."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize()


class Responses:
    """Reads HTTP/1.1 responses one after another from a socket (bodies by length)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        sock.settimeout(WAIT)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, f"the server closed the connection; unread: {self.buffer[:200]!r}"
        self.buffer += chunk

    def next(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(lines[0].split()[1]), headers, body

    def closed(self) -> bool:
        """Whether the server ends the connection (after what was already read)."""
        try:
            while chunk := self.sock.recv(65536):
                self.buffer += chunk
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return True


def assert_431(status: int, headers: dict[str, str], body: bytes) -> None:
    assert status == 431, body
    assert headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "headers_too_large"
    assert f"{LIMIT} bytes" in error["message"] and "--max-header-bytes" in error["message"]


def test_a_forty_mib_header_is_refused_while_it_is_still_arriving(
    parsed: tuple[str, int],
) -> None:
    """The 431 comes after the first KiBs of a 40 MiB header, before the token is even
    looked at, and the server does not take in the header's size in memory."""
    total = 40 * 1024 * 1024
    peak = [rss_bytes()]
    before = peak[0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peak[0] = max(peak[0], rss_bytes())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    sent = 0
    try:
        with socket.create_connection(parsed, timeout=WAIT) as sock:
            sock.sendall(b"GET /agents HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            with contextlib.suppress(ConnectionError):
                while sent < total and not select.select([sock], [], [], 0)[0]:
                    sock.sendall(PIECE)
                    sent += len(PIECE)
                if sent >= total:  # the server waited for all of it
                    sock.sendall(b"\r\n\r\n")
            answers = Responses(sock)
            assert_431(*answers.next())
            assert answers.closed()
    finally:
        sampling.set()
        sampler.join()
    assert sent < total // 4, f"answered only after {sent} bytes of {total}"
    assert peak[0] - before < 16 * 1024 * 1024, (before, peak[0])


def test_a_kept_alive_connections_second_request_gets_431(parsed: tuple[str, int]) -> None:
    big = b"X-Big: " + b"a" * (LIMIT + 1) + b"\r\n"
    with socket.create_connection(parsed, timeout=WAIT) as sock:
        answers = Responses(sock)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert answers.next()[0] == 200
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + b"\r\n")
        assert_431(*answers.next())
        assert answers.closed()


def test_pipelined_bodies_are_not_counted_and_each_head_is(parsed: tuple[str, int]) -> None:
    """Four requests in one write: bodies of 200 KiB (sized, then chunked), a plain one,
    and one whose head is a byte over: only the last is refused, after the others'
    answers (each body read whole: its JSON parsed, and its extra field refused)."""
    auth = f"Authorization: Bearer {TOKEN_A}\r\n".encode()
    payload = json.dumps({"session_id": "piped", "padding": "p" * 200_000}).encode()
    sized = (
        b"POST /agents/helper/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth
        + b"Content-Type: application/json\r\nContent-Length: "
        + str(len(payload)).encode() + b"\r\n\r\n" + payload
    )  # fmt: skip
    chunks = b"".join(
        f"{len(payload[i : i + 50_000]):x}\r\n".encode() + payload[i : i + 50_000] + b"\r\n"
        for i in range(0, len(payload), 50_000)
    )
    chunked = (
        b"POST /agents/helper/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunks + b"0\r\n\r\n"
    )  # fmt: skip
    line = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    fits = line + b"X-Fill: " + b"f" * 4000 + b"\r\n\r\n"
    over = line + b"X-Big: " + b"a" * (LIMIT - len(line) - len(b"X-Big: \r\n\r\n") + 1)
    over += b"\r\n\r\n"
    assert len(over) == LIMIT + 1
    with socket.create_connection(parsed, timeout=WAIT) as sock:
        answers = Responses(sock)
        sock.sendall(sized + chunked + fits + over)
        for sent in ("sized", "chunked"):
            status, _, body = answers.next()
            assert status == 422 and b"padding" in body, (sent, status, body[:300])
        assert answers.next()[0] == 200
        assert_431(*answers.next())
        assert answers.closed()


def test_a_head_at_the_limit_is_served(parsed: tuple[str, int]) -> None:
    line = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    exact = line + b"X-Big: " + b"a" * (LIMIT - len(line) - len(b"X-Big: \r\n\r\n"))
    exact += b"\r\n\r\n"
    assert len(exact) == LIMIT
    with socket.create_connection(parsed, timeout=WAIT) as sock:
        sock.sendall(exact)
        assert Responses(sock).next()[0] == 200


def test_the_header_limit_can_be_set() -> None:
    limits = ServeLimits(max_header_bytes=2048)
    agents, _, _ = build_agents()
    app = create_app(AgentHost(agents), ServeSecurity.for_bind("127.0.0.1", limits=limits))
    with (
        serve_in_thread(app) as url,
        socket.create_connection(
            (urlsplit(url).hostname, urlsplit(url).port), timeout=WAIT
        ) as sock,
    ):
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 3000 + b"\r\n\r\n")
        status, _, body = Responses(sock).next()
    assert status == 431 and "2048 bytes" in json.loads(body)["error"]["message"]


def test_the_head_counter_follows_framing() -> None:
    counter = HeadCounter(100)
    # a sized body of any content is skipped, then the next head is counted from zero
    body = b"\r\n\r\n" + b"x" * 500
    head = b"POST / HTTP/1.1\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    assert counter.feed(head + body + b"GET / HTTP/1.1\r\n\r\n") is None
    # chunked, with an extension and a trailer, fed one byte at a time
    chunked = (
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"1f4;note=x\r\n" + b"y" * 500 + b"\r\n0\r\nTrailer: t\r\n\r\n"
    )
    assert all(counter.feed(chunked[i : i + 1]) is None for i in range(len(chunked)))
    # empty lines before a request line are head, and the offset is where it passes
    assert counter.feed(b"\r\n" * 10 + b"GET /" + b"a" * 200) == 100
    # framing it cannot be sure of leaves every later byte counted as head, so that a
    # body can never be taken for a head or a head for a body
    unsure = [
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"Content-Length:\r\n 400\r\n\r\n",
        b"Content-Length: 400\r\nContent-Length: 400\r\n\r\n",
        b"Content-Length: 400\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"Content-Length : 400\r\n\r\n",
        b"Content-Length: " + b" " * 200 + b"400\r\n\r\n",
    ]
    for framing in unsure:
        odd = HeadCounter(1000)
        assert odd.feed(b"POST / HTTP/1.1\r\n" + framing) is None, framing
        assert odd.feed(b"b" * 1000) is not None, framing


# -- bodies that are not Unicode text -------------------------------------------------

LONE = b'"hi \\ud800"'
"""A JSON string holding a high surrogate escape without its low half."""


@pytest.fixture(scope="module")
def everything() -> Iterator[Served]:
    """Every protocol on (A2A included), no tokens."""
    yield from start()


def post(served: Served, path: str, body: bytes) -> tuple[int, dict[str, object]]:
    with served.client() as client:
        answer = client.post(path, content=body, headers=JSON)
    assert answer.headers["content-type"].startswith("application/json"), answer.text
    return answer.status_code, answer.json()["error"]


@pytest.mark.parametrize(
    ("bad", "at"),
    [(LONE, 4), (b'"\xff\xfe"', 1), (b'"\\udc00"', 1), (b'"\\\\\\ud83d"', 3)],
    ids=["lone_high", "not_utf8", "lone_low", "after_escaped_backslash"],
)
def test_text_that_is_not_unicode_is_400_in_each_apis_shape(
    everything: Served, bad: bytes, at: int, caplog: pytest.LogCaptureFixture
) -> None:
    native = b'{"messages": ' + bad + b"}"
    openai = b'{"model": "helper", "messages": [{"role": "user", "content": ' + bad + b"}]}"
    a2a = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
        b'{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": ' + bad + b"}]}}}"
    )
    agui = b'{"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", '
    agui += b'"content": ' + bad + b"}]}"
    with caplog.at_level(logging.WARNING):
        status, error = post(everything, "/agents/helper/runs", native)
        assert status == 400 and set(error) == {"code", "message"}, error
        assert error["code"] == "malformed_json"
        assert f"at byte {native.index(bad) + at} (line 1, column" in str(error["message"])
        status, error = post(everything, "/v1/chat/completions", openai)
        assert status == 400 and set(error) == {"message", "type", "param", "code"}, error
        # OpenAI has no code for JSON it cannot parse: null, and the message says where
        assert error["code"] is None and "at byte" in str(error["message"])
        status, error = post(everything, "/a2a/helper", a2a)
        # a JSON-RPC error, raf's code in its ErrorInfo
        assert (status, error["code"]) == (400, -32600), error
        assert error["data"][0]["metadata"]["code"] == "malformed_json", error  # type: ignore[index]
        status, error = post(everything, "/agui/helper", agui)
        assert (status, error["code"]) == (400, "malformed_json"), error
    assert not [r for r in caplog.records if r.exc_info], caplog.text
    assert everything.helper.requests == []  # no model was asked


def test_surrogate_pairs_and_escaped_backslashes_are_text(everything: Served) -> None:
    everything.helper.add("one", "two")
    with everything.client() as client:
        pair = client.post(
            "/agents/helper/runs", content=b'{"messages": "\\ud83d\\ude00"}', headers=JSON
        )
        assert pair.status_code == 200, pair.text
        literal = client.post(
            "/agents/helper/runs", content=b'{"messages": "\\\\ud800"}', headers=JSON
        )
        assert literal.status_code == 200, literal.text
    said = [r.messages[-1].text for r in everything.helper.requests[-2:]]
    assert said == ["\U0001f600", "\\ud800"]


def test_parse_body_refuses_what_the_middleware_refuses() -> None:
    from raf.serve.native.routes import SessionCreate

    for raw, where in ((b'{"session_id": "\\udfff"}', "byte 16"), (b'{"a": "\xc3"}', "byte 7")):
        with pytest.raises(ServeError) as refused:
            parse_body(raw, SessionCreate)
        assert refused.value.status == 400 and where in refused.value.message
    assert body_text(b'\xef\xbb\xbf{"a": "\\u00e9"}').endswith("}")
    assert parse_body(b'\xef\xbb\xbf{"session_id": "s"}', SessionCreate).session_id == "s"
