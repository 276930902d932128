"""A loopback server of Amazon Bedrock's runtime Converse API, written for raf's tests
from the AWS API reference because Bedrock has no offline server:
`POST /model/{modelId}/converse` (JSON) and `POST /model/{modelId}/converse-stream`,
whose answer is the AWS event stream binary framing (`application/vnd.amazon.eventstream`:
a prelude with total and header lengths and its CRC32, typed headers `:event-type`,
`:content-type`, `:message-type`, the JSON payload, the message CRC32), so botocore's
own parser reads it. Requests must carry a SigV4 `Authorization` header for the peer's
access key; errors carry `x-amzn-ErrorType` and `x-amzn-RequestId` as AWS sends them.

Its model is deterministic: `call NAME {json}` calls a declared tool, after tool results
it answers `The tools said: ...`, `break` ends a stream with a `modelStreamErrorException`
after some text, with `outputConfig` it answers JSON built from the schema, else
`You said: <text>` and what images and documents it received. With
`additionalModelRequestFields.thinking` it first streams signed reasoning.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from tests.clients.loopback_peer import LoopbackPeer
from tests.clients.responses_peer import _example

ACCESS_KEY = "AKIDPEER0123456789"
SECRET_KEY = "peer-secret-key-0123456789"
_PATH = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")


class _Refused(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of the AWS event stream encoding (string headers only)."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += bytes([len(raw_name)]) + raw_name + b"\x07"
        encoded += struct.pack(">H", len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    headers = {
        ":event-type": kind,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return frame(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps({"message": message}).encode())


class BedrockPeer(LoopbackPeer):
    """`with BedrockPeer() as peer:` serves on loopback at `peer.url`."""

    models = ("anthropic.claude-peer-v1:0", "amazon.nova-peer-v1:0")

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.failures: list[tuple[int, str, str]] = []
        super().__init__()
        self.url = self.base

    def fail_next(self, status: int, kind: str, message: str, *, count: int = 1) -> None:
        self.failures.extend([(status, kind, message)] * count)

    def _id(self) -> str:
        return f"aaaa{self._next_number():04d}-peer-request"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        request_id = self._id()
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        try:
            match = _PATH.match(handler.path)
            if match is None:
                raise _Refused(404, "UnknownOperationException", "Unknown operation")
            auth = handler.headers.get("authorization", "")
            if not re.match(
                rf"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/\d{{8}}/[a-z0-9-]+/bedrock/"
                r"aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$",
                auth,
            ) or not handler.headers.get("x-amz-date"):
                raise _Refused(
                    403,
                    "UnrecognizedClientException",
                    "The security token included in the request is invalid.",
                )
            model = unquote(match.group(1))
            body = json.loads(raw)
            self.requests.append(body)
            self.paths.append(handler.path)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            if self.failures:
                raise _Refused(*self.failures.pop(0))
            if model not in self.models:
                raise _Refused(
                    400,
                    "ValidationException",
                    "The provided model identifier is invalid.",
                )
            blocks, stop = self._answer(body)
        except _Refused as exc:
            data = json.dumps({"message": exc.message}).encode()
            handler.send_response(exc.status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.send_header("x-amzn-ErrorType", f"{exc.kind}:http://internal.amazon.com/")
            handler.send_header("x-amzn-RequestId", request_id)
            handler.end_headers()
            handler.wfile.write(data)
            return
        usage = self._usage(body, blocks)
        if match.group(2) == "converse":
            answer = {
                "output": {"message": {"role": "assistant", "content": blocks}},
                "stopReason": stop,
                "usage": usage,
                "metrics": {"latencyMs": 12},
            }
            data = json.dumps(answer).encode()
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.send_header("x-amzn-RequestId", request_id)
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_response(200)
        handler.send_header("content-type", "application/vnd.amazon.eventstream")
        handler.send_header("x-amzn-RequestId", request_id)
        handler.send_header("connection", "close")
        handler.end_headers()
        for chunk in self._stream(blocks, stop, usage, body):
            handler.wfile.write(chunk)
            handler.wfile.flush()
        handler.close_connection = True

    def _stream(
        self, blocks: list[dict[str, Any]], stop: str, usage: dict[str, int], body: dict[str, Any]
    ) -> list[bytes]:
        out = [event("messageStart", {"role": "assistant"})]
        for index, block in enumerate(blocks):
            at = {"contentBlockIndex": index}
            if "toolUse" in block:
                use = block["toolUse"]
                start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
                out.append(event("contentBlockStart", {**at, "start": start}))
                text = json.dumps(use["input"])
                for cut in range(0, len(text), 6):
                    delta = {"toolUse": {"input": text[cut : cut + 6]}}
                    out.append(event("contentBlockDelta", {**at, "delta": delta}))
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"]["reasoningText"]
                for piece in re.findall(r"\S+\s*", reasoning["text"]):
                    delta = {"reasoningContent": {"text": piece}}
                    out.append(event("contentBlockDelta", {**at, "delta": delta}))
                delta = {"reasoningContent": {"signature": reasoning["signature"]}}
                out.append(event("contentBlockDelta", {**at, "delta": delta}))
            else:
                pieces = re.findall(r"\S+\s*|\s+", block["text"])
                for number, piece in enumerate(pieces):
                    out.append(event("contentBlockDelta", {**at, "delta": {"text": piece}}))
                    if number == 2 and "break" in self._user_text(body):
                        out.append(
                            exception(
                                "modelStreamErrorException",
                                "The model stream was interrupted.",
                            )
                        )
                        return out
            out.append(event("contentBlockStop", at))
        out.append(event("messageStop", {"stopReason": stop}))
        out.append(event("metadata", {"usage": usage, "metrics": {"latencyMs": 12}}))
        return out

    @staticmethod
    def _user_text(body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages") or () if m["role"] == "user"]
        texts = [b["text"] for m in users[-1:] for b in m["content"] if "text" in b]
        return "".join(texts)

    def _answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        messages = body.get("messages") or []
        if not messages or messages[0]["role"] != "user":
            raise _Refused(
                400, "ValidationException", "A conversation must start with a user message."
            )
        for earlier, later in itertools.pairwise(messages):
            if earlier["role"] == later["role"]:
                raise _Refused(
                    400,
                    "ValidationException",
                    "A conversation must alternate between user and assistant roles.",
                )
        last = messages[-1]
        text = "".join(b["text"] for b in last["content"] if "text" in b)
        results: list[str] = []
        seen: list[str] = []
        for block in last["content"]:
            if "toolResult" in block:
                for part in block["toolResult"]["content"]:
                    if "text" in part:
                        results.append(part["text"])
                    else:
                        results.append(self._describe(part))
            elif "image" in block or "document" in block or "audio" in block:
                seen.append(self._describe(block))
        for message in messages:
            for block in message["content"]:
                if "reasoningContent" in block and message["role"] == "assistant":
                    signature = block["reasoningContent"]["reasoningText"]["signature"]
                    if not signature.startswith("sig-"):
                        raise _Refused(400, "ValidationException", "Invalid reasoning signature.")
        out: list[dict[str, Any]] = []
        thinking = (body.get("additionalModelRequestFields") or {}).get("thinking")
        if thinking:
            out.append(
                {
                    "reasoningContent": {
                        "reasoningText": {"text": f"Thinking about {text}", "signature": "sig-1"}
                    }
                }
            )
        tools = {t["toolSpec"]["name"] for t in (body.get("toolConfig") or {}).get("tools", ())}
        calls = [
            (name, json.loads(arguments))
            for name, arguments in re.findall(r"call (\w+) (\{[^}]*\})", text)
            if name in tools
        ]
        if calls and not results:
            for name, arguments in calls:
                use = {"toolUseId": f"tooluse_{self._id()}", "name": name, "input": arguments}
                out.append({"toolUse": use})
            return out, "tool_use"
        output = body.get("outputConfig")
        if output:
            schema = json.loads(output["textFormat"]["structure"]["jsonSchema"]["schema"])
            out.append({"text": json.dumps(_example(schema))})
            return out, "end_turn"
        if results:
            answer = "The tools said: " + "; ".join(results)
        else:
            answer = f"You said: {text}"
            if seen:
                answer += " I received: " + ", ".join(seen) + "."
        out.append({"text": answer})
        limit = (body.get("inferenceConfig") or {}).get("maxTokens")
        return out, ("max_tokens" if limit is not None and limit < 5 else "end_turn")

    @staticmethod
    def _describe(block: dict[str, Any]) -> str:
        kind = next(k for k in ("image", "document", "audio") if k in block)
        data = base64.b64decode(block[kind]["source"]["bytes"], validate=True)
        return f"{kind}/{block[kind]['format']} ({len(data)} bytes)"

    @staticmethod
    def _usage(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, int]:
        given = len(json.dumps(body.get("messages")).split())
        made = len(json.dumps(blocks).split())
        return {"inputTokens": given, "outputTokens": made, "totalTokens": given + made}
