"""An OpenAPI tool checks a call's arguments against the operation's parameters and
request body before any request: an invalid call gets a result that says what is wrong,
as a `@tool` function's does, and the server (on loopback, counting requests) sees
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from raf.core.tools import Tool, ToolContext
from raf.tools.openapi import openapi_tools
from tests.loopback_http import Recorder, loopback_server

PET = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "tag": {"type": "string", "nullable": True},
    },
}
DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "pets", "version": "1"},
    "paths": {
        "/pets": {
            "post": {
                "operationId": "createPet",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    },
                },
                "responses": {"201": {"description": "made"}},
            },
            "get": {
                "operationId": "listPets",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {
                            "type": "integer",
                            "minimum": 0,
                            "exclusiveMinimum": True,
                            "maximum": 100,
                        },
                    },
                    {"name": "kind", "in": "query", "schema": {"enum": ["cat", "dog"]}},
                ],
                "responses": {"200": {"description": "pets"}},
            },
        },
        "/pets/{petId}": {
            "get": {
                "operationId": "getPet",
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "responses": {"200": {"description": "a pet"}},
            }
        },
    },
    "components": {"schemas": {"Pet": PET}},
}


@pytest.fixture
def server() -> Iterator[Recorder]:
    with loopback_server() as recorder:
        yield recorder


async def tools_for(server: Recorder) -> dict[str, Tool]:
    return {t.name: t for t in await openapi_tools(DOCUMENT, base_url=server.url)}


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("createPet", {}, "(arguments): 'body' is a required property"),
        ("createPet", {"body": {"age": 3}}, "body: 'name' is a required property"),
        ("createPet", {"body": {"name": "Rex", "age": "five"}}, "body.age: 'five' is not of type"),
        (
            "createPet",
            {"body": {"name": "Rex", "age": -1}},
            "body.age: -1 is less than the minimum",
        ),
        ("createPet", {"body": {"name": ""}}, "body.name: '' should be non-empty"),
        ("createPet", {"body": "Rex"}, "body: 'Rex' is not of type 'object'"),
        ("getPet", {}, "'petId' is a required property"),
        ("getPet", {"petId": "seven"}, "petId: 'seven' is not of type 'integer'"),
        ("listPets", {"limit": 0}, "limit: 0 is less than or equal to the minimum of 0"),
        ("listPets", {"limit": 101}, "limit: 101 is greater than the maximum of 100"),
        ("listPets", {"kind": "fish"}, "kind: 'fish' is not one of ['cat', 'dog']"),
        ("listPets", {"colour": "red"}, "Additional properties are not allowed ('colour'"),
    ],
)
async def test_an_invalid_call_sends_nothing_and_says_what_is_wrong(
    server: Recorder, name: str, arguments: dict[str, Any], says: str
) -> None:
    tool = (await tools_for(server))[name]
    result = await tool.invoke(arguments, ToolContext())
    assert result.is_error and result.error is not None
    assert result.error.startswith(f"invalid arguments for tool {name!r}: "), result.error
    assert says in result.error, result.error
    assert server.paths == []


async def test_every_problem_of_a_call_is_named_at_once(server: Recorder) -> None:
    tool = (await tools_for(server))["createPet"]
    result = await tool.invoke({"body": {"age": "old", "tag": 5}}, ToolContext())
    assert result.error is not None
    for part in ("body: 'name' is a required", "body.age: 'old'", "body.tag: 5 is not of type"):
        assert part in result.error, result.error
    assert server.paths == []


async def test_a_valid_call_is_sent_once(server: Recorder) -> None:
    tools = await tools_for(server)
    made = await tools["createPet"].invoke(
        {"body": {"name": "Rex", "age": 3, "tag": None}}, ToolContext()
    )
    assert not made.is_error, made.error
    listed = await tools["listPets"].invoke({"limit": 1, "kind": "cat"}, ToolContext())
    assert not listed.is_error, listed.error
    fetched = await tools["getPet"].invoke({"petId": 7}, ToolContext())
    assert not fetched.is_error, fetched.error
    assert server.paths == ["/pets", "/pets?limit=1&kind=cat", "/pets/7"]
