"""JSON Schema refs never make raf fetch: refs resolve inside the schema, a ref elsewhere
is a clear error naming it, and a real loopback server receives no request. A host the
user allowed is fetched through the outbound guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raf.agent.output_type import resolve_output_type
from raf.agent.template import PromptTemplate
from raf.context.wiki import Wiki, WikiError
from raf.core.errors import ConfigurationError
from raf.core.schema_refs import HOSTS_ENV, outside_refs, schema_validator
from tests.loopback_http import loopback_server


def test_a_template_input_schema_with_a_remote_ref_is_refused_unfetched() -> None:
    with loopback_server() as server:
        ref = f"{server.url}/name.json?k=SECRET"
        schema = {"type": "object", "properties": {"name": {"$ref": ref}}}
        with pytest.raises(ConfigurationError, match="name.json") as caught:
            PromptTemplate(text="Hi {{name}}", input_schema=schema, source="agent.yaml")
        assert "inputSchema" in str(caught.value)
        assert server.paths == []


def test_an_output_schema_with_a_remote_ref_is_refused_unfetched() -> None:
    with loopback_server() as server:
        schema = {"$ref": f"{server.url}/answer.json"}
        with pytest.raises(ConfigurationError, match="answer.json.*outside itself"):
            resolve_output_type(schema, where="outputSchema")
        assert server.paths == []


def test_a_wiki_schema_file_with_a_remote_ref_is_refused_unfetched(tmp_path: Path) -> None:
    with loopback_server() as server:
        schemas = tmp_path / "wiki" / "_schemas"
        schemas.mkdir(parents=True)
        ref = f"{server.url}/?k=SECRET"
        note = {"type": "object", "properties": {"title": {"$ref": ref}}}
        (schemas / "note.json").write_text(json.dumps(note), "utf-8")
        with pytest.raises(WikiError, match=r"note.*SECRET"):
            Wiki(tmp_path / "wiki")
        assert server.paths == []


def test_a_relative_ref_without_a_base_is_outside_too() -> None:
    with pytest.raises(ConfigurationError, match="'other.json'"):
        schema_validator({"$ref": "other.json"}, where="x")
    with pytest.raises(ConfigurationError, match="'file:///etc/passwd'"):
        schema_validator({"$ref": "file:///etc/passwd"}, where="x")


def test_refs_inside_the_schema_and_to_the_metaschemas_resolve() -> None:
    schema = {
        "$id": "https://example.org/root.json",
        "$defs": {
            "name": {"type": "string", "minLength": 1},
            "tagged": {"$id": "tag.json", "type": "string", "pattern": "^#"},
        },
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/name"},
            "b": {"$ref": "tag.json"},
            "c": {"$ref": "https://example.org/root.json#/$defs/name"},
            "d": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
            "e": {"const": {"$ref": "http://127.0.0.1:9/only-data"}},
        },
    }
    assert outside_refs(schema) == []
    validator = schema_validator(schema, where="x")
    assert not list(validator.iter_errors({"a": "x", "b": "#t", "c": "y", "d": {}}))
    assert [e.message for e in validator.iter_errors({"a": "", "b": "t"})] != []


def test_an_allowed_host_is_fetched_through_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    with loopback_server() as server:
        server.json("/name.json", {"type": "string", "maxLength": 3})
        schema = {"type": "object", "properties": {"n": {"$ref": f"{server.url}/name.json"}}}
        monkeypatch.setenv(HOSTS_ENV, "127.0.0.1")
        validator = schema_validator(schema, where="x")
        assert not list(validator.iter_errors({"n": "abc"}))
        assert list(validator.iter_errors({"n": "abcd"}))
        assert server.paths and set(server.paths) == {"/name.json"}
        monkeypatch.setenv(HOSTS_ENV, "localhost")  # another name: still refused
        with pytest.raises(ConfigurationError, match="name.json"):
            schema_validator(schema, where="x")


@pytest.mark.parametrize("name", ["default", "const", "enum", "examples"])
def test_a_ref_under_a_property_named_like_a_data_keyword_is_found(name: str) -> None:
    """`properties` maps names to schemas: a property called `default` holds a schema,
    and a remote ref in it is refused before anything is resolved or fetched."""
    with loopback_server() as server:
        schema = {"type": "object", "properties": {name: {"$ref": f"{server.url}/x.json"}}}
        assert outside_refs(schema) == [f"{server.url}/x.json"]
        with pytest.raises(ConfigurationError, match="x.json.*outside itself"):
            schema_validator(schema, where="outputSchema")
        nested = {"$defs": {"enum": {"properties": {"const": {"$ref": f"{server.url}/y"}}}}}
        assert outside_refs(nested) == [f"{server.url}/y"]
        assert server.paths == []
    # a ref inside a data keyword's value is data: an example of an OpenAPI document
    assert outside_refs({"type": "object", "examples": [{"$ref": "https://x/y"}]}) == []


@pytest.mark.parametrize(
    ("schema", "loop"),
    [
        ({"$ref": "#"}, "# → #"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "#/$defs/a → #/$defs/b → #/$defs/a",
        ),
        ({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}, "#/$defs/a"),
        ({"anyOf": [{"type": "string"}, {"not": {"$ref": "#"}}]}, "#"),
    ],
)
def test_a_schema_that_refers_to_itself_without_reading_is_a_located_error(
    schema: dict[str, object], loop: str
) -> None:
    with pytest.raises(ConfigurationError, match="refers to itself without reading") as caught:
        schema_validator(schema, where="tools.lookup.parameters")
    assert loop in str(caught.value) and "tools.lookup.parameters" in str(caught.value)


def test_a_recursive_schema_that_reads_the_value_still_validates() -> None:
    tree = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
    }
    validator = schema_validator(tree, where="outputSchema")
    assert validator.is_valid({"children": [{"children": []}]})
    assert not validator.is_valid({"children": [1]})
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):  # deeper than the interpreter's stack under this schema
        child: dict[str, object] = {}
        node["children"] = [child]
        node = child
    with pytest.raises(ConfigurationError, match="outputSchema: the value nests too deeply"):
        validator.is_valid(deep)
