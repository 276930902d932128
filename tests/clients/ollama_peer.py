"""A loopback server of Ollama's native chat API (`POST /api/chat`), written for raf's
tests from Ollama's API documentation (docs/api.md), because a real Ollama needs a model
download: JSON answers, streamed answers as one JSON object per line ending with a
`done: true` line that carries `done_reason` and the token counts, tool calls as
`message.tool_calls` with arguments as objects, images as base64 strings in
`message.images`, and errors as `{"error": "..."}` with an HTTP status.

Its model is deterministic: `call NAME {json}` calls a declared tool, after tool results
it answers `The tools said: ...`, with a `format` schema it answers JSON built from it,
else `You said: <text>` and how many image bytes it saw. Only `llava-peer` takes images.
"""

from __future__ import annotations

import base64
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.clients.loopback_peer import LoopbackPeer
from tests.clients.responses_peer import _example

MODELS = {"qwen-peer", "llava-peer"}


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class OllamaPeer(LoopbackPeer):
    """`with OllamaPeer() as peer:` serves on loopback at `peer.url` (no `/v1`)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.failures: list[tuple[int, str]] = []
        super().__init__()
        self.url = self.base

    def fail_next(self, status: int, message: str, *, count: int = 1) -> None:
        self.failures.extend([(status, message)] * count)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        try:
            if handler.path != "/api/chat":
                raise _Refused(404, "404 page not found")
            try:
                body = json.loads(raw)
            except ValueError:
                raise _Refused(400, "invalid character in request body") from None
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            if self.failures:
                raise _Refused(*self.failures.pop(0))
            lines = self._answer(body)
        except _Refused as exc:
            self._send(handler, exc.status, [{"error": exc.message}], "application/json")
            return
        if body.get("stream", True):
            self._send(handler, 200, lines, "application/x-ndjson")
        else:
            whole = dict(lines[-1])
            message: dict[str, Any] = {"role": "assistant", "content": ""}
            for line in lines:
                part = line.get("message") or {}
                message["content"] += part.get("content", "")
                if part.get("thinking"):
                    message["thinking"] = message.get("thinking", "") + part["thinking"]
                if part.get("tool_calls"):
                    message["tool_calls"] = part["tool_calls"]
            whole["message"] = message
            self._send(handler, 200, [whole], "application/json")

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, lines: list[dict[str, Any]], kind: str
    ) -> None:
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        handler.send_response(status)
        handler.send_header("content-type", kind)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        model = body.get("model")
        if model not in MODELS:
            raise _Refused(404, f'model "{model}" not found, try pulling it first')
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise _Refused(400, "messages must be an array")
        seen_bytes = 0
        for message in messages:
            if message.get("role") not in ("system", "user", "assistant", "tool"):
                raise _Refused(400, f"invalid role: {message.get('role')}")
            for image in message.get("images") or ():
                if model != "llava-peer":
                    raise _Refused(500, f"model {model} does not support images")
                try:
                    seen_bytes += len(base64.b64decode(image, validate=True))
                except ValueError:
                    raise _Refused(400, "illegal base64 data in image") from None
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        text = messages[last_user]["content"] if last_user >= 0 else ""
        results = [m["content"] for m in messages[last_user + 1 :] if m.get("role") == "tool"]
        tools = {
            t["function"]["name"]: t for t in body.get("tools") or () if t.get("type") == "function"
        }
        base = {"model": model, "created_at": "2025-01-01T00:00:00Z"}
        lines: list[dict[str, Any]] = []
        if body.get("think"):
            lines.append(
                {
                    **base,
                    "message": {"role": "assistant", "content": "", "thinking": "Hmm. "},
                    "done": False,
                }
            )
        calls = [
            {"function": {"name": name, "arguments": json.loads(arguments)}}
            for name, arguments in re.findall(r"call (\w+) (\{[^}]*\})", text)
            if name in tools
        ]
        if calls and not results:
            lines.append(
                {
                    **base,
                    "message": {"role": "assistant", "content": "", "tool_calls": calls},
                    "done": False,
                }
            )
        else:
            fmt = body.get("format")
            if isinstance(fmt, dict):
                answer = json.dumps(_example(fmt))
            elif fmt == "json":
                answer = json.dumps({"said": text})
            elif results:
                answer = "The tools said: " + "; ".join(results)
            else:
                answer = f"You said: {text}"
                if seen_bytes:
                    answer += f" I saw {seen_bytes} bytes of images."
            for piece in re.findall(r"\S+\s*|\s+", answer):
                lines.append(
                    {**base, "message": {"role": "assistant", "content": piece}, "done": False}
                )
        given = sum(len(str(m.get("content", "")).split()) for m in messages)
        made = sum(len(str(line["message"]).split()) for line in lines)
        limit = (body.get("options") or {}).get("num_predict")
        lines.append(
            {
                **base,
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "length" if limit is not None and limit < made else "stop",
                "total_duration": 1000,
                "prompt_eval_count": given,
                "eval_count": made,
            }
        )
        return lines
