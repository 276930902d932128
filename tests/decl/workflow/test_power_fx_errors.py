"""Power Fx's error functions (IfError, IsError, Error) and the tests IsNumeric and
IsEmpty, checked against the values the Power Fx function reference gives; a formula
cannot wrap itself in IfError or IsError to get past the evaluator's limits."""

from __future__ import annotations

from typing import Any

import pytest

from raf.decl.powerfx import FUNCTIONS, Expression, ExpressionError, Variables

VARS = Variables({"Local": {"items": [1, 2], "none": [], "word": "A"}})


def ev(source: str) -> Any:
    return Expression.compile(source).evaluate(VARS.get, FUNCTIONS)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        # IfError reference table
        ("IfError(1, 2)", 1),
        ("IfError(1/0, 2)", 2),
        ("IfError(10, 11, 20, 21, 300)", 300),
        ("IfError(10, 11, 1/0, 21, 300)", 21),
        ("IfError(10, 11, 20, 21)", 20),
        ('IfError(Error("boom"), "caught")', "caught"),
        ('IfError(Value("x"), -1)', -1),
        # IsError
        ("IsError(1/0)", True),
        ("IsError(1)", False),
        ('IsError(Error({Kind: 1, Message: "no"}))', True),
        ('IsError(Value("12"))', False),
        # IsNumeric reference table
        ("IsNumeric(1)", True),
        ('IsNumeric("1")', True),
        ('IsNumeric("A")', False),
        ("IsNumeric(1+1)", True),
        ('IsNumeric("1+1")', False),
        ("IsNumeric(Local.word)", False),
        ("IsNumeric(Blank())", False),
        ("IsNumeric(true)", False),
        # IsEmpty: a table with no records
        ("IsEmpty(Local.none)", True),
        ("IsEmpty(Local.items)", False),
        ("IsEmpty(Table())", True),
        ("IsEmpty(Blank())", True),
    ],
)
def test_error_and_test_functions_give_the_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_error_is_located_and_carries_its_message() -> None:
    with pytest.raises(ExpressionError) as info:
        ev('1 + Error("the total is wrong")')
    assert info.value.reason == "the total is wrong"
    assert info.value.offset == 4
    with pytest.raises(ExpressionError, match="too bad"):
        ev('Error({Kind: 13, Message: "too bad"})')


def test_only_the_failing_values_fallback_is_evaluated() -> None:
    # the second fallback would fail if it ran
    assert ev('IfError(1/0, "first", 2/0, Error("never"))') == "first"


@pytest.mark.parametrize(
    "source",
    [
        "IfError(ForAll(Sequence(10000), Sequence(10000)), 0)",
        "IsError(ForAll(Sequence(10000), Sequence(10000)))",
        'IfError(Concat(Sequence(10000), Concat(Sequence(10000), "x")), 0)',
    ],
)
def test_limits_are_not_caught(source: str) -> None:
    with pytest.raises(ExpressionError, match="more than|longer than"):
        ev(source)


@pytest.mark.parametrize(
    ("source", "needs"),
    [("IfError(1)", "IfError needs"), ("IsError()", "IsError needs"), ("Error()", "Error needs")],
)
def test_wrong_arguments_are_located_errors(source: str, needs: str) -> None:
    with pytest.raises(ExpressionError, match=needs) as info:
        ev(source)
    assert info.value.offset == 0


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ('IfError(Error("the total is wrong"), FirstError.Message)', "the total is wrong"),
        ('IfError(Error({Kind: 13, Message: "x"}), FirstError.Kind)', 13),
        ('IfError(Error("x"), CountRows(AllErrors))', 1),
        ("IfError(1/0, FirstError.Message)", "division by zero"),
        ('IfError(Error("inner"), ForAll([1], FirstError.Message))', ["inner"]),
    ],
)
def test_a_fallback_reads_the_error(source: str, value: Any) -> None:
    assert ev(source) == value


def test_first_error_outside_a_fallback_is_a_located_error() -> None:
    with pytest.raises(ExpressionError, match="known only in an IfError fallback") as info:
        ev("1 + FirstError.Message")
    assert info.value.offset == 4
