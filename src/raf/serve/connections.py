"""Connection limits uvicorn lacks: a deadline and a size limit for request headers, and
a cap on open connections that closes idle ones first.

uvicorn times out idle kept-alive connections but not a client that connects and sends
its headers slowly (or never): each such connection would stay open for good, and enough
of them take the server down. Nor does its default parser (httptools) bound a header's
size: it keeps every byte until the headers end, so a client sending a header of 40 MiB
costs the server 40 MiB or more before anything can refuse it.

`guarded_protocol` wraps uvicorn's HTTP protocol (h11 or httptools, whichever it picked).
It closes a connection whose request line and headers are not in within
`header_timeout` seconds of connecting, or of the first byte of its next request. It
counts each request's head as the bytes arrive, before passing them on, and past
`max_header_bytes` answers 431 itself and closes the connection: the parser never holds
more than the limit. To count heads and not bodies it follows the framing of each
request (Content-Length, or chunked), so kept-alive and pipelined requests are counted
one by one. Both protocols keep the request being answered in `.cycle`, set once its
headers are complete; that is how the wrapper tells "headers in" from "still sending".
"""

from __future__ import annotations

import asyncio
import json
import re
from enum import Enum, auto
from typing import Any

from raf.serve.errors import openai_body
from raf.serve.limits import ServeLimits

LINGER_SECONDS = 2.0
"""How long a refused connection keeps reading (and dropping) what its client still
sends, so that the client reads the 431 instead of a reset."""

_POLL_SECONDS = 0.05
"""How often a refusal waiting for the answer in progress looks again."""

_KEPT = 128
"""Bytes of each head line kept to read its name and value: enough for Content-Length
and Transfer-Encoding, whose values are short; the rest is counted, not kept."""

_FRAMING = (b"content-length", b"transfer-encoding")

_CHUNK_SIZE = re.compile(rb"[ \t]*([0-9A-Fa-f]+)[ \t]*(?:;.*)?")

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:([^\r]*)")
"""A Content-Length line in a lower-cased head (not the request line: it follows one)."""

_LONGEST_LENGTH = 18
"""Digits of a Content-Length read at once; a longer one goes through `feed`'s lines."""


class _Part(Enum):
    """Where in a request the next byte falls."""

    HEAD = auto()
    BODY = auto()
    CHUNK_SIZE = auto()
    CHUNK_DATA = auto()
    CHUNK_END = auto()
    TRAILERS = auto()


class HeadCounter:
    """Follows a connection's byte stream request by request and counts the bytes of
    each request's line and headers (and trailers), not of its body.

    Framing it cannot read for certain (a folded header line, a Content-Length that is
    not one number, both Content-Length and Transfer-Encoding, a chunk size that is not
    hex) is never guessed: from there on every byte of the connection counts as head.
    Parsers refuse such requests, and no guess can then let a head pass as a body."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.part = _Part.HEAD
        self.counted = 0
        """Head bytes of the current request so far."""
        self.line = bytearray()
        """The start of the line being read (at most `_KEPT` bytes of it)."""
        self.cut = False
        """Whether the line being read is longer than what `line` keeps."""
        self.started = False
        """Whether the current request's line has been read."""
        self.request_line = b""
        """The start of the current request's line, once read line by line (a head that
        passes the limit always is): says where the refusal goes."""
        self.length: int | None = None
        self.chunked = False
        self.left = 0
        """Body or chunk bytes still to come."""
        self.lost = False
        """Whether the framing could not be read: all that follows counts as head."""

    def feed(self, data: bytes) -> int | None:
        """Follow `data`: None when every head in it fits, else the offset in `data` at
        which a head passes the limit (what comes before it may be passed on)."""
        at = 0
        end = len(data)
        while at < end:
            if self.part is _Part.HEAD and not self.started and not self.line and not self.lost:
                whole = self._whole_head(data, at)
                if whole is not None:
                    at = whole
                    continue
            if self.part in (_Part.BODY, _Part.CHUNK_DATA):
                step = min(self.left, end - at)
                at += step
                self.left -= step
                if self.left == 0:
                    self._body_done()
                continue
            newline = data.find(b"\n", at)
            stop = end if newline < 0 else newline + 1
            if self.part in (_Part.HEAD, _Part.TRAILERS):
                room = self.limit - self.counted
                if stop - at > room:
                    if not self.started:  # a request line too long: its start says whose
                        self.line += data[at : at + max(0, min(_KEPT - len(self.line), room))]
                    return at + room
                self.counted += stop - at
            room = _KEPT - len(self.line)
            self.line += data[at : at + min(room, stop - at)]
            self.cut = self.cut or stop - at > room
            at = stop
            if newline >= 0:
                line, cut = bytes(self.line).rstrip(b"\r\n"), self.cut
                self.line.clear()
                self.cut = False
                if not self.lost:
                    self._line(line, cut)
        return None

    def _whole_head(self, data: bytes, at: int) -> int | None:
        """A request's whole head in `data` from `at`, read in one step (the usual case,
        a few hundred bytes arriving at once): the offset after it, framing noted as
        `feed` notes it line by line. None leaves anything unusual to `feed`'s lines
        (a head not all here or over the limit, a blank line first, a bare CR or LF,
        a folded line, a space before a colon, Transfer-Encoding, an odd Content-Length):
        both read the same, which a test checks against many heads."""
        stop = data.find(b"\r\n\r\n", at)
        if stop < 0 or stop + 4 - at > self.limit - self.counted or stop == at:
            return None  # (`counted`: blank lines before the request line count too)
        head = data[at:stop]
        crlf = head.count(b"\r\n")
        if head.count(b"\r") != crlf or head.count(b"\n") != crlf or head.startswith(b"\r\n"):
            return None
        lower = head.lower()
        if (
            b"\n " in head
            or b"\n\t" in head
            or b" :" in head
            or b"\t:" in head
            or b"\r\ntransfer-encoding" in lower
        ):
            return None
        lengths = _CONTENT_LENGTH.findall(lower)
        if len(lengths) > 1:
            return None
        if lengths:
            value = lengths[0].strip(b" \t")
            if not value.isdigit() or len(value) > _LONGEST_LENGTH:
                return None
            if len(b"content-length:") + len(lengths[0]) > _KEPT:
                return None  # `feed` keeps only a line's start, and refuses such a line
            if int(value):  # the head is read; its body comes next
                self.part, self.left = _Part.BODY, int(value)
                self.counted, self.started = self.counted + stop + 4 - at, True
                return stop + 4
        self.counted = 0  # the next request begins
        return stop + 4

    def _line(self, line: bytes, cut: bool) -> None:
        """One whole line of a head, a chunk's size, or trailers (`cut`: only its start
        was kept)."""
        if self.part is _Part.HEAD:
            self._head_line(line, cut)
        elif self.part is _Part.CHUNK_SIZE:
            size = None if cut else _CHUNK_SIZE.fullmatch(line)
            if size is None:
                self._lose()
                return
            self.left = int(size.group(1), 16)
            self.part = _Part.CHUNK_DATA if self.left else _Part.TRAILERS
        elif self.part is _Part.CHUNK_END:
            self.part = _Part.CHUNK_SIZE
        elif not line:  # the empty line that ends the trailers
            self._next_request()

    def _head_line(self, line: bytes, cut: bool) -> None:
        if not self.started:
            # empty lines before a request line are skipped, as parsers do
            self.started = bool(line)
            self.request_line = line
            return
        if line[:1] in (b" ", b"\t"):  # a folded line: a value this reader cannot see
            self._lose()
            return
        if line:
            name, _, value = line.partition(b":")
            name = name.lower()
            if name != name.strip(b" \t") and name.strip(b" \t") in _FRAMING:
                self._lose()  # space before the colon: refused, or read by some as framing
                return
            if name == b"transfer-encoding":
                # a request's only framing coding is chunked: any other is refused
                self.chunked = True
            elif name == b"content-length":
                value = value.strip(b" \t")
                if cut or not value.isdigit() or self.length is not None:
                    self._lose()
                    return
                self.length = int(value)
            return
        if self.chunked and self.length is not None:
            self._lose()
        elif self.chunked:
            self.part = _Part.CHUNK_SIZE
        elif self.length:
            self.part = _Part.BODY
            self.left = self.length
        else:
            self._next_request()

    def openai_target(self) -> bool:
        """Whether the request whose head is being read is for the OpenAI-compatible API
        (its target starts `/v1/`), as far as its line has come."""
        line = self.request_line if self.started else bytes(self.line)
        parts = line.split(b" ", 2)
        return len(parts) > 1 and parts[1].startswith(b"/v1/")

    def _lose(self) -> None:
        self.lost = True
        self.part = _Part.HEAD

    def _body_done(self) -> None:
        if self.part is _Part.CHUNK_DATA:
            self.part = _Part.CHUNK_END
        else:
            self._next_request()

    def _next_request(self) -> None:
        self.part = _Part.HEAD
        self.counted = 0
        self.started = False
        self.request_line = b""
        self.length = None
        self.chunked = False


def headers_too_large(limit: int, *, openai: bool = False) -> bytes:
    """The whole 431 response: a JSON error saying the limit (in OpenAI's shape when
    `openai`), then close."""
    message = (
        f"the request line and headers are larger than {limit} bytes, the server's limit "
        f"(--max-header-bytes {limit}); send smaller headers, or raise --max-header-bytes"
    )
    code = "headers_too_large"
    shaped = (
        openai_body(431, code, message) if openai else {"error": {"code": code, "message": message}}
    )
    body = json.dumps(shaped).encode()
    head = (
        "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _JoinedWrites:
    """The connection's transport as uvicorn's protocol sees it: what it writes in one
    turn of the event loop goes out in one write (an answer's head and body: one system
    call where there were two, the largest cost of a small answer). Everything else is
    the transport's own."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self.pending.append(bytes(data))

    def flush(self) -> None:
        """Write what is pending, as one piece."""
        pending = self.pending
        if pending:
            self.pending = []
            if not self.transport.is_closing():
                self.transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self.pending = []
        self.transport.abort()

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size() + sum(map(len, self.pending))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _Guard(asyncio.Protocol):
    """One connection: uvicorn's protocol inside, with the header limits around it."""

    inner_class: type[asyncio.Protocol]
    limits: ServeLimits
    open: dict[_Guard, None]
    """Open connections of this server, oldest first."""

    def __init__(self, **options: Any) -> None:
        self.inner: Any = self.inner_class(**options)
        self.transport: asyncio.Transport | None = None
        self.writes: _JoinedWrites | None = None
        """The transport as the inner protocol writes to it (ours go the same way)."""
        self.deadline: asyncio.TimerHandle | None = None
        """The timer that looks at the head deadline (one per connection, kept)."""
        self.head_since: float | None = None
        """When the head now awaited began (None: no head awaited)."""
        self.heads = HeadCounter(self.limits.max_header_bytes)
        self.refused = False
        """Whether a head passed the limit: nothing more reaches the inner protocol."""

    # -- state of the connection ------------------------------------------------------

    def _answering(self) -> bool:
        """Whether a request's headers are in and its response is not complete."""
        cycle = getattr(self.inner, "cycle", None)
        return cycle is not None and not getattr(cycle, "response_complete", False)

    def _arm(self) -> None:
        """A head is awaited from now. The timer is not moved for each request: it looks
        when it fires, and waits on when the head it finds awaited began later."""
        if self.head_since is not None or self.transport is None:
            return
        loop = asyncio.get_running_loop()
        self.head_since = loop.time()
        if self.deadline is None:
            self.deadline = loop.call_at(self.head_since + self.limits.header_timeout, self._look)

    def _disarm(self) -> None:
        """No head is awaited (one is complete)."""
        self.head_since = None

    def _stop_timer(self) -> None:
        self.head_since = None
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _look(self) -> None:
        """The timer fired: close when the head awaited is late, whatever was half sent;
        else look again when it would be."""
        self.deadline = None
        since = self.head_since
        if since is None or self.transport is None or self.transport.is_closing():
            return
        due = since + self.limits.header_timeout
        loop = asyncio.get_running_loop()
        if loop.time() >= due:
            self.transport.abort()
        else:
            self.deadline = loop.call_at(due, self._look)

    def _make_room(self) -> None:
        """Past `max_connections`, close the oldest connection not being answered (or
        this new one when every connection is)."""
        if len(self.open) <= self.limits.max_connections:
            return
        for other in self.open:
            if other is not self and not other._answering() and other.transport is not None:
                other.transport.abort()
                self.open.pop(other, None)
                return
        if self.transport is not None:
            self.transport.abort()

    # -- refusing a head too large ----------------------------------------------------

    def _refuse(self) -> None:
        """Stop passing bytes on; answer 431 once the answer in progress (if any, to an
        earlier request on this connection) is complete."""
        self.refused = True
        self._stop_timer()
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self._answering():
            # the answer being written must not be cut by ours: wait for it, reading
            # nothing meanwhile, within the time a head is given anyway
            transport.pause_reading()
            loop = asyncio.get_running_loop()
            loop.call_later(_POLL_SECONDS, self._refuse_when_done, loop.time())
            return
        self._answer_431()

    def _refuse_when_done(self, since: float) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        loop = asyncio.get_running_loop()
        if not self._answering():
            transport.resume_reading()
            self._answer_431()
        elif loop.time() - since > self.limits.header_timeout:
            transport.abort()
        else:
            loop.call_later(_POLL_SECONDS, self._refuse_when_done, since)

    def _answer_431(self) -> None:
        """Write the 431, end our side, and close once the client has read it: what it
        still sends meanwhile is dropped (closing at once would reset the connection,
        and the client could lose the answer)."""
        transport, writes = self.transport, self.writes
        assert transport is not None and writes is not None
        # after whatever the answer before it still has pending, never ahead of it
        writes.write(
            headers_too_large(self.limits.max_header_bytes, openai=self.heads.openai_target())
        )
        writes.flush()
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.writes = _JoinedWrites(transport)
        self.open[self] = None
        self.inner.connection_made(self.writes)
        self._arm()
        self._make_room()

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        cut = self.heads.feed(data)
        if cut is not None:
            if cut:
                self._pass_on(data[:cut])
            self._refuse()
            return
        self._pass_on(data)

    def _pass_on(self, data: bytes) -> None:
        before = getattr(self.inner, "cycle", None)
        between = before is None or getattr(before, "response_complete", False)
        self.inner.data_received(data)
        if getattr(self.inner, "cycle", None) is not before:
            self._disarm()  # a new request's headers are complete
        elif between:
            self._arm()  # the next request has begun: its headers get the deadline too

    def eof_received(self) -> bool | None:
        if self.refused:
            return None  # the client is done sending: close now
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        self.open.pop(self, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def guarded_protocol(inner: type[asyncio.Protocol], limits: ServeLimits) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class `inner` behind the header deadline, the header size
    limit and the connection cap of `limits` (one class per server: it holds that
    server's open connections)."""
    return type(
        "GuardedHTTPProtocol",
        (_Guard,),
        {"inner_class": inner, "limits": limits, "open": {}},
    )
