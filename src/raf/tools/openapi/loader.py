"""Load an OpenAPI document (YAML or JSON, file, URL or dict) and resolve its `$ref`s.

Local refs (`#/components/...`) and relative-file refs (`common.yaml#/Pet`) are
inlined; a ref that points back into itself while being resolved (a recursive schema)
is replaced by a plain object schema that names the ref, so the result is finite.
Every document fetched by URL passes raf's outbound guard: the spec URL the user gave
is trusted (loopback included), while a URL found inside a fetched document reaches only
public addresses or that same origin, and a fetched document never names a local file.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlparse

from raf.core import outbound
from raf.core.bounded_parse import ParseLimits, load_json, load_yaml
from raf.core.errors import ConfigurationError, MissingExtraError

_FETCH_TIMEOUT = 30.0
OPENAPI_LIMITS = ParseLimits(
    max_bytes=64 * 1024 * 1024, max_depth=256, max_nodes=5_000_000, max_int_digits=100
)
"""Large public API descriptions fit; an alias bomb or endless nesting does not."""


def _parse(text: str, where: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return load_json(text, file=where, limits=OPENAPI_LIMITS)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"not valid JSON: {exc}", file=where) from exc
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("OpenAPI YAML documents", "openapi", "yaml") from exc
    try:
        return load_yaml(text, file=where, limits=OPENAPI_LIMITS)
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"not valid YAML: {exc}", file=where) from exc


def _is_url(location: str) -> bool:
    return urlparse(location).scheme in ("http", "https")


def _absolute(path: str) -> str:
    return os.path.abspath(path)


def _read_file(location: str) -> str:
    path = Path(location)
    if not path.is_file():
        raise ConfigurationError("OpenAPI document not found", file=location)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read OpenAPI document: {exc}", file=location) from exc


async def fetch_text(
    location: str,
    *,
    fetch_timeout: float = _FETCH_TIMEOUT,
    rule: outbound.OutboundPolicy | None = None,
) -> str:
    """The text of a document at a path or an http(s) URL (fetched through the outbound
    guard: by default only the origin of `location` itself is trusted)."""
    if _is_url(location):
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover
            raise MissingExtraError("OpenAPI documents by URL", "openapi", "httpx") from exc
        if rule is None:
            rule = outbound.policy(who="the OpenAPI loader", trusted=[location])
        try:
            async with outbound.guarded_async_client(
                rule, timeout=fetch_timeout, follow_redirects=True
            ) as client:
                response = await client.get(location)
        except httpx.HTTPError as exc:
            raise ConfigurationError(
                f"cannot fetch OpenAPI document: {type(exc).__name__}: {exc}", file=location
            ) from exc
        if response.status_code >= 400:
            raise ConfigurationError(
                f"cannot fetch OpenAPI document: HTTP {response.status_code}", file=location
            )
        return str(response.text)
    return await asyncio.to_thread(_read_file, location)


class RefResolver:
    """Loads documents on demand and inlines every `$ref` of a document tree."""

    def __init__(
        self,
        *,
        fetch_timeout: float = _FETCH_TIMEOUT,
        rule: outbound.OutboundPolicy | None = None,
    ) -> None:
        self.timeout = fetch_timeout
        self.rule = rule or outbound.policy(who="the OpenAPI loader")
        """Who may be fetched: the spec's own URL is added as trusted when it is loaded."""
        self.documents: dict[str, Any] = {}

    async def load(self, location: str) -> Any:
        if location not in self.documents:
            text = await fetch_text(location, fetch_timeout=self.timeout, rule=self.rule)
            self.documents[location] = _parse(text, location)
        return self.documents[location]

    @staticmethod
    def _join(base: str, ref_doc: str) -> str:
        if not ref_doc:
            return base
        if _is_url(base):
            joined = urljoin(base, ref_doc)
            if not _is_url(joined):
                raise ConfigurationError(
                    f"$ref {ref_doc!r} in a document fetched by URL names no http(s) URL; "
                    "a fetched document cannot point at local files",
                    file=base,
                )
            return joined
        if _is_url(ref_doc):
            return ref_doc
        return os.path.normpath(os.path.join(os.path.dirname(base), ref_doc))

    @staticmethod
    def _pointer(doc: Any, pointer: str, where: str) -> Any:
        node = doc
        if pointer in ("", "/"):
            return node
        for raw in pointer.lstrip("/").split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise ConfigurationError(f"$ref target #{pointer} does not exist", file=where)
        return node

    async def resolve(self, node: Any, base: str) -> Any:
        """A copy of `node` (found in document `base`) with every `$ref` inlined."""
        return await self._walk(node, base, ())

    async def _walk(self, node: Any, base: str, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [await self._walk(item, base, stack) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            doc_part, _, pointer = ref.partition("#")
            location = self._join(base, doc_part)
            key = f"{location}#{pointer}"
            if key in stack:
                return {"type": "object", "description": f"(recursive reference to {ref})"}
            doc = await self.load(location) if doc_part else self.documents[base]
            target = self._pointer(doc, pointer, location)
            resolved = await self._walk(target, location, (*stack, key))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if siblings and isinstance(resolved, dict):
                return {**resolved, **(await self._walk(siblings, base, stack))}
            return resolved
        return {key: await self._walk(value, base, stack) for key, value in node.items()}


async def load_spec(
    spec: str | Path | Mapping[str, Any],
    *,
    fetch_timeout: float = _FETCH_TIMEOUT,
    rule: outbound.OutboundPolicy | None = None,
) -> tuple[dict[str, Any], str]:
    """The fully resolved document and where it came from (path, URL or '<dict>'); a
    spec given by URL is trusted by the outbound guard, as the user wrote it."""
    if rule is None:
        rule = outbound.policy(who="the OpenAPI loader")
    if isinstance(spec, str) and _is_url(spec):
        rule = rule.trusting(spec)
    resolver = RefResolver(fetch_timeout=fetch_timeout, rule=rule)
    if isinstance(spec, Mapping):
        location = "<dict>"
        resolver.documents[location] = dict(spec)
    else:
        text = str(spec)
        if not isinstance(spec, Path) and text.lstrip().startswith(("{", "openapi:")):
            location = "<text>"
            resolver.documents[location] = _parse(text, location)
        else:
            location = text if _is_url(text) else _absolute(text)
            await resolver.load(location)
    doc = resolver.documents[location]
    if isinstance(doc, Mapping) and "swagger" in doc and "openapi" not in doc:
        raise ConfigurationError(
            f"not an OpenAPI 3 document but Swagger {doc['swagger']}: raf reads OpenAPI "
            "3.0 and 3.1 (convert it, e.g. with swagger2openapi)",
            file=location,
        )
    if not isinstance(doc, Mapping) or "openapi" not in doc:
        raise ConfigurationError("not an OpenAPI 3 document (no 'openapi' field)", file=location)
    version = str(doc["openapi"])
    if not version.startswith("3."):
        raise ConfigurationError(
            f"OpenAPI {version} is not supported: use an OpenAPI 3.0 or 3.1 document",
            file=location,
        )
    resolved = await resolver.resolve(doc, location)
    return dict(resolved), location
