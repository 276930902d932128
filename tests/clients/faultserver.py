"""A scriptable HTTP server on loopback that answers each request with the next fault."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: JSON, a (possibly cut) SSE stream, raw bytes, after a delay."""

    status: int = 200
    json_body: Any = None
    raw: bytes | None = None
    events: list[Any] | None = None
    cut_after: int | None = None
    """For streams: drop the connection after this many events (no proper end)."""
    delay: float = 0.0
    stall_after: int | None = None
    """For streams: after this many events, wait `delay` seconds before the next."""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    reset: bool = False
    """Drop the connection with a TCP reset instead of answering."""


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FaultServer:
    """Answers requests from a script, in order; the last reply repeats when it runs out."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(data) if data else None
                except ValueError:
                    body = data.decode(errors="replace")
                reply = server._next(
                    Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                if reply.delay and reply.stall_after is None:
                    time.sleep(reply.delay)
                if reply.reset:
                    linger = struct.pack("ii", 1, 0)  # close with RST, not FIN
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.connection.close()
                    self.close_connection = True
                    return
                try:
                    if reply.events is not None:
                        self._stream(reply)
                    else:
                        payload = (
                            reply.raw
                            if reply.raw is not None
                            else json.dumps(reply.json_body).encode()
                        )
                        self.send_response(reply.status)
                        self.send_header("content-type", reply.content_type)
                        self.send_header("content-length", str(len(payload)))
                        for key, value in reply.headers.items():
                            self.send_header(key, value)
                        self.end_headers()
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _stream(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, event in enumerate(reply.events or []):
                    if reply.stall_after is not None and i == reply.stall_after:
                        time.sleep(reply.delay)
                    if reply.cut_after is not None and i >= reply.cut_after:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    if isinstance(event, tuple):
                        text = f"event: {event[0]}\ndata: {json.dumps(event[1])}\n\n"
                    elif isinstance(event, str):
                        text = f"data: {event}\n\n"
                    else:
                        text = f"data: {json.dumps(event)}\n\n"
                    chunk = text.encode()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.seen.append(seen)
            if not self.script:
                return Reply(status=500, json_body={"error": {"message": "no reply scripted"}})
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def reply(self, *replies: Reply) -> FaultServer:
        with self._lock:
            self.script = list(replies)
            self.seen.clear()
        return self

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def completion(text: str = "", calls: list[tuple[str, str]] | None = None, **extra: Any) -> Any:
    """A chat completion with text and/or (name, raw arguments) calls."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    message.update(extra)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> Any:
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        out["choices"] = []
        out["usage"] = usage
    return out
