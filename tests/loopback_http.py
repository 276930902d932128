"""A loopback HTTP server that records every request it receives, for tests that prove
raf sent none (or only the ones it should). Started and stopped by the `with` block."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Route = Callable[[str], tuple[int, dict[str, str], bytes]]
"""path → (status, headers, body)."""


@dataclass
class Recorder:
    url: str = ""
    paths: list[str] = field(default_factory=list)
    routes: dict[str, Route] = field(default_factory=dict)

    def json(self, path: str, value: Any) -> None:
        body = json.dumps(value).encode()
        self.routes[path] = lambda _p: (200, {"Content-Type": "application/json"}, body)

    def redirect(self, path: str, location: str) -> None:
        self.routes[path] = lambda _p: (302, {"Location": location}, b"")


@contextmanager
def loopback_server(host: str = "127.0.0.1") -> Iterator[Recorder]:
    recorder = Recorder()

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = 10

        def _answer(self) -> None:
            recorder.paths.append(self.path)
            route = recorder.routes.get(self.path.split("?", 1)[0])
            status, headers, body = route(self.path) if route else (200, {}, b"{}")
            self.send_response(status)
            for name, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, 0), Handler)
    server.timeout = 10
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    recorder.url = f"http://{host}:{server.server_port}"
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
