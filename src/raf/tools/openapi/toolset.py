"""An OpenAPI 3.0/3.1 document as raf tools, one per (selected) operation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

from raf.core import outbound
from raf.core.errors import ConfigurationError
from raf.core.tools import ApprovalRequiredTool, Tool
from raf.tools.openapi.auth import Auth, StaticBearerAuth
from raf.tools.openapi.loader import load_spec
from raf.tools.openapi.operation import (
    _RESERVED_HEADERS,
    HttpSettings,
    OpenApiTool,
    OperationSpec,
    ParamSpec,
    to_json_schema,
    tool_name_for,
)

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _server_url(doc: Mapping[str, Any], location: str) -> str | None:
    servers = doc.get("servers") or [{"url": "/"}]  # the default server of OpenAPI 3
    if not isinstance(servers[0], Mapping):
        return None
    url = str(servers[0].get("url", "/"))
    for name, var in (servers[0].get("variables") or {}).items():
        url = url.replace("{" + name + "}", str(var.get("default", "")))
    if urlparse(url).scheme:
        return url
    if urlparse(location).scheme in ("http", "https"):
        return urljoin(location, url)
    return None


class OpenApiToolset:
    """Load an OpenAPI document with `await load()`, then use `.tools`."""

    def __init__(
        self,
        spec: str | Path | Mapping[str, Any],
        *,
        base_url: str | None = None,
        operations: Sequence[str] | None = None,
        auth: Auth | Sequence[Auth] | None = None,
        timeout: float = 30.0,
        max_response_bytes: int = 1_000_000,
        validate_responses: bool = False,
        headers: Mapping[str, str] | None = None,
        name: str = "openapi",
        bearer_token: str | None = None,
        approval_required: bool = False,
        allow_hosts: Sequence[str] = (),
    ) -> None:
        if not isinstance(spec, str | Path | Mapping):
            raise ConfigurationError(
                f"OpenAPI toolset {name!r}: the document is a path, URL or mapping, "
                f"got {type(spec).__name__}"
            )
        self.name = name
        self.approval_required = approval_required
        self.allow_hosts = tuple(allow_hosts)
        """Hosts reached at loopback or private addresses wherever their URL came from."""
        self.spec = spec
        self.base_url = base_url
        self.operations = list(operations) if operations is not None else None
        if auth is None:
            self.auth: list[Auth] = []
        elif isinstance(auth, Sequence):
            self.auth = list(auth)
        else:
            self.auth = [auth]
        if bearer_token:
            self.auth.append(StaticBearerAuth(token=bearer_token))
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.validate_responses = validate_responses
        self.headers = dict(headers or {})
        self.document: dict[str, Any] | None = None
        self._tools: list[Tool] | None = None

    @property
    def tools(self) -> list[Tool]:
        if self._tools is None:
            raise ConfigurationError("OpenAPI toolset is not loaded: await toolset.load() first")
        return list(self._tools)

    async def load(self) -> list[Tool]:
        """Read and resolve the document and build one tool per selected operation."""
        if self._tools is not None:
            return list(self._tools)
        rule = outbound.policy(who=f"OpenAPI toolset {self.name!r}", allow_hosts=self.allow_hosts)
        doc, location = await load_spec(self.spec, fetch_timeout=self.timeout, rule=rule)
        self.document = doc
        base = self.base_url or _server_url(doc, location)
        if not base:
            raise ConfigurationError(
                "the OpenAPI document names no absolute server URL: pass base_url=",
                file=location,
            )
        # trusted (loopback included): what the user wrote — the spec URL, base_url, and a
        # server URL from a document of their own; a fetched document's server URL elsewhere
        # reaches only public addresses
        spec_url = self.spec if isinstance(self.spec, str) and "://" in self.spec else None
        own_document = spec_url is None
        settings = HttpSettings(
            outbound=rule.trusting(spec_url, self.base_url, base if own_document else None),
            base_url=base,
            auth=self.auth,
            timeout=self.timeout,
            max_response_bytes=self.max_response_bytes,
            validate_responses=self.validate_responses,
            headers=self.headers,
            nullable_keyword=str(doc.get("openapi", "")).startswith("3.0"),
        )
        specs = list(_operations(doc, settings.nullable_keyword))
        if self.operations is not None:
            by_key: dict[str, OperationSpec] = {}
            for op in specs:
                by_key[f"{op.method.upper()} {op.path}"] = op
                if op.operation_id:
                    by_key[op.operation_id] = op
            unknown = [k for k in self.operations if k not in by_key]
            if unknown:
                known = sorted(k for k in by_key if " " not in k)
                raise ConfigurationError(
                    f"unknown operation(s) {', '.join(map(repr, unknown))}; "
                    f"the document has: {', '.join(known)}",
                    file=location,
                )
            specs = [by_key[k] for k in self.operations]
        tools: list[Tool] = []
        seen: set[str] = set()
        for op in specs:
            tool = OpenApiTool(op, settings)
            if tool.name in seen:
                raise ConfigurationError(
                    f"two operations map to the tool name {tool.name!r}", file=location
                )
            seen.add(tool.name)
            tools.append(ApprovalRequiredTool(tool) if self.approval_required else tool)
        self._tools = tools
        return list(tools)


def _operations(doc: Mapping[str, Any], nullable_keyword: bool) -> list[OperationSpec]:
    out: list[OperationSpec] = []
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in _METHODS:
            op = item.get(method)
            if not isinstance(op, Mapping):
                continue
            merged: dict[tuple[str, str], Mapping[str, Any]] = {}
            for param in [*shared, *(op.get("parameters") or [])]:
                if isinstance(param, Mapping) and "name" in param:
                    merged[(str(param["name"]), str(param.get("in", "query")))] = param
            params: list[ParamSpec] = []
            used: set[str] = {"body"}
            for (name, where), param in merged.items():
                if where == "header" and name.lower() in _RESERVED_HEADERS:
                    continue
                argument = tool_name_for(name, "", "")
                if argument in used:
                    argument = f"{where}_{argument}"
                used.add(argument)
                schema = to_json_schema(
                    dict(param.get("schema") or {"type": "string"}),
                    nullable_keyword=nullable_keyword,
                )
                if param.get("description"):
                    schema = {**schema, "description": str(param["description"])}
                params.append(
                    ParamSpec(
                        name=name,
                        location=where,
                        argument=argument,
                        required=bool(param.get("required")) or where == "path",
                        schema=schema,
                    )
                )
            body_type = body_schema = None
            body_required = False
            request = op.get("requestBody")
            if isinstance(request, Mapping):
                content = request.get("content") or {}
                for candidate in content:
                    if "json" in candidate:
                        body_type = candidate
                        break
                else:
                    body_type = next(iter(content), None)
                if body_type is not None:
                    media = content.get(body_type) or {}
                    body_schema = to_json_schema(
                        dict(media.get("schema") or {}), nullable_keyword=nullable_keyword
                    )
                body_required = bool(request.get("required"))
            summary = " — ".join(
                s for s in (op.get("summary"), op.get("description")) if isinstance(s, str) and s
            )
            out.append(
                OperationSpec(
                    operation_id=op.get("operationId"),
                    method=method,
                    path=str(path),
                    summary=summary,
                    params=params,
                    body_type=body_type,
                    body_schema=body_schema,
                    body_required=body_required,
                    responses=dict(op.get("responses") or {}),
                )
            )
    return out


async def openapi_tools(spec: str | Path | Mapping[str, Any], **options: Any) -> list[Tool]:
    """Load a document and return its tools in one call (options as `OpenApiToolset`)."""
    return await OpenApiToolset(spec, **options).load()
