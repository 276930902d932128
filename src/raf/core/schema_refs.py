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

from raf.core.bounded_regex import match_budget
from raf.core.errors import ConfigurationError, MissingExtraError

HOSTS_ENV = "RAF_SCHEMA_REF_HOSTS"
"""Comma-separated host names whose schema refs may be fetched (none by default)."""

FETCH_TIMEOUT = 10.0
MAX_FETCHED_BYTES = 4 * 1024 * 1024

_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a `$ref` in them is not a reference."""
_NAMED_SCHEMAS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
"""Keywords whose values map names to schemas: a name there (a property called
`default`, `enum` …) is not a keyword, and the schema under it is walked like any."""
_SAME_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
"""Keywords whose subschemas apply to the very value their schema applies to: a chain of
refs through them alone reads nothing of the value, so a loop of them never ends."""
MAX_SCHEMA_DEPTH = 200
"""Deepest nesting of a schema walked (deeper is refused with its location)."""


def allowed_hosts(given: Iterable[str] | None = None) -> frozenset[str]:
    """The hosts schema refs may be fetched from: `given`, else `RAF_SCHEMA_REF_HOSTS`."""
    if given is None:
        given = os.environ.get(HOSTS_ENV, "").split(",")
    return frozenset(h.strip().lower() for h in given if h.strip())


def _schemas(
    node: Any, base: str, pointer: str = "#"
) -> Iterator[tuple[Mapping[str, Any], str, str]]:
    """Every schema object inside `node` (a schema) with its `$id`-base and JSON pointer,
    keyword by keyword: data keywords are skipped, the names under `properties` and its
    kind are names, anything else that holds objects is walked (an unknown keyword may
    hold a schema). Refused past `MAX_SCHEMA_DEPTH`."""
    stack: list[tuple[Any, str, str, bool]] = [(node, base, pointer, True)]
    while stack:
        item, item_base, where, is_schema = stack.pop()
        if where.count("/") > MAX_SCHEMA_DEPTH:
            raise ConfigurationError(
                f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels at {where[:200]}…"
            )
        if isinstance(item, list):
            for index, value in enumerate(item):
                stack.append((value, item_base, f"{where}/{index}", True))
            continue
        if not isinstance(item, Mapping):
            continue
        if not is_schema:  # a map of names to schemas
            for name, value in item.items():
                stack.append((value, item_base, f"{where}/{_escape(str(name))}", True))
            continue
        own = item.get("$id")
        if isinstance(own, str):
            item_base = urldefrag(urljoin(item_base, own)).url
        yield item, item_base, where
        for key, value in item.items():
            if key in _DATA_KEYS:
                continue
            stack.append(
                (value, item_base, f"{where}/{_escape(str(key))}", key not in _NAMED_SCHEMAS)
            )


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _refs(node: Any, base: str) -> Iterator[tuple[str, str, str]]:
    """(`$ref` value, its absolute form without fragment, the `$id`-base it was read in)."""
    for schema, schema_base, _ in _schemas(node, base):
        for key in ("$ref", "$dynamicRef"):
            ref = schema.get(key)
            if isinstance(ref, str):
                yield ref, urldefrag(urljoin(schema_base, ref)).url, schema_base


def _ids(node: Any, base: str, into: set[str]) -> None:
    for _, schema_base, _ in _schemas(node, base):
        if schema_base:
            into.add(schema_base)


def _pointed(root: Any, fragment: str) -> tuple[str, Any] | None:
    """The schema a local ref `#…` names in `root` (its JSON pointer), None if none."""
    from urllib.parse import unquote

    pointer = unquote(fragment)
    if pointer and not pointer.startswith("/"):
        return None  # an anchor name: not followed here
    node = root
    for part in pointer.split("/")[1:] if pointer else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return f"#{pointer}", node


def ref_loop(schema: Any) -> list[str] | None:
    """A chain of local refs that comes back to where it began without reading anything
    of the value (`{"$ref": "#"}`, two `$defs` naming each other, through `allOf` …),
    as the JSON pointers it passes, or None. Validating with one never ends."""
    if not isinstance(schema, Mapping):
        return None
    nodes = [(node, where) for node, _, where in _schemas(schema, "")]
    ids = {id(node): where for node, where in nodes}
    if len(ids) > 100_000:
        return None
    edges: dict[str, list[str]] = {}
    for node, where in nodes:
        targets: list[str] = []
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            found = _pointed(schema, ref[1:])
            if found is not None and id(found[1]) in ids:
                targets.append(ids[id(found[1])])
        for key in _SAME_PLACE:
            value = node.get(key)
            subs = value if isinstance(value, list) else [value]
            for sub in subs:
                if id(sub) in ids:
                    targets.append(ids[id(sub)])
        edges[where] = targets
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if state.get(start):
            continue
        path: list[str] = [start]
        iters = [iter(edges[start])]
        state[start] = 1
        while iters:
            step = next(iters[-1], None)
            if step is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            if state.get(step) == 1:
                return [*path[path.index(step) :], step]
            if not state.get(step):
                state[step] = 1
                path.append(step)
                iters.append(iter(edges.get(step, ())))
    return None


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
        import jsonschema  # noqa: F401  (the extra that brings referencing)
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

    loop = ref_loop(schema)
    if loop is not None:
        raise ConfigurationError(
            f"the schema refers to itself without reading anything of the value "
            f"({' → '.join(loop)}): validating with it would never end",
            key_path=where,
        )
    from raf.core.schema_patterns import bounded_validator_class, refuse_unbounded_patterns

    refuse_unbounded_patterns((node for node, _, _ in _schemas(schema, "")), where=where)
    registry: Any = referencing.Registry(retrieve=retrieve)  # type: ignore[call-arg]
    return _Bounded(bounded_validator_class()(schema, registry=registry), where)


class _Bounded:
    """A validator whose recursion is bounded: a value nested deeper than Python's stack
    under a recursive schema is an error naming the schema, not a `RecursionError`; and
    whose patterns share one time limit (`MATCH_SECONDS`) per value checked."""

    __slots__ = ("_inner", "_where")

    def __init__(self, inner: Any, where: str) -> None:
        self._inner = inner
        self._where = where

    def _too_deep(self) -> ConfigurationError:
        return ConfigurationError(
            "the value nests too deeply to validate against the schema", key_path=self._where
        )

    def iter_errors(self, instance: Any) -> list[Any]:
        try:
            with match_budget():
                return list(self._inner.iter_errors(instance))
        except RecursionError:
            raise self._too_deep() from None

    def validate(self, instance: Any) -> None:
        try:
            with match_budget():
                self._inner.validate(instance)
        except RecursionError:
            raise self._too_deep() from None

    def is_valid(self, instance: Any) -> bool:
        try:
            with match_budget():
                return bool(self._inner.is_valid(instance))
        except RecursionError:
            raise self._too_deep() from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


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
