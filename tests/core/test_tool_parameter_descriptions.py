"""A tool's parameter descriptions reach its JSON Schema from any of the three places
Python code writes them: `Annotated[…, Field(description=…)]`, `Annotated[…, "…"]` and
the docstring's `Args:` section, in that order of precedence."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from raf import tool
from raf.core.tools import ToolContext


@tool
def convert(
    amount: Annotated[float, Field(description="the sum to convert", gt=0)],
    currency: Annotated[str, "ISO code of the target currency"],
    rounding: int = 2,
) -> str:
    """Convert money.

    Args:
        amount: overridden by the Field
        currency: overridden by the annotation's string
        rounding: digits after the point
    """
    return f"{amount:.{rounding}f} {currency}"


def test_each_form_reaches_the_schema() -> None:
    properties = convert.parameters["properties"]
    assert properties["amount"] == {
        "description": "the sum to convert",
        "exclusiveMinimum": 0,
        "type": "number",
    }
    assert properties["currency"]["description"] == "ISO code of the target currency"
    assert properties["rounding"]["description"] == "digits after the point"
    assert convert.parameters["required"] == ["amount", "currency"]


def test_field_wins_over_a_string_and_the_docstring_fills_the_rest() -> None:
    @tool
    def both(
        x: Annotated[int, "the string", Field(description="the field")],
        y: Annotated[int, Field(ge=0)],
        z: Annotated[str, "  "],
    ) -> int:
        """Add.

        Args:
            x: the docstring
            y: y from the docstring
            z: z from the docstring
        """
        return x + y

    properties = both.parameters["properties"]
    assert properties["x"]["description"] == "the field"
    assert properties["y"] == {
        "description": "y from the docstring",
        "minimum": 0,
        "type": "integer",
    }
    assert properties["z"]["description"] == "z from the docstring"


async def test_the_field_still_checks_the_arguments() -> None:
    refused = await convert.invoke({"amount": -1, "currency": "EUR"}, ToolContext())
    assert refused.is_error and "amount" in str(refused.error)
    done = await convert.invoke({"amount": 3, "currency": "EUR"}, ToolContext())
    assert not done.is_error and done.value == "3.00 EUR"
