"""A JSON Schema from outside is held to its limits before anything else reads it, and
its patterns run on the bounded engine under one time limit per value checked."""

from __future__ import annotations

import time
from typing import Any

import pytest

from raf.agent.output_type import OutputMismatch, resolve_output_type
from raf.core.bounded_regex import MatchTimedOut, compile_pattern, match_budget, search_within
from raf.core.errors import ConfigurationError
from raf.core.schema_limits import SchemaLimitError, SchemaLimits, check_schema_limits
from raf.core.schema_refs import schema_validator

SMALL = SchemaLimits(max_subschemas=10, max_depth=6, max_values=40, max_pattern_nodes=30)


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    ("schema", "says", "at"),
    [
        ({"allOf": [{}] * 10}, "more than 10 subschemas", "#/allOf/"),
        ({"anyOf": [True] * 10}, "more than 10 subschemas", "#/anyOf/"),
        (nested(3), "nests deeper than 6 levels", "#/properties/a/properties/a/properties"),
        ({"enum": list(range(40))}, "more than 40 JSON values", "#/enum/"),
        ({"properties": {"x": {"pattern": "a{31}"}}}, "more than 30 nodes", "#/properties/x"),
        (
            {"patternProperties": {"a{20}": {}, "b{20}": {}}},
            "more than 30 nodes",
            "#/patternProperties/",
        ),
    ],
)
def test_each_limit_is_named_with_where_it_was_crossed(
    schema: dict[str, Any], says: str, at: str
) -> None:
    with pytest.raises(SchemaLimitError) as info:
        check_schema_limits(schema, where="response_format", limits=SMALL)
    assert says in info.value.message and at in info.value.message
    assert info.value.key_path == "response_format"


def test_a_schema_within_the_limits_passes_and_names_like_keywords_are_names() -> None:
    # a property called `enum` or `pattern` is a name, not data or a pattern
    schema = {
        "type": "object",
        "properties": {"enum": {"type": "string"}, "pattern": {"type": "string"}},
        "enum": [1, 2],
    }
    check_schema_limits(schema, where="x", limits=SMALL)
    check_schema_limits(nested(2), where="x", limits=SMALL)


@pytest.mark.parametrize(
    ("pattern", "says"),
    [("a" * 1001, "the limit is 1000"), ("(a{200}){100}", "limit is 10,000"), ("(", "not a valid")],
)
def test_a_pattern_past_its_limits_or_invalid_is_refused_where_it_is(
    pattern: str, says: str
) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}
    with pytest.raises(ConfigurationError) as info:
        resolve_output_type(schema, where="text.format.schema")
    assert says in info.value.message and "#/properties/x/pattern" in info.value.message


def test_the_default_limits_refuse_a_body_of_empty_subschemas_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(SchemaLimitError, match="more than 5,000 subschemas"):
        resolve_output_type({"type": "object", "allOf": [{}] * 80_000}, where="x")
    assert time.monotonic() - started < 5  # the metaschema check took half a minute


SLOW = "^(a|aa)+$"
"""Fails on `a…ab` only after trying every way of splitting the a's."""


def test_a_backtracking_pattern_is_stopped_within_the_time_limit() -> None:
    validator = schema_validator(
        {"type": "object", "properties": {"x": {"type": "string", "pattern": SLOW}}}, where="x"
    )
    started = time.monotonic()
    (error,) = validator.iter_errors({"x": "a" * 40 + "b"})
    assert time.monotonic() - started < 10  # with `re`: days
    assert "took longer than 1 s and was stopped" in error.message


def test_the_matches_of_one_value_share_one_time_limit() -> None:
    compiled = compile_pattern(SLOW)
    started = time.monotonic()
    with match_budget(0.3):
        for _ in range(5):
            with pytest.raises(MatchTimedOut):
                search_within(compiled, "a" * 40 + "b")
    assert time.monotonic() - started < 5  # not five times the limit each


def test_pattern_keywords_keep_their_meaning_on_the_bounded_engine() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "pattern": "^[a-z]{2}-\\d+$"}},
        "patternProperties": {"^n_": {"type": "integer"}},
        "additionalProperties": False,
        "propertyNames": {"pattern": "^(id|n_.*)$"},
    }
    validator = schema_validator(schema, where="x")
    assert validator.is_valid({"id": "ab-12", "n_a": 1})
    messages = [e.message for e in validator.iter_errors({"id": "AB-1", "n_a": "x", "z": 1})]
    assert any("does not match '^[a-z]{2}-\\\\d+$'" in m for m in messages)
    assert any("is not of type 'integer'" in m for m in messages)
    assert any("'z' does not match any of the regexes: '^n_'" in m for m in messages)
    assert any("does not match '^(id|n_.*)$'" in m for m in messages)


def test_unevaluated_properties_beside_pattern_properties_is_refused() -> None:
    schema = {"patternProperties": {"^a": {}}, "unevaluatedProperties": False}
    with pytest.raises(ConfigurationError, match="unevaluatedProperties and patternProperties"):
        schema_validator(schema, where="x")


def test_a_deeply_nested_answer_is_a_mismatch_not_a_crash() -> None:
    output = resolve_output_type({"type": "object"}, where="x")
    with pytest.raises(OutputMismatch, match="nested deeper than 64 levels"):
        output.parse("[" * 100_000 + "]" * 100_000)
    recursive = resolve_output_type(
        {"type": "object", "properties": {"a": {"$ref": "#"}}}, where="x"
    )
    assert recursive.parse('{"a": {"a": {}}}') == {"a": {"a": {}}}
