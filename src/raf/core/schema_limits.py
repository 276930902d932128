"""Bounds on a JSON Schema that comes from outside raf (a request's `response_format`, a
document's `outputSchema`), checked in one walk before any other work on it: checking a
schema against its metaschema costs about a tenth of a millisecond per subschema (every
one resolves the metaschema's dynamic references again), so the 80,000 empty subschemas a
240 KiB body can hold would keep a process busy for half a minute, and each `pattern` is
compiled. Past a bound the schema is refused with the bound's name and where it was
crossed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from raf.core.bounded_regex import expanded_size, schema_pattern
from raf.core.errors import ConfigurationError


@dataclass(frozen=True, kw_only=True, slots=True)
class SchemaLimits:
    """How big a JSON Schema from outside may be; the defaults leave room for any schema
    a model is asked to answer by (OpenAI's own limit is 5,000 properties)."""

    max_subschemas: int = 5_000
    """Subschemas in all (every object or boolean where a schema may stand)."""
    max_depth: int = 64
    """Nesting of objects and arrays, as a request body's JSON counts it."""
    max_values: int = 100_000
    """JSON values in all, data (`enum`, `examples`, `default`) included."""
    max_pattern_nodes: int = 20_000
    """Nodes all `pattern`s and `patternProperties` names expand to together, once their
    counted repeats are unrolled (each is also held to 1,000 characters and 10,000
    nodes): compiling a pattern costs about a millisecond per thousand nodes."""


SCHEMA_LIMITS = SchemaLimits()
"""The limits of output schemas: a request's format, a document's, a program's."""

_DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas."""
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose values map names to schemas."""
_PATTERNS = "patternProperties"
"""The keyword whose names are patterns."""


class SchemaLimitError(ConfigurationError):
    """A JSON Schema is larger, deeper or costlier to compile than its limits allow."""


def check_schema_limits(schema: Any, *, where: str, limits: SchemaLimits = SCHEMA_LIMITS) -> None:
    """Refuse `schema` (a `SchemaLimitError` naming the limit, at `where` and the JSON
    pointer where it was crossed) when it is past `limits`; one walk, no recursion."""
    subschemas = values = pattern_nodes = 0
    # (value, depth, pointer, kind): kind "schema" where a schema may stand, "named" for
    # a map of names to schemas ("names" when the names are patterns), "data" for data
    stack: list[tuple[Any, int, str, str]] = [(schema, 0, "#", "schema")]
    while stack:
        value, depth, pointer, kind = stack.pop()
        values += 1
        if values > limits.max_values:
            raise _refused(f"holds more than {limits.max_values:,} JSON values", pointer, where)
        if kind == "schema" and isinstance(value, Mapping | bool):
            subschemas += 1
            if subschemas > limits.max_subschemas:
                raise _refused(
                    f"has more than {limits.max_subschemas:,} subschemas", pointer, where
                )
        if not isinstance(value, Mapping | list):
            continue
        if depth >= limits.max_depth:
            raise _refused(f"nests deeper than {limits.max_depth} levels", pointer, where)
        if isinstance(value, list):
            inner = "data" if kind == "data" else "schema"
            stack.extend((v, depth + 1, f"{pointer}/{i}", inner) for i, v in enumerate(value))
            continue
        for key, item in value.items():
            at = f"{pointer}/{_escaped(str(key))}"
            if kind == "data" or (kind == "schema" and key in _DATA):
                stack.append((item, depth + 1, at, "data"))
                continue
            if kind == "schema" and key in _NAMED:
                stack.append((item, depth + 1, at, "names" if key == _PATTERNS else "named"))
                continue
            if kind == "names":
                pattern_nodes += _pattern_nodes(str(key), at, where)
            elif kind == "schema" and key == "pattern" and isinstance(item, str):
                pattern_nodes += _pattern_nodes(item, at, where)
            stack.append((item, depth + 1, at, "schema"))
            if pattern_nodes > limits.max_pattern_nodes:
                raise _refused(
                    f"has patterns that expand to more than {limits.max_pattern_nodes:,} "
                    "nodes together",
                    at,
                    where,
                )


def _pattern_nodes(pattern: str, pointer: str, where: str) -> int:
    """The nodes `pattern` expands to, once compiled (and kept for the validator);
    refused past one pattern's limits or when the engine cannot compile it."""
    try:
        schema_pattern(pattern)
    except ValueError as exc:
        raise SchemaLimitError(f"{exc} (at {_shown(pointer)})", key_path=where) from None
    return expanded_size(pattern)


def _escaped(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _shown(pointer: str) -> str:
    return pointer if len(pointer) <= 200 else pointer[:200] + "…"


def _refused(what: str, pointer: str, where: str) -> SchemaLimitError:
    return SchemaLimitError(
        f"the schema {what} (at {_shown(pointer)}); make it smaller: the limits keep one "
        "schema from holding the server",
        key_path=where,
    )
