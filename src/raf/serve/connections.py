"""Connection limits uvicorn lacks: a deadline for request headers, and a cap on open
connections that closes idle ones first.

uvicorn times out idle kept-alive connections but not a client that connects and sends
its headers slowly (or never): each such connection would stay open for good, and enough
of them take the server down. `guarded_protocol` wraps uvicorn's HTTP protocol (h11 or
httptools, whichever it picked) and closes a connection whose request line and headers
are not in within `header_timeout` seconds of connecting, or of the first byte of its
next request. Both protocols keep the request being answered in `.cycle`, set once its
headers are complete; that is how the wrapper tells "headers in" from "still sending".
"""

from __future__ import annotations

import asyncio
from typing import Any

from raf.serve.limits import ServeLimits


class _Guard(asyncio.Protocol):
    """One connection: uvicorn's protocol inside, with a header deadline around it."""

    inner_class: type[asyncio.Protocol]
    limits: ServeLimits
    open: dict[_Guard, None]
    """Open connections of this server, oldest first."""

    def __init__(self, **options: Any) -> None:
        self.inner: Any = self.inner_class(**options)
        self.transport: asyncio.Transport | None = None
        self.deadline: asyncio.TimerHandle | None = None

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

    # -- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.open[self] = None
        self.inner.connection_made(transport)
        self._arm()
        self._make_room()

    def data_received(self, data: bytes) -> None:
        before = getattr(self.inner, "cycle", None)
        between = before is None or getattr(before, "response_complete", False)
        self.inner.data_received(data)
        if getattr(self.inner, "cycle", None) is not before:
            self._disarm()  # a new request's headers are complete
        elif between:
            self._arm()  # the next request has begun: its headers get the deadline too

    def eof_received(self) -> bool | None:
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
    """uvicorn's HTTP protocol class `inner` behind the header deadline and the
    connection cap of `limits` (one class per server: it holds that server's open
    connections)."""
    return type(
        "GuardedHTTPProtocol",
        (_Guard,),
        {"inner_class": inner, "limits": limits, "open": {}},
    )
