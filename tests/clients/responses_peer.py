"""A loopback server of the OpenAI Responses API (`POST /v1/responses`), written for raf's
tests from the API's documentation because no official server runs offline.

It speaks the documented wire format: JSON responses (`object: "response"`, `output`
items, `usage`), server-sent events for `stream: true` (`response.created`,
`response.output_item.added`/`.done`, `response.output_text.delta`,
`response.function_call_arguments.delta`, `response.reasoning_summary_text.delta`,
hosted tools' `response.web_search_call.*` and friends, `response.completed` or
`response.failed`), bearer-key authentication, OpenAI's error bodies with an
`x-request-id` header, stored responses and `previous_response_id`, and reasoning items
that must come back either stored (`store: true`) or with the `encrypted_content` it
issued (`store: false`), as OpenAI checks them.

Its "model" is deterministic, so tests can ask for behaviour in the user's words:
`call NAME {json}` calls a declared function tool, `use TYPE` calls a declared hosted
tool, `fail` makes the response fail, `quote tools` is refused with a 400 that quotes
the request's `tools` array (as a provider's validation error does); a remote MCP tool
whose `require_approval` is not `never` (the API's default is `always`), asked to
`use mcp` or naming its server label, first answers with an `mcp_approval_request`, and
calls the server only after an `mcp_approval_response` that approves it; after tool
outputs it answers with what they said;
with a `json_schema` text format it answers JSON built from the schema; otherwise it
answers `You said: <text>`, naming the images and files it received.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.clients.loopback_peer import LoopbackPeer

_SECRET = b"responses-peer"


def _seal(item_id: str, text: str) -> str:
    payload = json.dumps({"id": item_id, "text": text}).encode()
    tag = hmac.new(_SECRET, payload, hashlib.sha256).hexdigest()
    return base64.b64encode(payload).decode() + "." + tag


def _unseal(sealed: str) -> dict[str, Any] | None:
    payload_b64, _, tag = sealed.partition(".")
    try:
        payload = base64.b64decode(payload_b64)
    except ValueError:
        return None
    if not hmac.compare_digest(hmac.new(_SECRET, payload, hashlib.sha256).hexdigest(), tag):
        return None
    return dict(json.loads(payload))


class PeerError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _example(schema: dict[str, Any]) -> Any:
    """A value that matches a (strict) JSON schema."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {name: _example(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_example(schema.get("items") or {})]
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "string":
        return "example"
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", ""))
        for part in content or ()
        if part.get("type") in ("input_text", "output_text")
    )


def _media_of(content: Any) -> list[str]:
    """What the message attaches, as `image/png (68 bytes)` or `image at <url>`."""
    seen: list[str] = []
    if isinstance(content, str):
        return seen
    for part in content or ():
        kind = part.get("type")
        if kind == "input_image":
            url = str(part.get("image_url") or "")
            seen.append(_describe_uri(url, "image"))
        elif kind == "input_file":
            if part.get("file_url"):
                seen.append(f"file at {part['file_url']}")
            else:
                seen.append(_describe_uri(str(part.get("file_data") or ""), "file"))
        elif kind not in ("input_text", "output_text"):
            raise PeerError(400, f"Invalid content part type: '{kind}'.", "invalid_value")
    return seen


def _describe_uri(uri: str, what: str) -> str:
    match = re.match(r"data:([^;]+);base64,(.*)$", uri, re.S)
    if match is None:
        if not uri.startswith("http"):
            raise PeerError(400, f"Invalid {what} data: expected a URL or data URI.")
        return f"{what} at {uri}"
    try:
        data = base64.b64decode(match.group(2), validate=True)
    except ValueError:
        raise PeerError(400, f"Invalid base64 {what} data.") from None
    return f"{match.group(1)} ({len(data)} bytes)"


class ResponsesPeer(LoopbackPeer):
    """The server; `with ResponsesPeer() as peer:` serves on loopback at `peer.url`."""

    key = "sk-responses-peer-0123456789"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in order."""
        self.headers: list[dict[str, str]] = []
        self.failures: list[tuple[int, str, str | None]] = []
        """Statuses to answer the next requests with, in order."""
        self._stored: dict[str, list[dict[str, Any]]] = {}
        self._items: dict[str, dict[str, Any]] = {}
        self._issued: set[str] = set()
        """Ids of the approval requests this server made."""
        self.approval_answers: list[dict[str, Any]] = []
        """Every `mcp_approval_response` received, in order."""
        super().__init__()
        self.url = f"{self.base}/v1"

    def fail_next(self, status: int, message: str, *, count: int = 1, code: str | None = None):
        self.failures.extend([(status, message, code)] * count)

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_{self._next_number():04d}"

    # -- HTTP ---------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        request_id = self._next_id("req")
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        try:
            if handler.path.rstrip("/") != "/v1/responses":
                raise PeerError(404, f"Invalid URL (POST {handler.path})", "unknown_url")
            if handler.headers.get("authorization") != f"Bearer {self.key}":
                raise PeerError(401, "Incorrect API key provided.", "invalid_api_key")
            try:
                body = json.loads(raw)
            except ValueError:
                raise PeerError(400, "We could not parse the JSON body of your request.") from None
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            if self.failures:
                status, message, code = self.failures.pop(0)
                raise PeerError(status, message, code)
            response = self._respond(body)
        except PeerError as exc:
            kind = "invalid_request_error" if exc.status < 500 else "server_error"
            payload = {
                "error": {"message": exc.message, "type": kind, "param": None, "code": exc.code}
            }
            self._send_json(handler, exc.status, payload, request_id)
            return
        if body.get("stream"):
            self._send_stream(handler, response, request_id)
        else:
            self._send_json(handler, 200, response, request_id)

    def _send_json(
        self, handler: BaseHTTPRequestHandler, status: int, payload: Any, request_id: str
    ) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.send_header("x-request-id", request_id)
        handler.end_headers()
        handler.wfile.write(data)

    def _send_stream(
        self, handler: BaseHTTPRequestHandler, response: dict[str, Any], request_id: str
    ) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("x-request-id", request_id)
        handler.send_header("connection", "close")
        handler.end_headers()
        for sequence, event in enumerate(self._events(response)):
            event["sequence_number"] = sequence
            chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
            handler.wfile.write(chunk.encode())
            handler.wfile.flush()
        handler.close_connection = True

    # -- the wire format's events -------------------------------------------------------

    def _events(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        start = {**response, "status": "in_progress", "output": [], "usage": None}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": start},
            {"type": "response.in_progress", "response": start},
        ]
        for index, item in enumerate(response["output"]):
            events.extend(self._item_events(index, item))
        final = "response.failed" if response["status"] == "failed" else "response.completed"
        events.append({"type": final, "response": response})
        return events

    def _item_events(self, index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        kind, item_id = item["type"], item["id"]
        where = {"output_index": index, "item_id": item_id}
        events: list[dict[str, Any]] = []
        if kind == "message":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {"type": "response.content_part.added", **where, "content_index": 0, "part": part}
            )
            for piece in re.findall(r"\S+\s*|\s+", text):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        **where,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    **where,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    **where,
                    "content_index": 0,
                    "part": item["content"][0],
                }
            )
        elif kind == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            arguments = item["arguments"]
            for cut in range(0, len(arguments), 7):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        **where,
                        "delta": arguments[cut : cut + 7],
                    }
                )
            events.append(
                {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
            )
        elif kind == "reasoning":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "summary": [], "encrypted_content": None},
                }
            )
            for summary_index, part in enumerate(item["summary"]):
                at = {**where, "summary_index": summary_index}
                events.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        **at,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                for piece in re.findall(r"\S+\s*", part["text"]):
                    events.append(
                        {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
                    )
                events.append(
                    {"type": "response.reasoning_summary_text.done", **at, "text": part["text"]}
                )
                events.append({"type": "response.reasoning_summary_part.done", **at, "part": part})
        elif kind == "mcp_approval_request":
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": item}
            )
        else:  # hosted tools: web_search_call, code_interpreter_call, file_search_call, mcp_call
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress"},
                }
            )
            stage = kind.removesuffix("_call")
            steps = {
                "web_search": ("in_progress", "searching", "completed"),
                "file_search": ("in_progress", "searching", "completed"),
                "code_interpreter": ("in_progress", "interpreting", "completed"),
                "mcp": ("in_progress", "completed"),
            }[stage]
            for step in steps:
                events.append({"type": f"response.{stage}_call.{step}", **where})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        return events

    # -- the model ----------------------------------------------------------------------

    def _conversation(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The items the model reads: the stored ones before `previous_response_id`, then
        the input, checked as OpenAI checks them."""
        history: list[dict[str, Any]] = []
        previous = body.get("previous_response_id")
        if previous is not None:
            if previous not in self._stored:
                raise PeerError(
                    400, f"Previous response with id '{previous}' not found.", "not_found"
                )
            history = list(self._stored[previous])
        given = body.get("input")
        if isinstance(given, str):
            given = [{"role": "user", "content": given}]
        if not isinstance(given, list):
            raise PeerError(400, "Invalid type for 'input': expected a string or an array.")
        store = body.get("store", True)
        calls = {i["call_id"] for i in history if i.get("type") == "function_call"}
        asked = {i["id"] for i in history if i.get("type") == "mcp_approval_request"}
        for index, item in enumerate(given):
            kind = item.get("type", "message")
            if kind == "mcp_approval_request":
                if item.get("id") not in self._issued:
                    raise PeerError(400, f"Invalid 'input[{index}].id': unknown approval request.")
                asked.add(item["id"])
                history.append(item)
                continue
            elif kind == "mcp_approval_response":
                if item.get("approval_request_id") not in asked:
                    raise PeerError(
                        400,
                        f"No approval request found with id {item.get('approval_request_id')}.",
                    )
                if not isinstance(item.get("approve"), bool):
                    raise PeerError(400, f"Invalid type for 'input[{index}].approve'.")
                self.approval_answers.append(item)
                history.append(item)
                continue
            if kind == "message":
                if item.get("role") not in ("user", "assistant", "system", "developer"):
                    raise PeerError(400, f"Invalid value for 'input[{index}].role'.")
                _media_of(item.get("content"))  # checks the parts
            elif kind == "function_call":
                calls.add(item["call_id"])
            elif kind == "function_call_output":
                if item.get("call_id") not in calls:
                    raise PeerError(
                        400,
                        f"No tool call found for function call output with call_id "
                        f"{item.get('call_id')}.",
                    )
            elif kind == "reasoning":
                self._check_reasoning(item, store=store)
            else:
                raise PeerError(400, f"Invalid value for 'input[{index}].type': '{kind}'.")
            history.append(item)
        return history

    def _check_reasoning(self, item: dict[str, Any], *, store: bool) -> None:
        sealed = item.get("encrypted_content")
        if sealed:
            opened = _unseal(str(sealed))
            if opened is None or opened["id"] != item.get("id"):
                raise PeerError(
                    400,
                    f"The encrypted content for item {item.get('id')} could not be verified.",
                    "invalid_encrypted_content",
                )
        elif item.get("id") not in self._items:
            raise PeerError(
                404,
                f"Item with id '{item.get('id')}' not found. Items are not persisted when "
                "`store` is set to false. Try again with `store` set to true, or remove "
                "this item from your input.",
            )

    def _respond(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise PeerError(
                400, "Missing required parameter: 'model'.", "missing_required_parameter"
            )
        if model.startswith("missing"):
            raise PeerError(404, f"The model '{model}' does not exist.", "model_not_found")
        conversation = self._conversation(body)
        tools = body.get("tools") or []
        functions = {}
        hosted = {}
        for index, tool in enumerate(tools):
            if tool.get("type") == "function":
                if not tool.get("name"):
                    raise PeerError(400, f"Missing required parameter: 'tools[{index}].name'.")
                functions[tool["name"]] = tool
            else:
                hosted[tool.get("type")] = tool
        last_user = max(
            (
                i
                for i, item in enumerate(conversation)
                if item.get("type", "message") == "message" and item.get("role") == "user"
            ),
            default=-1,
        )
        user = conversation[last_user] if last_user >= 0 else {"content": ""}
        text = _text_of(user.get("content"))
        since = conversation[last_user + 1 :]
        outputs = [
            i["output"] if isinstance(i["output"], str) else self._output_parts(i["output"])
            for i in since
            if i.get("type") == "function_call_output"
        ]
        remembered = [
            i["id"]
            for i in body.get("input") or ()
            if isinstance(i, dict) and i.get("type") == "reasoning"
        ]
        output: list[dict[str, Any]] = []
        reasoning = body.get("reasoning")
        if reasoning:
            output.append(self._reasoning(body, text))
        status = "completed"
        error = None
        answered = {
            i["approval_request_id"]: i for i in since if i.get("type") == "mcp_approval_response"
        }
        if "quote tools" in text:
            raise PeerError(
                400, f"Invalid 'tools': the tools given were {json.dumps(tools)}", "invalid_value"
            )
        if answered:
            output.extend(self._after_approval(conversation, answered, hosted.get("mcp") or {}))
        elif (
            "mcp" in hosted
            and ("use mcp" in text or f" {hosted['mcp'].get('server_label')}" in text)
            and hosted["mcp"].get("require_approval", "always") != "never"
        ):
            output.append(self._approval_request(hosted["mcp"]))
        elif re.search(r"\bfail\b", text) and not outputs:
            status = "failed"
            error = {"code": "server_error", "message": "The model failed to answer."}
        elif (
            not outputs
            and (directives := re.findall(r"call (\w+) (\{[^}]*\})", text))
            and any(name in functions for name, _ in directives)
            and not any(i.get("type") == "function_call" for i in since)
        ):
            for name, arguments in directives:
                if name in functions:
                    output.append(
                        {
                            "type": "function_call",
                            "id": self._next_id("fc"),
                            "call_id": self._next_id("call"),
                            "name": name,
                            "arguments": arguments,
                            "status": "completed",
                        }
                    )
        else:
            for kind in re.findall(r"use (\w+)", text):
                if kind in hosted:
                    output.append(self._hosted_call(kind, hosted[kind], text))
            output.append(self._message(self._answer(body, text, user, outputs, remembered)))
        usage_in = sum(len(json.dumps(i).split()) for i in conversation)
        usage_out = sum(len(json.dumps(i).split()) for i in output)
        response = {
            "id": self._next_id("resp"),
            "object": "response",
            "created_at": 1_700_000_000,
            "status": status,
            "error": error,
            "incomplete_details": None,
            "model": f"{model}-2025-08-07",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": tools,
            "previous_response_id": body.get("previous_response_id"),
            "store": body.get("store", True),
            "usage": {
                "input_tokens": usage_in,
                "input_tokens_details": {
                    "cached_tokens": 2 if body.get("previous_response_id") else 0
                },
                "output_tokens": usage_out,
                "output_tokens_details": {"reasoning_tokens": 8 if reasoning else 0},
                "total_tokens": usage_in + usage_out,
            },
        }
        if body.get("store", True):
            stored = [*conversation, *output]
            self._stored[response["id"]] = stored
            for item in output:
                self._items[item["id"]] = item
        return response

    def _approval_request(self, tool: dict[str, Any]) -> dict[str, Any]:
        request_id = self._next_id("mcpr")
        self._issued.add(request_id)
        return {
            "type": "mcp_approval_request",
            "id": request_id,
            "server_label": tool.get("server_label"),
            "name": (tool.get("allowed_tools") or ["lookup"])[0],
            "arguments": '{"query": "tides"}',
        }

    def _after_approval(
        self,
        conversation: list[dict[str, Any]],
        answered: dict[str, dict[str, Any]],
        tool: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """The MCP calls people approved, made, and an answer naming what was refused."""
        output: list[dict[str, Any]] = []
        said: list[str] = []
        for item in conversation:
            answer = (
                answered.get(item.get("id", ""))
                if item.get("type") == "mcp_approval_request"
                else None
            )
            if answer is None:
                continue
            if answer["approve"]:
                call = self._hosted_call("mcp", {**tool, "allowed_tools": [item["name"]]}, "")
                call["arguments"] = item["arguments"]
                output.append(call)
                said.append(f"{item['name']} said: {call['output']}")
            else:
                said.append(f"{item['name']} was not approved ({answer.get('reason', '')})")
        output.append(self._message("The MCP server: " + "; ".join(said)))
        return output

    @staticmethod
    def _output_parts(parts: list[dict[str, Any]]) -> str:
        """A function call output given as parts (text, images, files), as the model reads it."""
        read = [p["text"] for p in parts if p.get("type") == "input_text"]
        others = [p for p in parts if p.get("type") != "input_text"]
        return " ".join([*read, *_media_of(others)])

    def _reasoning(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        item_id = self._next_id("rs")
        thought = f"The user asked: {text}"
        item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
        if (body.get("reasoning") or {}).get("summary"):
            item["summary"] = [{"type": "summary_text", "text": thought}]
        if "reasoning.encrypted_content" in (body.get("include") or ()):
            item["encrypted_content"] = _seal(item_id, thought)
        return item

    def _hosted_call(self, kind: str, tool: dict[str, Any], text: str) -> dict[str, Any]:
        item_id = self._next_id(kind[:2])
        if kind == "web_search":
            return {
                "type": "web_search_call",
                "id": item_id,
                "status": "completed",
                "action": {"type": "search", "query": text},
            }
        if kind == "code_interpreter":
            return {
                "type": "code_interpreter_call",
                "id": item_id,
                "status": "completed",
                "code": "print(2 + 2)",
                "container_id": "cntr_peer",
                "outputs": [{"type": "logs", "logs": "4\n"}],
            }
        if kind == "file_search":
            return {
                "type": "file_search_call",
                "id": item_id,
                "status": "completed",
                "queries": [text],
                "results": [
                    {"file_id": "file_1", "filename": "notes.txt", "score": 0.9, "text": "tides"}
                ],
            }
        return {
            "type": "mcp_call",
            "id": item_id,
            "server_label": tool.get("server_label"),
            "name": (tool.get("allowed_tools") or ["lookup"])[0],
            "arguments": "{}",
            "output": "from the remote MCP server",
            "error": None,
        }

    def _answer(
        self,
        body: dict[str, Any],
        text: str,
        user: dict[str, Any],
        outputs: list[str],
        remembered: list[str],
    ) -> str:
        fmt = (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return json.dumps(_example(fmt.get("schema") or {}))
        if outputs:
            answer = "The tools said: " + "; ".join(outputs)
        else:
            answer = f"You said: {text}"
            media = _media_of(user.get("content"))
            if media:
                answer += " I received: " + ", ".join(media) + "."
        if remembered:
            answer += f" (I remember my reasoning {', '.join(remembered)})"
        return answer

    def _message(self, text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": self._next_id("msg"),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
