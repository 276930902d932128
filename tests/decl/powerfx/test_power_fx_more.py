"""More of the Power Fx subset, checked against the values the Power Fx function
reference gives: sort orders, a table's column read through a variable, Text's rounding,
and the math, test and conversion functions that are not about tables or dates."""

from __future__ import annotations

import math
from typing import Any

import pytest

from raf.decl.powerfx import FUNCTIONS, Expression, ExpressionError, Variables

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
        # the format codes of the Text reference
        ('Text(1234.59, "####.#")', "1234.6"),
        ('Text(8.9, "#.000")', "8.900"),
        ('Text(0.631, "0.#")', "0.6"),
        ('Text(12, "#.0#")', "12.0"),
        ('Text(1234.568, "#.0#")', "1234.57"),
        ('Text(12000, "$ #,###")', "$ 12,000"),
        ('Text(1200000, "$ #,###")', "$ 1,200,000"),
        ('Text(12, "00000")', "00012"),
        ('Text(2.5, """Total: ""0.00")', "Total: 2.50"),
        ('Text(-1234.5, "#,##0.00")', "-1,234.50"),
        ('Text(-0.001, "0.00")', "0.00"),
        # a number as text: at most 15 significant digits, written out
        ('0.1 + 0.2 & ""', "0.3"),
        ("Text(1/3)", "0.333333333333333"),
        ("Text(0.000001)", "0.000001"),
        ("Text(1e21)", "1E+21"),
        # weeks of the year
        ("WeekNum(Date(2021, 1, 2))", 1),
        ("WeekNum(Date(2021, 1, 3))", 2),  # a Sunday starts week 2
        ("WeekNum(Date(2021, 1, 3), StartOfWeek.Monday)", 1),
        ("WeekNum(Date(2021, 1, 4), StartOfWeek.Monday)", 2),
        ("WeekNum(Date(2021, 12, 31))", 53),
        ("ISOWeekNum(Date(2021, 1, 1))", 53),  # ISO week 53 of 2020
        ("ISOWeekNum(Date(2021, 1, 4))", 1),
        ("Sort(Shuffle(Sequence(6)), Value)", [1, 2, 3, 4, 5, 6]),
        # Count counts the numbers of a table
        ('Count([1, "a", 2, Blank(), true])', 2),
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
        ('Decimal("1.5")', 1.5),
        ('Float("2")', 2),
        ("RandBetween(4, 4)", 4),
        ('GUID("0F8FAD5B-D9CB-469F-A165-70867728950E")', "0f8fad5b-d9cb-469f-a165-70867728950e"),
        # text
        ('PlainText("<p>Tom &amp; <b>Jerry</b></p>")', "Tom & Jerry"),
        (
            'EncodeHTML("<b>Tom & Jerry\'s ""show""</b>")',
            "&lt;b&gt;Tom &amp; Jerry&#39;s &quot;show&quot;&lt;/b&gt;",
        ),
    ],
)
def test_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_random_values_are_in_their_range() -> None:
    assert all(0 <= ev("Rand()") < 1 for _ in range(20))
    assert {ev("RandBetween(1, 3)") for _ in range(60)} <= {1, 2, 3}
    made = ev("GUID()")
    assert len(made) == 36 and made != ev("GUID()") and ev(f'GUID("{made}")') == made


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
        ('GUID("nope")', "is not a GUID"),
        ("RandBetween(3, 1)", "no whole number from 3 to 1"),
        ("ForAll(Local.Team As 3, 1)", "expected a name after 'As'"),
    ],
)
def test_bad_arguments_are_located_errors(source: str, says: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert says in str(caught.value)
    assert "at character" in str(caught.value)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        # IsMatch: the whole text, unless the options say otherwise
        ('IsMatch("123-45-7890", "\\d{3}-\\d{2}-\\d{4}")', True),
        ('IsMatch("123-45-7890x", "\\d{3}-\\d{2}-\\d{4}")', False),
        ('IsMatch("joan@contoso.com", Match.Email)', True),
        ('IsMatch("123.456", Match.MultipleDigits & Match.Period & Match.MultipleDigits)', True),
        ('IsMatch("111-111-111", "\\d+", MatchOptions.Contains)', True),
        ('IsMatch("Hello world", "hello", MatchOptions.Contains & MatchOptions.IgnoreCase)', True),
        ('IsMatch("Hello world", "hello", MatchOptions.IgnoreCase)', False),
        ('IsMatch("Hello world", "Hello", MatchOptions.BeginsWith)', True),
        ('IsMatch("Hello world", "world", MatchOptions.BeginsWith)', False),
        ('IsMatch("Hello world", "world", MatchOptions.EndsWith)', True),
        ('IsMatch(Blank(), "")', True),
        # Match: the first match, a record; blank when there is none
        (
            'Match("Bob Jones <bob.jones@contoso.com>", "<(?<email>" & Match.Email & ")>").email',
            "bob.jones@contoso.com",
        ),
        ('Match("Bob Jones", "(\\w+) (\\w+)").FullMatch', "Bob Jones"),
        ('Match("Call 555-0100", "\\d{3}-\\d{4}").StartMatch', 6),
        ('Match("Bob Jones", "(\\w+) (\\w+)").SubMatches.Value', ["Bob", "Jones"]),
        ('IsBlank(Match("abc", "\\d"))', True),
        # MatchAll: every match, a table
        ('MatchAll("a1b22c333", "\\d+").FullMatch', ["1", "22", "333"]),
        ('CountRows(MatchAll("none here", "\\d"))', 0),
    ],
)
def test_regular_expressions_give_the_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_a_backslash_reaches_the_pattern_as_written() -> None:
    assert ev('Len("\\d")') == 2  # Power Fx text has no backslash escapes for letters
    assert ev('"a\\nb"') == "a\nb"  # \n and \t still read as the characters


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ('IsMatch("a", "(")', "not a valid pattern"),
        ('IsMatch("a", Match.Sideways)', "not a member of Match"),
        ('IsMatch("a", "a", "q")', "unknown match option"),
    ],
)
def test_bad_patterns_are_located_errors(source: str, says: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert says in str(caught.value) and "at character" in str(caught.value)


def test_a_pattern_that_backtracks_without_end_is_stopped() -> None:
    import time

    started = time.perf_counter()
    with pytest.raises(ExpressionError, match="took longer than"):
        ev('IsMatch(Concat(Sequence(60), "a") & "!", "(a|aa)+$", MatchOptions.Contains)')
    assert time.perf_counter() - started < 30  # refused, not left running


def test_matches_once_per_row_share_one_time_limit() -> None:
    import time

    slow = 'IfError(IsMatch(Concat(Sequence(60), "a") & "!", "(a|aa)+$", "c"), false)'
    started = time.perf_counter()
    assert ev(f"CountIf(ForAll(Sequence(200), {slow}), Value)") == 0
    assert time.perf_counter() - started < 30  # not 200 times the limit


@pytest.mark.parametrize(
    "pattern", ["a{1000000000}", "a{5,1000000000000}", "((a{100}){100}){100}", "(a{200}){200}"]
)
def test_a_pattern_that_would_compile_to_gigabytes_is_refused_first(pattern: str) -> None:
    with pytest.raises(ExpressionError, match="counted repeats"):
        ev(f'IsMatch("a", "{pattern}")')
