"""`@tool`: schemas from hints and docstrings, validation before the call, context injection."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from raf import ToolContext, ToolDefinitionError, tool
from raf.core.function_tool import parse_docstring


@tool
def search(query: str, limit: int = 5, mode: Literal["fast", "exact"] = "fast") -> list[str]:
    """Search the catalogue.

    Args:
        query: words to look for
        limit: how many results at most
    """
    return [f"{query}-{i}" for i in range(limit)]


class Address(BaseModel):
    street: str
    city: str


@tool(name="ship", description="Ship a parcel")
async def ship_parcel(
    to: Address, weight: Annotated[float, Field(gt=0, description="kilograms")]
) -> dict[str, object]:
    await asyncio.sleep(0)
    return {"to": to.city, "weight": weight}


def test_schema_comes_from_hints_and_docstring() -> None:
    assert search.name == "search"
    assert search.description == "Search the catalogue."
    props = search.parameters["properties"]
    assert props["query"]["type"] == "string"
    assert props["query"]["description"] == "words to look for"
    assert props["limit"]["default"] == 5
    assert props["mode"]["enum"] == ["fast", "exact"]
    assert search.parameters["required"] == ["query"]
    assert search.parameters["additionalProperties"] is False
    assert "title" not in search.parameters and "title" not in props["query"]


def test_a_property_named_title_survives_title_stripping() -> None:
    @tool
    def rename(title: str) -> str:
        """Rename a page."""
        return title

    assert list(rename.parameters["properties"]) == ["title"]
    assert rename.parameters["required"] == ["title"]


async def test_sync_tool_runs_with_validated_and_coerced_arguments() -> None:
    result = await search.invoke({"query": "cat", "limit": "2"}, ToolContext())
    assert result.value == ["cat-0", "cat-1"]


async def test_invalid_arguments_become_an_error_result_not_an_exception() -> None:
    result = await search.invoke({"limit": "many"}, ToolContext())
    assert result.is_error
    assert "invalid arguments for tool 'search'" in (result.error or "")
    assert "query" in (result.error or "") and "limit" in (result.error or "")
    extra = await search.invoke({"query": "x", "colour": "red"}, ToolContext())
    assert extra.is_error and "colour" in (extra.error or "")


async def test_async_tool_with_nested_model_and_constraints() -> None:
    assert ship_parcel.name == "ship" and ship_parcel.description == "Ship a parcel"
    ok = await ship_parcel.invoke(
        {"to": {"street": "Main 1", "city": "Oslo"}, "weight": 2.5}, ToolContext()
    )
    assert ok.value == {"to": "Oslo", "weight": 2.5}
    bad = await ship_parcel.invoke({"to": {"street": "x"}, "weight": -1}, ToolContext())
    assert bad.is_error and "to.city" in (bad.error or "") and "weight" in (bad.error or "")


async def test_a_tool_asking_for_the_context_receives_it_and_it_is_not_in_the_schema() -> None:
    seen: list[ToolContext] = []

    @tool
    def whoami(ctx: ToolContext, greeting: str = "hi") -> str:
        """Say who calls."""
        seen.append(ctx)
        return f"{greeting} {ctx.call_id}"

    assert "ctx" not in whoami.parameters["properties"]
    context = ToolContext(call_id="call-7")
    result = await whoami.invoke({}, context)
    assert result.value == "hi call-7" and seen == [context]


class Opaque:
    """A type pydantic cannot describe."""


def test_functions_that_cannot_become_tools_are_refused_clearly() -> None:
    def takes_opaque(thing: Opaque) -> None:
        """Nope."""

    with pytest.raises(ToolDefinitionError, match="takes_opaque.*cannot become a schema"):
        tool(takes_opaque)

    def untyped(x):
        return x

    with pytest.raises(ToolDefinitionError, match="parameter 'x' has no type hint"):
        tool(untyped)

    def star(*args: int) -> None:
        """Nope."""

    with pytest.raises(ToolDefinitionError, match=r"\*args/\*\*kwargs"):
        tool(star)

    with pytest.raises(ToolDefinitionError, match="not valid"):
        tool(name="has space")(lambda: None)


def test_decorated_function_stays_callable() -> None:
    assert search("dog", limit=1) == ["dog-0"]


def test_docstring_parser_understands_google_and_sphinx() -> None:
    desc, params = parse_docstring(
        """Do things.

        More words.

        :param a: the a
        :param int b: the b
            continued
        """
    )
    assert desc == "Do things.\n\nMore words."
    assert params == {"a": "the a", "b": "the b continued"}
