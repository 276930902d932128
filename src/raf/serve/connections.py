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
        self.length = None
        self.chunked = False


def headers_too_large(limit: int) -> bytes:
    """The whole 431 response: raf's JSON error saying the limit, then close."""
    body = json.dumps(
        {
            "error": {
                "code": "headers_too_large",
                "message": f"the request line and headers are larger than {limit} bytes, "
                f"the server's limit (--max-header-bytes {limit}); send smaller headers, "
                "or raise --max-header-bytes",
            }
        }
    ).encode()
    head = (
        "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Guard(asyncio.Protocol):
    """One connection: uvicorn's protocol inside, with the header limits around it."""

    inner_class: type[asyncio.Protocol]
    limits: ServeLimits
    open: dict[_Guard, None]
    """Open connections of this server, oldest first."""

    def __init__(self, **options: Any) -> None:
        self.inner: Any = self.inner_class(**options)
        self.transport: asyncio.Transport | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.heads = HeadCounter(self.limits.max_header_bytes)
        self.refused = False
        """Whether a head passed the limit: nothing more reaches the inner protocol."""

    # -- state of the connection ------------------------------------------------------

    def _answering(self) -> bool:
        """Whether a request's headers are in and its response is not complete."""
        cycle = getattr(self.inner, "cycle", None)
        return cycle is not None and not getattr(cycle, "response_complete", False)

    def _arm(self) -> None:
        if self.deadline is None and self.transport is not None:
            loop = asyncio.get_running_loop()
            self.deadline = loop.call_later(self.limits.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _expired(self) -> None:
        """The headers did not come in time: close, whatever was half sent."""
        self.deadline = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()

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
        self._disarm()
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
        transport = self.transport
        assert transport is not None
        transport.write(headers_too_large(self.limits.max_header_bytes))
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.open[self] = None
        self.inner.connection_made(transport)
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
        self._disarm()
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
