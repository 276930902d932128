"""Property schemas (`outputSchema`, a function tool's `parameters`) in either dialect's
shape, turned into JSON Schema: a `properties` list of `{name, kind, required, description}`,
a `properties` mapping of name to `{kind, required, description}`, or JSON Schema itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from raf.decl.documents.base import DeclModel

PropertyKind = Literal["string", "number", "integer", "boolean", "array", "object"]

_JSON_TYPES = {
    "string": "string",
    "str": "string",
    "text": "string",
    "number": "number",
    "float": "number",
    "double": "number",
    "integer": "integer",
    "int": "integer",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "record": "object",
    "map": "object",
}
"""Kind names either dialect uses, to JSON Schema types."""


class PropertyDecl(DeclModel):
    """One property: its kind, whether it is required, what it means."""

    name: str | None = Field(default=None, description="in a `properties` list: its name")
    kind: str = Field(default="string", description="string | number | integer | boolean | …")
    description: str | None = None
    required: bool = False
    default: Any = None
    enum: list[Any] | None = None
    example: Any = Field(default=None, description="one value it may take, for readers")
    items: PropertyDecl | None = Field(default=None, description="for kind array")
    properties: list[PropertyDecl] | dict[str, PropertyDecl] | None = Field(
        default=None, description="for kind object"
    )

    @model_validator(mode="before")
    @classmethod
    def _type_is_kind(cls, data: Any) -> Any:
        """`type:` (as MAF's mapping form and JSON Schema write it) is `kind:`;
        `enumValues:` (the original framework's) is `enum:`."""
        for theirs, ours in (("type", "kind"), ("enumValues", "enum")):
            if isinstance(data, dict) and theirs in data and ours not in data:
                data = {(ours if k == theirs else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _known_kind(self) -> PropertyDecl:
        if self.kind.lower() not in _JSON_TYPES:
            raise ValueError(
                f"unknown property kind {self.kind!r} (expected one of: "
                "string, number, integer, boolean, array, object)"
            )
        return self

    def json_schema(self) -> dict[str, Any]:
        """This property as JSON Schema."""
        out: dict[str, Any] = {"type": _JSON_TYPES[self.kind.lower()]}
        if self.description:
            out["description"] = self.description
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.default is not None:
            out["default"] = self.default
        if self.example is not None:
            out["examples"] = [self.example]
        if self.items is not None:
            out["items"] = self.items.json_schema()
        if self.properties is not None:
            out.update(_object_schema(self.properties))
        return out


class PropertySchemaDecl(DeclModel):
    """A set of named properties, as both dialects write `outputSchema` and `parameters`."""

    properties: list[PropertyDecl] | dict[str, PropertyDecl] = Field(default_factory=list)
    strict: bool | None = None
    examples: list[Any] | None = None

    @model_validator(mode="after")
    def _named(self) -> PropertySchemaDecl:
        if isinstance(self.properties, list):
            for index, item in enumerate(self.properties):
                if not item.name:
                    raise ValueError(f"properties[{index}] needs 'name'")
        return self

    def json_schema(self) -> dict[str, Any]:
        """The properties as a JSON Schema object."""
        return {"type": "object", **_object_schema(self.properties)}


def _object_schema(properties: list[PropertyDecl] | dict[str, PropertyDecl]) -> dict[str, Any]:
    named = (
        list(properties.items())
        if isinstance(properties, dict)
        else [(p.name or "", p) for p in properties]
    )
    out: dict[str, Any] = {"properties": {name: p.json_schema() for name, p in named}}
    required = [name for name, p in named if p.required]
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def as_json_schema(value: dict[str, Any]) -> dict[str, Any]:
    """A property schema or a JSON Schema, as JSON Schema (JSON Schema is kept as it is)."""
    if is_json_schema(value):
        return dict(value)
    return PropertySchemaDecl.model_validate(value).json_schema()


def is_json_schema(value: dict[str, Any]) -> bool:
    """JSON Schema rather than a property schema: a `type` or `$schema` at the top, or
    properties with `type` and no `required: true|false` flag on any of them (the
    property-schema mapping form marks each property required or not)."""
    if "type" in value or "$schema" in value or "$ref" in value:
        return True
    properties = value.get("properties")
    if isinstance(properties, dict):
        entries = [p for p in properties.values() if isinstance(p, dict)]
        flagged = any(isinstance(p.get("required"), bool) for p in entries)
        return not flagged and any("type" in p for p in entries)
    return False


PropertyDecl.model_rebuild()
