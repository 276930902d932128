"""Running the app on uvicorn: in the foreground for `raf serve`, or in a thread for tests."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

from raf.core.errors import ConfigurationError
from raf.serve.errors import require_extra
from raf.serve.limits import ServeLimits
from raf.serve.security import ASGIApp

BACKLOG = 2048
"""Connections the kernel queues before the server accepts them."""


def limits_of(app: ASGIApp) -> ServeLimits:
    """The limits `create_app` put in front of `app` (the defaults for a bare app)."""
    limits = getattr(app, "limits", None)
    return limits if isinstance(limits, ServeLimits) else ServeLimits()


def _room_for(connections: int) -> None:
    """Raise this process's open-file limit (up to the hard one) so that the connection
    cap, not the file limit, is what refuses clients; the accept loop stalls otherwise."""
    try:
        import resource
    except ImportError:  # not on this platform: the file limit stays as it is
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0 picks a free one), so the real port is known at once."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio turns Nagle off (TCP_NODELAY) only on accepted
    # sockets whose protocol says TCP; with 0 every response waited ~40 ms for an ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(BACKLOG)
    sock.setblocking(False)
    return sock


HttpParser = Literal["auto", "h11", "httptools"]
"""uvicorn's HTTP implementation: "auto" takes httptools when installed, else h11."""


def _http_protocol(parser: HttpParser) -> type[asyncio.Protocol]:
    """uvicorn's protocol class for `parser`."""
    if parser == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    if parser == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return AutoHTTPProtocol


def _server(
    app: ASGIApp, on_started: Callable[[], None] | None = None, parser: HttpParser = "auto"
) -> Any:
    require_extra("uvicorn")
    import uvicorn

    from raf.serve.connections import guarded_protocol

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and on_started is not None:
                on_started()

    limits = limits_of(app)
    _room_for(limits.max_connections)
    settings = uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=limits.keep_alive,
        http=guarded_protocol(_http_protocol(parser), limits),
        # h11 refuses heads past its own 16 KiB with a bare 400; the guard's limit (a
        # 431 saying so) is the one that applies, and h11 is never passed more than it
        h11_max_incomplete_event_size=limits.max_header_bytes,
        backlog=BACKLOG,
    )
    return Server(settings)


async def serve_socket(
    app: ASGIApp, sock: socket.socket, *, on_started: Callable[[], None] | None = None
) -> None:
    """Serve `app` on `sock` until the process is asked to stop (SIGINT/SIGTERM); calls
    `on_started` once it accepts connections."""
    await _server(app, on_started).serve(sockets=[sock])


@contextlib.contextmanager
def serve_in_thread(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 20.0,
    parser: HttpParser = "auto",
) -> Iterator[str]:
    """Serve `app` from a background thread; yields the base URL and stops the server
    (within `timeout` seconds) on leaving the block. For tests and benchmarks; `parser`
    picks uvicorn's HTTP implementation, to check both."""
    sock = bind(host, port)
    server = _server(app, parser=parser)
    failure: list[BaseException] = []

    def main() -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:  # reported to the waiting thread below
            failure.append(exc)

    thread = threading.Thread(target=main, name="raf-serve", daemon=True)
    thread.start()
    try:
        waited = 0.0
        while not server.started:
            if failure or not thread.is_alive():
                raise RuntimeError(f"the server did not start: {failure[:1]}")
            if waited > timeout:
                raise TimeoutError(f"the server did not start within {timeout} s")
            threading.Event().wait(0.02)
            waited += 0.02
        name, real_port = sock.getsockname()[:2]
        shown = f"[{name}]" if ":" in name else name
        yield f"http://{shown}:{real_port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
        if thread.is_alive():
            raise TimeoutError(f"the server did not stop within {timeout} s")
