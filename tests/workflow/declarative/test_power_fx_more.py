"""More of the Power Fx subset, checked against the values the Power Fx function
reference gives: sort orders, a table's column read through a variable, Text's rounding,
and the math, test and conversion functions that are not about tables or dates."""

from __future__ import annotations

import math
from typing import Any

import pytest

from raf.workflow.declarative import FUNCTIONS, Expression, ExpressionError, Variables

TEAM = [
    {"name": "Ada", "age": 36, "team": "b"},
    {"name": "Grace", "age": 85, "team": "a"},
    {"name": "Alan", "age": 41, "team": "a"},
]
VARS = Variables({"Local": {"Team": TEAM, "Words": ["x", "y"]}})


def ev(source: str) -> Any:
    return Expression.compile(source).evaluate(VARS.get, FUNCTIONS)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        # SortOrder is an enumeration: Descending sorts from the largest
        ("Sort(Local.Team, age, SortOrder.Descending).name", ["Grace", "Alan", "Ada"]),
        ("Sort(Local.Team, age, SortOrder.Ascending).name", ["Ada", "Alan", "Grace"]),
        ("Sort([3, 1, 2], Value, SortOrder.Descending)", [3, 2, 1]),
        ('SortByColumns(Local.Team, "name").name', ["Ada", "Alan", "Grace"]),
        (
            'SortByColumns(Local.Team, "team", SortOrder.Ascending, "age", SortOrder.Descending)'
            ".name",
            ["Grace", "Alan", "Ada"],
        ),
        # a table's column, read through the variable that holds the table
        ("Local.Team.name", ["Ada", "Grace", "Alan"]),
        ('Concat(Local.Team.name, Value, ", ")', "Ada, Grace, Alan"),
        ("Local.Words.Value", ["x", "y"]),
        # As names the rows of a table function's table
        ("ForAll(Local.Team As person, person.age + 1)", [37, 86, 42]),
        ('Filter(Local.Team As p, p.team = "a").name', ["Grace", "Alan"]),
        ("Sum(Local.Team As p, p.age)", 162),
        (
            'ForAll(Local.Team As a, Concat(Filter(Local.Team As b, b.team = a.team), name, "+"))',
            ["Ada", "Grace+Alan", "Grace+Alan"],
        ),
        # Text rounds half away from zero, as Round does
        ('Text(0.5, "0")', "1"),
        ('Text(2.5, "0")', "3"),
        ('Text(-2.5, "0")', "-3"),
        ('Text(1.005, "0.00")', "1.01"),
        ('Text(2.345, "0.00")', "2.35"),
        ('Text(1234.5, "#,##0")', "1,235"),
        ('Text(0.125, "0.0%")', "12.5%"),
        # math
        ("Exp(0)", 1),
        ("Ln(1)", 0),
        ("Log(100)", 2),
        ("Log(8, 2)", 3),
        ("Sign(-3)", -1),
        ("Sign(0)", 0),
        ("Sign(4.2)", 1),
        ("Dec2Hex(255)", "FF"),
        ("Dec2Hex(255, 4)", "00FF"),
        ("Dec2Hex(-1)", "FFFFFFFFFF"),
        ('Hex2Dec("FF")', 255),
        ('Hex2Dec("ff")', 255),
        ('Hex2Dec("FFFFFFFFFF")', -1),
        # tests
        ("IsBlankOrError(Blank())", True),
        ('IsBlankOrError("")', True),
        ("IsBlankOrError(1/0)", True),
        ("IsBlankOrError(1)", False),
        # text
        (
            'EncodeHTML("<b>Tom & Jerry\'s ""show""</b>")',
            "&lt;b&gt;Tom &amp; Jerry&#39;s &quot;show&quot;&lt;/b&gt;",
        ),
    ],
)
def test_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_exp_ln_and_pi_are_the_constants() -> None:
    assert ev("Exp(1)") == pytest.approx(math.e)
    assert ev("Ln(Exp(2))") == pytest.approx(2)
    assert ev("Pi()") == pytest.approx(math.pi)


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("Ln(0)", "Ln"),
        ("Log(-1)", "Log"),
        ('Hex2Dec("XYZ")', "hexadecimal"),
        ("Dec2Hex(1099511627776)", "Dec2Hex"),
        ("SortOrder.Sideways", "not a member of SortOrder"),
        ('SortByColumns(Local.Team, "shoe")', "no column 'shoe'"),
        ("Exp(1000)", "out of range"),
        ('Upper("a" As x)', "in its first argument only"),
        ("ForAll(Local.Team As 3, 1)", "expected a name after 'As'"),
    ],
)
def test_bad_arguments_are_located_errors(source: str, says: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert says in str(caught.value)
    assert "at character" in str(caught.value)
