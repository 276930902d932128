"""One OpenAPI operation as a raf tool: arguments → an HTTP request → a result."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from raf.core.errors import MissingExtraError, ToolExecutionError
from raf.core.outbound import OutboundPolicy, guarded_async_client
from raf.core.tools import ToolContext, ToolResult
from raf.tools.openapi.auth import Auth

_RESERVED_HEADERS = {"accept", "content-type", "authorization"}
_NAME_SAFE = re.compile(r"[^A-Za-z0-9_-]+")

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
"""Methods that change nothing: they get no `Idempotency-Key` header."""


def tool_name_for(operation_id: str | None, method: str, path: str) -> str:
    raw = operation_id or f"{method}_{path}"
    name = _NAME_SAFE.sub("_", raw).strip("_") or method
    return name[:64]


def to_json_schema(schema: Any, *, nullable_keyword: bool) -> Any:
    """OpenAPI 3.0 schema dialect → JSON Schema (`nullable` becomes a null type)."""
    if isinstance(schema, list):
        return [to_json_schema(s, nullable_keyword=nullable_keyword) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: to_json_schema(v, nullable_keyword=nullable_keyword) for k, v in schema.items()}
    if nullable_keyword:  # 3.0's boolean exclusiveMinimum/Maximum: a flag on the bound
        for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            flag = out.get(exclusive)
            if isinstance(flag, bool):
                del out[exclusive]
                if flag and bound in out:
                    out[exclusive] = out.pop(bound)
    if nullable_keyword and out.pop("nullable", False) is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


@dataclass(kw_only=True, slots=True)
class ParamSpec:
    name: str
    location: str
    argument: str
    required: bool
    schema: dict[str, Any]


@dataclass(kw_only=True, slots=True)
class OperationSpec:
    """What the tool needs to know about one operation."""

    operation_id: str | None
    method: str
    path: str
    summary: str
    params: list[ParamSpec] = field(default_factory=list)
    body_type: str | None = None
    body_schema: dict[str, Any] | None = None
    body_required: bool = False
    responses: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class HttpSettings:
    """What every tool of one toolset shares."""

    base_url: str
    outbound: OutboundPolicy = field(default_factory=OutboundPolicy)
    """Which addresses calls may reach (the guard every request and redirect passes)."""
    auth: Sequence[Auth] = ()
    timeout: float = 30.0
    max_response_bytes: int = 1_000_000
    validate_responses: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    nullable_keyword: bool = True


_MAX_PROBLEMS = 10
"""At most this many argument problems are named in one result; the rest are counted."""


class OpenApiTool:
    """Calls one operation of an HTTP API described by OpenAPI. Arguments are checked
    against the operation's parameters and request body before any request: an invalid
    call is answered with what is wrong, as a `@tool` function's is, and sends nothing."""

    kind = "openapi"
    requires_approval = False

    def __init__(self, spec: OperationSpec, settings: HttpSettings) -> None:
        self.spec = spec
        self.settings = settings
        self.name = tool_name_for(spec.operation_id, spec.method, spec.path)
        self.description = (spec.summary or f"{spec.method.upper()} {spec.path}")[:1024]
        self.parameters = self._schema()
        self._arguments_validator: Any = None

    def argument_problems(self, arguments: Mapping[str, Any]) -> str | None:
        """What is wrong with a call's arguments (a missing required parameter or body,
        a value of the wrong type or out of its schema, an argument the operation does
        not take), or None when they are valid."""
        validator = self._arguments_validator
        if validator is None:
            from raf.core.schema_refs import schema_validator

            # the arguments object as advertised, closed: an unknown argument is a mistake
            validator = schema_validator(
                {**self.parameters, "additionalProperties": False},
                where=f"{self.name} arguments",
                feature="OpenAPI tools",
                extra="openapi",
            )
            self._arguments_validator = validator
        errors = sorted(validator.iter_errors(dict(arguments)), key=_error_order)
        if not errors:
            return None
        shown = [_describe(error) for error in errors[:_MAX_PROBLEMS]]
        if len(errors) > _MAX_PROBLEMS:
            shown.append(f"and {len(errors) - _MAX_PROBLEMS} more")
        return f"invalid arguments for tool {self.name!r}: " + "; ".join(shown)

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return False

    def _schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        required: list[str] = []
        for p in self.spec.params:
            schema = dict(p.schema) or {"type": "string"}
            schema.setdefault("description", f"{p.location} parameter {p.name}")
            props[p.argument] = schema
            if p.required:
                required.append(p.argument)
        if self.spec.body_type is not None:
            body = dict(self.spec.body_schema or {})
            body.setdefault("description", f"request body ({self.spec.body_type})")
            props["body"] = body
            if self.spec.body_required:
                required.append("body")
        out: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        return out

    def _request_parts(
        self, arguments: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any], dict[str, str], dict[str, str]]:
        path = self.spec.path
        query: dict[str, Any] = {}
        headers: dict[str, str] = {"Accept": "application/json", **self.settings.headers}
        cookies: dict[str, str] = {}
        for p in self.spec.params:
            if p.argument not in arguments:
                if p.required:
                    raise ToolExecutionError(f"missing required {p.location} parameter {p.name!r}")
                continue
            value = arguments[p.argument]
            if p.location == "path":
                path = path.replace("{" + p.name + "}", quote(_scalar(value), safe=""))
            elif p.location == "query":
                query[p.name] = (
                    [_scalar(v) for v in value] if isinstance(value, list) else _scalar(value)
                )
            elif p.location == "header":
                headers[p.name] = _scalar(value)
            else:
                cookies[p.name] = _scalar(value)
        for auth in self.settings.auth:
            auth.apply(headers, query, cookies)
        return path, query, headers, cookies

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover
            raise MissingExtraError("OpenAPI tools", "openapi", "httpx") from exc
        problems = self.argument_problems(arguments)
        if problems is not None:  # checked before any request: nothing is sent
            return ToolResult.fail(problems)
        path, query, headers, cookies = self._request_parts(arguments)
        if context.idempotency_key and self.spec.method.upper() not in _SAFE_METHODS:
            # the same on a retried call: a server that honours the header acts once
            headers.setdefault("Idempotency-Key", context.idempotency_key)
        url = self.settings.base_url.rstrip("/") + path
        kwargs: dict[str, Any] = {}
        if self.spec.body_type is not None and "body" in arguments:
            body = arguments["body"]
            if "json" in self.spec.body_type:
                kwargs["json"] = body
            elif self.spec.body_type in (
                "application/x-www-form-urlencoded",
                "multipart/form-data",
            ):
                kwargs["data"] = body
            else:
                kwargs["content"] = body if isinstance(body, str) else json.dumps(body)
                headers["Content-Type"] = self.spec.body_type
        cap = self.settings.max_response_bytes
        try:
            async with (
                guarded_async_client(
                    self.settings.outbound, timeout=self.settings.timeout, cookies=cookies
                ) as client,
                client.stream(
                    self.spec.method.upper(), url, params=query, headers=headers, **kwargs
                ) as response,
            ):
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > cap:
                        return ToolResult.fail(
                            f"{self.name}: the response is larger than the {cap}-byte cap"
                        )
                    chunks.append(chunk)
        except httpx.TimeoutException:
            return ToolResult.fail(f"{self.name}: no answer within {self.settings.timeout:g}s")
        except httpx.HTTPError as exc:
            return ToolResult.fail(f"{self.name}: request failed: {exc}")
        raw = b"".join(chunks)
        content_type = response.headers.get("content-type", "")
        text = raw.decode(response.encoding or "utf-8", errors="replace")
        value: Any = text
        if "json" in content_type and text.strip():
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = text
        status = response.status_code
        if status >= 400:
            return ToolResult.fail(f"HTTP {status} from {self.spec.method.upper()} {path}: {text}")
        if self.settings.validate_responses and "json" in content_type:
            problem = self._validate(status, value)
            if problem:
                return ToolResult.fail(
                    f"{self.name}: response does not match its schema: {problem}"
                )
        return ToolResult.ok({"status": status, "body": value} if status != 200 else value)

    def _validate(self, status: int, value: Any) -> str | None:
        responses = self.spec.responses
        entry = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX")
        entry = entry or responses.get("default")
        if not isinstance(entry, Mapping):
            return None
        content = entry.get("content") or {}
        media = next((v for k, v in content.items() if "json" in k), None)
        schema = media.get("schema") if isinstance(media, Mapping) else None
        if not isinstance(schema, Mapping):
            return None
        from raf.core.schema_refs import schema_validator

        converted = to_json_schema(schema, nullable_keyword=self.settings.nullable_keyword)
        validator = schema_validator(
            converted,
            where=f"{self.name} response schema",
            feature="OpenAPI response validation",
            extra="openapi",
        )
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        return f"at {where}: {first.message}"

    def __repr__(self) -> str:
        return f"<OpenApiTool {self.name!r} {self.spec.method.upper()} {self.spec.path}>"


def _error_order(error: Any) -> list[str]:
    return [str(part) for part in error.absolute_path]


def _describe(error: Any) -> str:
    """One problem, where it is and what is wrong, short (a long value is cut)."""
    where = ".".join(str(part) for part in error.absolute_path) or "(arguments)"
    message = str(error.message)
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{where}: {message}"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)
