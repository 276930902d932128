"""JSON Schema validators that fetch nothing: a `$ref` resolves inside the schema itself
(or to the JSON Schema metaschemas, which are built in), never over the network, unless
the user allowed its host (`RAF_SCHEMA_REF_HOSTS`, or `allow_hosts=`); then it is fetched
through raf's outbound guard. A schema can come from a file a sandboxed command wrote, so
a remote ref would otherwise be a way to make raf's own process send a request (with a
secret in its URL) that the sandbox forbids."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

from raf.core.errors import ConfigurationError, MissingExtraError

HOSTS_ENV = "RAF_SCHEMA_REF_HOSTS"
"""Comma-separated host names whose schema refs may be fetched (none by default)."""

FETCH_TIMEOUT = 10.0
MAX_FETCHED_BYTES = 4 * 1024 * 1024

_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a `$ref` in them is not a reference."""


def allowed_hosts(given: Iterable[str] | None = None) -> frozenset[str]:
    """The hosts schema refs may be fetched from: `given`, else `RAF_SCHEMA_REF_HOSTS`."""
    if given is None:
        given = os.environ.get(HOSTS_ENV, "").split(",")
    return frozenset(h.strip().lower() for h in given if h.strip())


def _refs(node: Any, base: str) -> Iterator[tuple[str, str, str]]:
    """(`$ref` value, its absolute form without fragment, the `$id`-base it was read in)."""
    if isinstance(node, list):
        for item in node:
            yield from _refs(item, base)
        return
    if not isinstance(node, Mapping):
        return
    own = node.get("$id")
    if isinstance(own, str):
        base = urldefrag(urljoin(base, own)).url
    for key in ("$ref", "$dynamicRef"):
        ref = node.get(key)
        if isinstance(ref, str):
            yield ref, urldefrag(urljoin(base, ref)).url, base
    for key, value in node.items():
        if key not in _DATA_KEYS:
            yield from _refs(value, base)


def _ids(node: Any, base: str, into: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _ids(item, base, into)
        return
    if not isinstance(node, Mapping):
        return
    own = node.get("$id")
    if isinstance(own, str):
        base = urldefrag(urljoin(base, own)).url
        into.add(base)
    for key, value in node.items():
        if key not in _DATA_KEYS:
            _ids(value, base, into)


def outside_refs(schema: Any, hosts: frozenset[str] = frozenset()) -> list[str]:
    """The refs of `schema` that point outside it (and outside the built-in metaschemas),
    except those to `hosts`."""
    from referencing.jsonschema import specification_with

    ids: set[str] = {""}
    _ids(schema, "", ids)
    outside: list[str] = []
    for ref, target, _ in _refs(schema, ""):
        if target in ids or _builtin(target, specification_with):
            continue
        if urlsplit(target).scheme in ("http", "https") and urlsplit(target).hostname in hosts:
            continue
        outside.append(ref)
    return list(dict.fromkeys(outside))


def _builtin(uri: str, specification_with: Any) -> bool:
    try:
        specification_with(uri.rstrip("#"))
    except Exception:  # an unknown dialect: not a metaschema
        return False
    return True


def schema_validator(
    schema: Mapping[str, Any] | bool,
    *,
    where: str,
    feature: str = "JSON Schema validation",
    extra: str = "templates",
    allow_hosts: Iterable[str] | None = None,
) -> Any:
    """A Draft 2020-12 validator for `schema` whose refs resolve only inside it; a ref
    elsewhere is a `ConfigurationError` naming the ref and `where` the schema is, unless
    its host is allowed, when it is fetched (guarded, no redirects) as it is needed."""
    try:
        import jsonschema
        import referencing
    except ImportError as exc:
        raise MissingExtraError(feature, extra, "jsonschema") from exc
    hosts = allowed_hosts(allow_hosts)
    outside = outside_refs(schema, hosts)
    if outside:
        shown = ", ".join(repr(r) for r in outside[:5])
        raise ConfigurationError(
            f"the schema refers to {shown}, outside itself; raf resolves only refs inside "
            f"a schema (allow a host in {HOSTS_ENV} to fetch its refs)",
            key_path=where,
        )

    def retrieve(uri: str) -> Any:
        return _fetch(uri, hosts, referencing)

    registry: Any = referencing.Registry(retrieve=retrieve)  # type: ignore[call-arg]
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _fetch(uri: str, hosts: frozenset[str], referencing: Any) -> Any:
    """A schema at `uri`, only from an allowed host, through the outbound guard."""
    from raf.core.outbound import OutboundRefused, guarded_client, policy

    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or (parts.hostname or "") not in hosts:
        raise OutboundRefused(
            f"schema ref {uri!r} is outside the schema; raf does not fetch it (allow its "
            f"host in {HOSTS_ENV})"
        )
    import json

    rule = policy(who="JSON Schema refs", allow_hosts=hosts)
    with guarded_client(rule, timeout=FETCH_TIMEOUT, follow_redirects=False) as client:
        response = client.get(uri)
    if response.status_code != 200 or len(response.content) > MAX_FETCHED_BYTES:
        raise OutboundRefused(f"schema ref {uri!r}: HTTP {response.status_code} or too large")
    try:
        contents = json.loads(response.content)
    except ValueError as exc:
        raise OutboundRefused(f"schema ref {uri!r} is not JSON: {exc}") from None
    from referencing.jsonschema import DRAFT202012

    return referencing.Resource.from_contents(contents, default_specification=DRAFT202012)
