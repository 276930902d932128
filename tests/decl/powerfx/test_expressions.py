"""The expression evaluator: grammar, precedence, functions, values, and errors that say
where they are. It never hands text to Python's `eval`."""

from __future__ import annotations

from typing import Any

import pytest

from raf.decl.powerfx import FUNCTIONS, Expression, ExpressionError, Variables

VARS = Variables(
    {
        "Local": {
            "greeting": "Hello",
            "userName": "Ada",
            "count": 4,
            "items": [1, 2, 3],
            "tasks": [
                {"name": "a", "done": True, "hours": 2},
                {"name": "b", "done": False, "hours": 5},
            ],
        },
        "System": {"LastMessage": {"Text": "hi there"}},
        "Workflow": {"Inputs": {"age": 41}, "Outputs": {}},
    }
)


def ev(source: str) -> Any:
    return Expression.compile(source).evaluate(VARS.get, FUNCTIONS)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ('Concat(Local.greeting, ", ", Local.userName, "!")', "Hello, Ada!"),
        ("Local.count + 1", 5),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 / 4", 2.5),
        ("7 % 3", 1),
        ("-Local.count + 10", 6),
        ("Local.count = 4", True),
        ("Local.count == 4.0", True),
        ("Local.count <> 4", False),
        ("Local.count != 5", True),
        ("Local.count >= 4 And Local.count < 5", True),
        ("Local.count > 9 Or Not(false)", True),
        ("!(1 < 2) || 2 <= 2 && true", True),
        ('"a" & 1 & true', "a1true"),
        ('"5" + 1', 6),
        ('"x" + 1', "x1"),
        ("inputs.age + 1", 42),
        ("Workflow.Inputs.age", 41),
        ("System.LastMessage.Text", "hi there"),
        ("Local.missing", None),
        ("IsBlank(Local.missing)", True),
        ("Local.items[0] + Local.items[2]", 4),
        ("Local.items[9]", None),
        ("[1, 2][1]", 2),
        ('{name: "a", n: 2}.n', 2),
        ('If(Local.count > 3, "big", "small")', "big"),
        ('If(false, 1, false, 2, "else")', "else"),
        ('Upper(Left("hello", 2)) & Lower(Right("WORLD", 3))', "HErld"),
        ('Mid("abcdef", 2, 3)', "bcd"),
        ('Find("c", "abc")', 3),
        ('Substitute("a-b-c", "-", "+")', "a+b+c"),
        ('Trim("  a   b ")', "a b"),
        ('Len("four")', 4),
        ("CountRows(Local.items)", 3),
        ("Sum(Local.items)", 6),
        ("Max(1, 9, 3)", 9),
        ("Round(2.456, 2)", 2.46),
        ('Split("a b c", " ")', ["a", "b", "c"]),
        ('Join(["a", "b"], "+")', "a+b"),
        ("First(Local.items) + Last(Local.items)", 4),
        ("Append(Local.items, 4)", [1, 2, 3, 4]),
        ('ParseJSON("{\\"a\\": [1]}").a[0]', 1),
        ('Text(3.0) & "/" & Text(2.5, "0.00")', "3/2.50"),
        ('Value("12") * 2', 24),
        ('Coalesce(Local.missing, "", "x")', "x"),
        ('Contains(Local.items, 2) And StartsWith("abc", "ab")', True),
        ('"say ""hi"""', 'say "hi"'),
        ("concat('a', 'b')", "ab"),
        ("Filter(Local.tasks, Not(ThisRecord.done))", [{"name": "b", "done": False, "hours": 5}]),
        ("CountIf(Local.tasks, ThisRecord.hours > Local.count - 1)", 1),
        ('LookUp(Local.tasks, ThisRecord.name = "b", ThisRecord.hours)', 5),
        ('LookUp(Local.tasks, ThisRecord.name = "z")', None),
        ("ForAll(Local.items, ThisRecord * 10)", [10, 20, 30]),
        ("Sum(ForAll(Local.tasks, ThisItem.hours))", 7),
        ("2 in Local.items", True),
        ('"ADA" in "Hello, Ada!"', True),
    ],
)
def test_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_if_evaluates_only_the_branch_taken() -> None:
    assert ev("If(true, 1, 1 / 0)") == 1


@pytest.mark.parametrize(
    ("source", "message", "offset"),
    [
        ("Concat(Local.a, ", "a value is missing at the end of the formula", 16),
        ("1 +* 2", "unexpected '*'", 3),
        ("Local.x $ 2", "unexpected character '$'", 8),
        ("(1 + 2", "expected ')', found the end", 6),
        ("", "empty expression", 0),
        ("1 2", "unexpected '2'", 2),
    ],
)
def test_parse_errors_say_where(source: str, message: str, offset: int) -> None:
    with pytest.raises(ExpressionError) as info:
        Expression.compile(source)
    assert message in str(info.value)
    assert info.value.offset == offset


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("1 / 0", "division by zero"),
        ('"a" * 2', "expected a number, got text"),
        ("Nope(1)", "unknown function 'Nope'"),
        ("-[1]", "cannot negate a list"),
        ("Index(Local.items, 7)", "Index"),
    ],
)
def test_run_errors_name_the_expression(source: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message) as info:
        ev(source)
    assert source in str(info.value)


def test_python_is_never_reached() -> None:
    """Names are variable paths and calls go only to the function table."""
    assert ev("__import__") is None
    with pytest.raises(ExpressionError, match="unknown function '__import__'"):
        ev('__import__("os")')
    with pytest.raises(ExpressionError, match="unknown function 'exec'"):
        ev('exec("1")')
    assert ev("Local.greeting.__class__") is None


def test_compile_lists_names_and_calls() -> None:
    compiled = Expression.compile("Concat(Local.a, System.B.C) & Upper(inputs.x)")
    assert [n for n, _ in compiled.names] == [("Local", "a"), ("System", "B", "C"), ("inputs", "x")]
    assert [c for c, _ in compiled.calls] == ["Concat", "Upper"]
