"""What every loopback peer of the client tests shares: an HTTP server on 127.0.0.1 in a
thread, started and stopped by `with`, handing each POST to the peer's `_handle`, and a
counter for the ids the peer makes up. The wire format is each peer's own."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackPeer:
    """A loopback HTTP server in a thread; subclasses answer in `_handle`."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                peer._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        """The server's address, with no path."""

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_number(self) -> int:
        """1, 2, 3, … across the server's threads (for request and item ids)."""
        with self._lock:
            self._count += 1
            return self._count

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError
