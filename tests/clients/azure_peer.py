"""A loopback server of Azure OpenAI's chat completions
(`POST /openai/deployments/{deployment}/chat/completions?api-version=...`), written for
raf's tests from Azure's REST reference, because Azure has no offline server: the
`api-key` header or an Entra ID bearer token, Azure's error bodies (`{"error": {"code",
"message"}}`) with `apim-request-id`, JSON completions and server-sent events that begin
with Azure's empty `prompt_filter_results` chunk and end with `data: [DONE]`.

Its model is deterministic: `call NAME {json}` calls a declared tool, after tool results
it answers `The tools said: ...`, else `You said: <text>` and what images it received.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.clients.loopback_peer import LoopbackPeer
from tests.clients.responses_peer import PeerError, _describe_uri

_PATH = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")


class AzurePeer(LoopbackPeer):
    """`with AzurePeer() as peer:` serves the endpoint `peer.endpoint` on loopback."""

    key = "azure-peer-key-0123456789"
    deployments = ("gpt-4o-deploy",)

    def __init__(self) -> None:
        self.tokens: set[str] = set()
        """Entra ID bearer tokens the peer accepts."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.queries: list[dict[str, list[str]]] = []
        self.failures: list[tuple[int, str, str]] = []
        super().__init__()
        self.endpoint = self.base

    def fail_next(self, status: int, code: str, message: str, *, count: int = 1) -> None:
        self.failures.extend([(status, code, message)] * count)

    def _id(self) -> str:
        return f"{self._next_number():08d}-peer"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        request_id = self._id()
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        url = urlparse(handler.path)
        query = parse_qs(url.query)
        try:
            match = _PATH.match(url.path)
            if match is None or not query.get("api-version"):
                raise PeerError(404, "Resource not found", "404")
            self._check_auth(handler)
            if match.group(1) not in self.deployments:
                raise PeerError(
                    404,
                    "The API deployment for this resource does not exist. If you created the "
                    "deployment within the last 5 minutes, please wait a moment and try again.",
                    "DeploymentNotFound",
                )
            body = json.loads(raw)
            self.requests.append(body)
            self.queries.append(query)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            if self.failures:
                status, code, message = self.failures.pop(0)
                raise PeerError(status, message, code)
            answer = self._answer(body)
        except PeerError as exc:
            data = json.dumps({"error": {"code": exc.code, "message": exc.message}}).encode()
            handler.send_response(exc.status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.send_header("apim-request-id", request_id)
            handler.end_headers()
            handler.wfile.write(data)
            return
        if body.get("stream"):
            handler.send_response(200)
            handler.send_header("content-type", "text/event-stream")
            handler.send_header("apim-request-id", request_id)
            handler.send_header("connection", "close")
            handler.end_headers()
            for chunk in self._chunks(answer, body):
                handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            handler.wfile.write(b"data: [DONE]\n\n")
            handler.wfile.flush()
            handler.close_connection = True
        else:
            data = json.dumps(answer).encode()
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.send_header("apim-request-id", request_id)
            handler.end_headers()
            handler.wfile.write(data)

    def _check_auth(self, handler: BaseHTTPRequestHandler) -> None:
        key = handler.headers.get("api-key")
        bearer = handler.headers.get("authorization", "")
        if key == self.key:
            return
        if bearer.startswith("Bearer ") and bearer[7:] in self.tokens:
            return
        raise PeerError(
            401,
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure "
            "to provide a valid key for an active subscription and use a correct regional "
            "API endpoint for your resource.",
            "401",
        )

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
        content = messages[last_user]["content"] if last_user >= 0 else ""
        media: list[str] = []
        if isinstance(content, list):
            for part in content:
                if part["type"] == "image_url":
                    media.append(_describe_uri(part["image_url"]["url"], "image"))
                elif part["type"] == "file":
                    media.append(_describe_uri(part["file"]["file_data"], "file"))
                elif part["type"] == "input_audio":
                    media.append(f"audio/{part['input_audio']['format']}")
            text = "".join(p.get("text", "") for p in content if p["type"] == "text")
        else:
            text = content
        results = [m["content"] for m in messages[last_user + 1 :] if m["role"] == "tool"]
        tools = {t["function"]["name"] for t in body.get("tools") or ()}
        calls = [
            {
                "id": f"call_{self._id()}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for name, arguments in re.findall(r"call (\w+) (\{[^}]*\})", text)
            if name in tools
        ]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if calls and not results:
            message["tool_calls"] = calls
            finish = "tool_calls"
        else:
            answer = "The tools said: " + "; ".join(results) if results else f"You said: {text}"
            if media:
                answer += " I received: " + ", ".join(media) + "."
            message["content"] = answer
            finish = "stop"
        given = sum(len(json.dumps(m).split()) for m in messages)
        made = len(json.dumps(message).split())
        return {
            "id": f"chatcmpl-{self._id()}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "gpt-4o-2024-11-20",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": given,
                "completion_tokens": made,
                "total_tokens": given + made,
            },
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
        }

    def _chunks(self, answer: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
        base = {"id": answer["id"], "object": "chat.completion.chunk", "created": 1_700_000_000}
        chunks: list[dict[str, Any]] = [
            {
                **base,
                "model": "",
                "choices": [],
                "prompt_filter_results": answer["prompt_filter_results"],
            }
        ]
        message = answer["choices"][0]["message"]
        model = answer["model"]
        if message.get("tool_calls"):
            for index, call in enumerate(message["tool_calls"]):
                delta = {"tool_calls": [{"index": index, **call}]}
                chunks.append(
                    {
                        **base,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                )
        else:
            for piece in re.findall(r"\S+\s*|\s+", message["content"]):
                delta = {"content": piece}
                chunks.append(
                    {
                        **base,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                )
        finish = answer["choices"][0]["finish_reason"]
        chunks.append(
            {
                **base,
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            }
        )
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "model": model, "choices": [], "usage": answer["usage"]})
        return chunks
