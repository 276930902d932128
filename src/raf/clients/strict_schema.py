"""JSON Schema for OpenAI's strict structured outputs: every object closed
(`additionalProperties: false`) with every property required, optional ones nullable.

What strict mode cannot express (a mapping with free keys, a value of any type, a
tuple) is refused with the field named, before any request is sent.
"""

from __future__ import annotations

from typing import Any

from raf.core.errors import ConfigurationError
from raf.core.output import OutputSchema

_DROPPED = ("default", "discriminator", "examples")
"""Keywords strict mode does not take; dropping them changes no answer's validity."""
_TYPED = ("type", "anyOf", "$ref", "enum", "const", "allOf", "oneOf")


def strict_json_schema(output: OutputSchema) -> dict[str, Any]:
    """`output`'s schema in the form strict mode accepts; `ConfigurationError` naming the
    field when it has no such form."""
    schema = output.json_schema
    out = _node(schema, output.name)
    for key in ("$defs", "definitions"):
        if key in schema:
            out[key] = {name: _node(d, name) for name, d in schema[key].items()}
    return out


def _refuse(path: str, what: str) -> ConfigurationError:
    return ConfigurationError(
        f"field {path!r} {what}, which OpenAI's strict structured output cannot express; "
        "give it declared properties or a fixed type"
    )


def _node(schema: Any, path: str) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise _refuse(path, "has a schema that is not an object")
    if not any(key in schema for key in (*_TYPED, "properties", "items")):
        raise _refuse(path, "accepts a value of any type")
    if "prefixItems" in schema:
        raise _refuse(path, "is a tuple (positional item types)")
    if "patternProperties" in schema:
        raise _refuse(path, "has keys matched by pattern")
    if "$ref" in schema:
        return {"$ref": schema["$ref"]}  # strict mode allows nothing beside a reference
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or key in ("$defs", "definitions"):
            continue
        if key in ("anyOf", "oneOf"):
            out["anyOf"] = [_node(branch, path) for branch in value]
        elif key == "allOf":
            if len(value) != 1:
                raise _refuse(path, "combines several schemas (allOf)")
            out.update(_node(value[0], path))
        elif key == "items":
            out["items"] = _node(value, f"{path}[]")
        elif key in ("properties", "additionalProperties", "required"):
            continue
        else:
            out[key] = value
    if schema.get("type") == "object" or "properties" in schema:
        out.update(_object(schema, path))
    return out


def _object(schema: dict[str, Any], path: str) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    # extra keys merely allowed beside declared ones are closed off; typed free keys, or
    # an object that is nothing but free keys, have no strict form
    if (isinstance(extra, dict) and extra) or (not properties and extra is not False):
        raise _refuse(path, "is a mapping with free keys (additionalProperties)")
    required = set(schema.get("required") or ())
    out_properties: dict[str, Any] = {}
    for name, value in properties.items():
        child = _node(value, f"{path}.{name}")
        out_properties[name] = child if name in required else _nullable(child)
    return {
        "properties": out_properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` that also takes null (an optional field must be sent, as null)."""
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema and "const" not in schema:
        return schema if kind == "null" else {**schema, "type": [kind, "null"]}
    if isinstance(kind, list) and "enum" not in schema:
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        if any(b.get("type") == "null" for b in branches):
            return schema
        return {**schema, "anyOf": [*branches, {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}
