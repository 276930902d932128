"""A loopback server of the Gemini API's `generateContent` and `streamGenerateContent`
(`POST /v1/models/{model}:generateContent` (or `/v1beta/`), `...:streamGenerateContent?alt=sse`),
written for raf's tests from Google's REST reference because Gemini has no offline
server: camelCase JSON (`contents`, `parts` with `text`, `inlineData`, `fileData`,
`functionCall`, `functionResponse`, `thoughtSignature`; `systemInstruction`, `tools`,
`toolConfig`, `safetySettings`, `generationConfig`), the `x-goog-api-key` header,
server-sent events of whole `GenerateContentResponse` chunks, and Google's error bodies
(`{"error": {"code", "message", "status"}}`). Like Google's servers (the proto3 JSON
mapping), it reads a field by its lowerCamelCase name or by its proto (snake_case) name:
the SDK writes nested objects such as `inlineData` and `thinkingConfig` with the latter.

Its model is deterministic: `call NAME {json}` calls a declared function (signed with a
`thoughtSignature` when thinking is on, which must come back on the same part, as Gemini
requires), after function responses it answers `The tools said: ...`, a message with
`dangerous` is blocked (`finishReason: SAFETY`) when a safety setting blocks low
harm, with `responseJsonSchema` it answers JSON built from the schema, with the
`googleSearch` tool offered (and no call asked for) it answers `Searched: <text>` with the
candidate's `groundingMetadata` as the reference documents it (`webSearchQueries`,
`groundingChunks` of web sources, `groundingSupports` tying text segments to them,
`searchEntryPoint`; in a stream, on the last chunk), else `You said: <text>` and what
media it received.
"""

from __future__ import annotations

import base64
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.clients.loopback_peer import LoopbackPeer
from tests.clients.responses_peer import _example

_PATH = re.compile(
    r"^/(?:v1|v1beta)/models/([^/:]+):(generateContent|streamGenerateContent)(\?alt=sse)?$"
)
SIGNATURE = base64.b64encode(b"peer-thought-signature").decode()


def camel(data: dict[str, Any]) -> dict[str, Any]:
    """One object's keys in lowerCamelCase (not its values'), as the API reads them."""
    return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): v for k, v in data.items()}


class _Refused(Exception):
    def __init__(self, code: int, status: str, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code, self.status, self.message, self.reason = code, status, message, reason


class GeminiPeer(LoopbackPeer):
    """`with GeminiPeer() as peer:` serves on loopback at `peer.url`."""

    key = "gemini-peer-key-0123456789"
    models = ("gemini-peer-flash",)

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.failures: list[tuple[int, str, str]] = []
        super().__init__()
        self.url = self.base

    def fail_next(self, code: int, status: str, message: str, *, count: int = 1) -> None:
        self.failures.extend([(code, status, message)] * count)

    def _id(self) -> str:
        return f"peer-{self._next_number():04d}"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        try:
            match = _PATH.match(handler.path)
            if match is None:
                raise _Refused(404, "NOT_FOUND", f"Path {handler.path} was not found.")
            if handler.headers.get("x-goog-api-key") != self.key:
                raise _Refused(
                    400,
                    "INVALID_ARGUMENT",
                    "API key not valid. Please pass a valid API key.",
                    "API_KEY_INVALID",
                )
            body = json.loads(raw)
            self.requests.append(body)
            self.paths.append(handler.path)
            if self.failures:
                raise _Refused(*self.failures.pop(0))
            model = match.group(1)
            if model not in self.models:
                raise _Refused(
                    404,
                    "NOT_FOUND",
                    f"models/{model} is not found for API version v1beta, or is not supported "
                    "for generateContent.",
                )
            answer = self._answer(body, model)
        except _Refused as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message, "status": exc.status}
            if exc.reason:
                error["details"] = [
                    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": exc.reason}
                ]
            data = json.dumps({"error": error}).encode()
            handler.send_response(exc.code)
            handler.send_header("content-type", "application/json; charset=UTF-8")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        if match.group(2) == "generateContent":
            data = json.dumps(answer).encode()
            handler.send_response(200)
            handler.send_header("content-type", "application/json; charset=UTF-8")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        for chunk in self._chunks(answer):
            handler.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            handler.wfile.flush()
        handler.close_connection = True

    def _chunks(self, answer: dict[str, Any]) -> list[dict[str, Any]]:
        candidate = answer["candidates"][0]
        base = {"modelVersion": answer["modelVersion"], "responseId": answer["responseId"]}
        chunks: list[dict[str, Any]] = []
        for part in candidate["content"]["parts"]:
            pieces = re.findall(r"\S+\s*|\s+", part["text"]) if "text" in part else [None]
            for piece in pieces:
                one = dict(part) if piece is None else {**part, "text": piece}
                content = {"role": "model", "parts": [one]}
                chunks.append({**base, "candidates": [{"content": content, "index": 0}]})
        last = {"content": {"role": "model", "parts": []}, "index": 0}
        last["finishReason"] = candidate["finishReason"]
        if "groundingMetadata" in candidate:
            last["groundingMetadata"] = candidate["groundingMetadata"]
        chunks.append({**base, "candidates": [last], "usageMetadata": answer["usageMetadata"]})
        return chunks

    def _answer(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        contents = body.get("contents") or []
        for content in contents:
            if content.get("role") not in ("user", "model"):
                raise _Refused(400, "INVALID_ARGUMENT", f"Invalid role: {content.get('role')}")
            for part in content.get("parts") or ():
                call = part.get("functionCall")
                if (
                    call
                    and call.get("name") == "signed_only"
                    and part.get("thoughtSignature") != SIGNATURE
                ):
                    raise _Refused(
                        400,
                        "INVALID_ARGUMENT",
                        "Function call is missing a thought_signature in functionCall parts.",
                    )
        last = contents[-1]
        text = "".join(p.get("text", "") for p in last["parts"])
        results = [
            json.dumps(
                p["functionResponse"]["response"].get("result", p["functionResponse"]["response"])
            )
            for p in last["parts"]
            if "functionResponse" in p
        ]
        seen = []
        for part in last["parts"]:
            if "inlineData" in part:
                inline = camel(part["inlineData"])
                data = base64.b64decode(inline["data"], validate=True)
                seen.append(f"{inline['mimeType']} ({len(data)} bytes)")
            elif "fileData" in part:
                linked = camel(part["fileData"])
                seen.append(f"{linked['mimeType']} at {linked['fileUri']}")
        config = body.get("generationConfig") or {}
        thinking = camel(config.get("thinkingConfig") or {})
        parts: list[dict[str, Any]] = []
        if thinking.get("includeThoughts"):
            parts.append({"text": f"Considering: {text}", "thought": True})
        functions = {
            f["name"]
            for tool in body.get("tools") or ()
            for f in tool.get("functionDeclarations") or ()
        }
        finish = "STOP"
        calls = [
            (name, json.loads(arguments))
            for name, arguments in re.findall(r"call (\w+) (\{[^}]*\})", text)
            if name in functions
        ]
        blocked = any(
            s.get("threshold") == "BLOCK_LOW_AND_ABOVE" for s in body.get("safetySettings") or ()
        )
        searching = any(
            "googleSearch" in tool or "google_search" in tool for tool in body.get("tools") or ()
        )
        grounding: dict[str, Any] | None = None
        if calls and not results:
            for name, arguments in calls:
                part = {"functionCall": {"id": f"fc-{self._id()}", "name": name, "args": arguments}}
                if thinking.get("thinkingBudget"):
                    part["thoughtSignature"] = SIGNATURE
                parts.append(part)
        elif blocked and "dangerous" in text:
            finish = "SAFETY"
        elif config.get("responseJsonSchema"):
            parts.append({"text": json.dumps(_example(config["responseJsonSchema"]))})
        elif searching and not results:
            answer = f"Searched: {text}"
            parts.append({"text": answer})
            grounding = {
                "webSearchQueries": [text],
                "groundingChunks": [
                    {
                        "web": {
                            "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/peer",
                            "title": "example.org",
                        }
                    }
                ],
                "groundingSupports": [
                    {
                        "segment": {"startIndex": 0, "endIndex": len(answer), "text": answer},
                        "groundingChunkIndices": [0],
                        "confidenceScores": [0.9],
                    }
                ],
                "searchEntryPoint": {"renderedContent": '<div class="container">peer</div>'},
            }
        else:
            answer = "The tools said: " + "; ".join(results) if results else f"You said: {text}"
            if seen:
                answer += " I received: " + ", ".join(seen) + "."
            parts.append({"text": answer})
        given = len(json.dumps(contents).split())
        made = len(json.dumps(parts).split())
        thought = 7 if thinking.get("thinkingBudget") else 0
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": parts},
            "finishReason": finish,
            "index": 0,
        }
        if grounding is not None:
            candidate["groundingMetadata"] = grounding
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": given,
                "candidatesTokenCount": made,
                "thoughtsTokenCount": thought,
                "totalTokenCount": given + made + thought,
            },
            "modelVersion": f"{model}-001",
            "responseId": self._id(),
        }
