"""pydantic's `Field(...)` written as a parameter's default value (`x: int = Field(3,
description=…, ge=0)`) is read as pydantic-ai and Microsoft Agent Framework read it: its
description, default, constraints and alias reach the schema, and a call that leaves the
argument out gets the default (or the factory's value), never the `FieldInfo` object."""

# ruff: noqa: B008 - `Field(...)` as a default value is the spelling under test

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from raf import tool
from raf.core.tools import ToolContext


@tool
def repeat(
    word: str = Field(description="the word to repeat"),
    times: int = Field(3, description="how many times", ge=0, le=10),
    sep: str = Field(default="-", min_length=1),
    tags: list[str] = Field(default_factory=list, description="labels to add"),
    shout: Annotated[bool, Field(description="upper case")] = False,
) -> str:
    """Repeat a word.

    Args:
        word: overridden by the Field's description
        sep: the separator
    """
    text = sep.join([word] * times) + "".join(f"#{t}" for t in tags)
    return text.upper() if shout else text


async def call(fn: Any, **arguments: Any) -> Any:
    return await fn.invoke(arguments, ToolContext())


def test_the_schema_has_the_fields_description_default_and_constraints() -> None:
    properties = repeat.parameters["properties"]
    assert properties["word"] == {"description": "the word to repeat", "type": "string"}
    assert properties["times"] == {
        "default": 3,
        "description": "how many times",
        "maximum": 10,
        "minimum": 0,
        "type": "integer",
    }
    assert properties["sep"] == {
        "default": "-",
        "description": "the separator",
        "minLength": 1,
        "type": "string",
    }
    assert properties["tags"] == {
        "description": "labels to add",
        "items": {"type": "string"},
        "type": "array",
    }
    assert properties["shout"] == {"default": False, "description": "upper case", "type": "boolean"}
    assert repeat.parameters["required"] == ["word"]
    assert repeat.parameters["additionalProperties"] is False


async def test_a_call_without_the_argument_gets_the_default() -> None:
    result = await call(repeat, word="ho")
    assert (result.error, result.value) == (None, "ho-ho-ho")
    assert (await call(repeat, word="a", times=2, sep="+", tags=["x"])).value == "a+a#x"


async def test_the_default_factory_gives_a_fresh_value_each_call() -> None:
    seen: list[list[str]] = []

    @tool
    def collect(items: list[str] = Field(default_factory=list)) -> int:
        items.append("one")
        seen.append(items)
        return len(items)

    assert [(await call(collect)).value for _ in range(2)] == [1, 1]
    assert seen[0] is not seen[1]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"word": "a", "times": -1}, "times: Input should be greater than or equal to 0"),
        ({"word": "a", "sep": ""}, "sep: String should have at least 1 character"),
        ({"times": 2}, "word: Field required"),
    ],
)
async def test_a_fields_constraints_are_checked(arguments: dict[str, Any], says: str) -> None:
    result = await call(repeat, **arguments)
    assert result.error is not None and says in result.error
    assert result.error.startswith("invalid arguments for tool 'repeat'")


async def test_an_alias_names_the_argument_the_model_sends() -> None:
    @tool
    def lookup(kind: str = Field("book", alias="type", description="what to find")) -> str:
        return kind

    properties = lookup.parameters["properties"]
    assert properties == {
        "type": {"default": "book", "description": "what to find", "type": "string"}
    }
    assert (await call(lookup, type="film")).value == "film"
    assert (await call(lookup)).value == "book"


def test_the_function_itself_still_takes_the_field_default_when_called_directly() -> None:
    assert repeat("x", 2, "/", [], False) == "x/x"
