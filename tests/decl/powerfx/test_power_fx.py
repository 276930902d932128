"""The Power Fx subset of workflow expressions, checked against the values the Power Fx
function reference gives, and the limits that keep a hostile formula from costing time
or memory (each attack is refused with a located error, fast)."""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from raf.decl.powerfx import FUNCTIONS, Expression, ExpressionError, Variables
from raf.decl.powerfx.expressions import MAX_DEPTH, MAX_READ, MAX_STEPS
from raf.decl.powerfx.variables import UnsetEnvironmentVariable

VARS = Variables(
    {
        "Local": {
            "Agents": [
                {"name": "WebAgent", "description": "searches the web"},
                {"name": "CoderAgent", "description": "writes code"},
            ],
            "Reply": [
                {"Role": "assistant", "Text": "first"},
                {"Role": "assistant", "Text": "CONGRATULATIONS, done"},
            ],
            "who": "coder",
        },
        "Workflow": {"Inputs": {"age": 41}, "Outputs": {}},
    }
)


def ev(source: str) -> Any:
    return Expression.compile(source).evaluate(VARS.get, FUNCTIONS)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        # numbers (Round, RoundUp, RoundDown reference tables)
        ("Round(7.9, 0)", 8),
        ("Round(-7.9, 0)", -8),
        ("Round(7.5, 0)", 8),
        ("Round(-7.5, 0)", -8),
        ("Round(430.123, 2)", 430.12),
        ("Round(430.125, 2)", 430.13),
        ("Round(430.123, -2)", 400),
        ("RoundUp(7.1, 0)", 8),
        ("RoundUp(-7.1, 0)", -8),
        ("RoundDown(7.9, 0)", 7),
        ("RoundDown(-7.9, 0)", -7),
        ("RoundDown(430.123, -1)", 430 - 0),
        ("Int(-7.9)", -8),
        ("Trunc(-7.9)", -7),
        ('Value("123.456")', 123.456),
        ('Value("12.5%")', 0.125),
        ('Value("1,234")', 1234),
        ("Mod(10, 3)", 1),
        ("Power(2, 10)", 1024),
        ("Sqrt(9)", 3),
        ("Sum(1, 2, 3)", 6),
        ("Average(1, 2, 3, 6)", 3),
        # text
        ('Text(1234.5678, "#,##0.00")', "1,234.57"),
        ('Text(0.5, "0%")', "50%"),
        ('Left("Hello", 2)', "He"),
        ('Right("Hello", 3)', "llo"),
        ('Mid("Hello", 2, 3)', "ell"),
        ('Mid("Hello", 2)', "ello"),
        ('Find("b", "abcb")', 2),
        ('Find("b", "abcb", 3)', 4),
        ('IsBlank(Find("z", "abc"))', True),
        ('Len("Hello")', 5),
        ('Proper("hello world")', "Hello World"),
        ('Trim("  a   b  ")', "a b"),
        ('TrimEnds("  a   b  ")', "a   b"),
        ('Substitute("a-b-c", "-", "+")', "a+b+c"),
        ('Substitute("a-b-c", "-", "+", 2)', "a-b+c"),
        ('Replace("abcdef", 2, 3, "X")', "aXef"),
        ('Concatenate("a", 1, true)', "a1true"),
        ('StartsWith("Hello", "he")', True),
        ('EndsWith("Hello", "LO")', True),
        ('Char(65) & "!"', "A!"),
        ('$"Hi {Local.who}, {1 + 1} is two {{x}}"', "Hi coder, 2 is two {x}"),
        ('$"say ""{Upper(Local.who)}"""', 'say "CODER"'),
        # logic
        ('Switch(2, 1, "one", 2, "two", "many")', "two"),
        ('Switch(9, 1, "one", "many")', "many"),
        ('Coalesce(Blank(), "", "x")', "x"),
        ('IsBlank("")', True),
        ("IsEmpty([])", True),
        ('If(1 > 2, "a", 2 > 1, "b", "c")', "b"),
        ("With({a: 2, b: 3}, a * b + Len(Local.who))", 11),
        # tables
        ("CountRows(Sequence(4))", 4),
        ("Sequence(4, 10, 5)", [10, 15, 20, 25]),
        ("Sum(Sequence(4), Value * 2)", 20),
        ("Max(Local.Agents, Len(name))", 10),
        ('Concat(Sequence(3), Value, "-")', "1-2-3"),
        ("First(Sequence(3)).Value", 1),
        ("Last(Local.Agents).name", "CoderAgent"),
        ("FirstN(Sequence(5), 2)", [1, 2]),
        ("LastN(Sequence(5), 2)", [4, 5]),
        ("Index(Local.Agents, 2).name", "CoderAgent"),
        ("Table({a: 1}, {a: 2})", [{"a": 1}, {"a": 2}]),
        ('CountRows(Filter(Local.Agents, StartsWith(name, "Web")))', 1),
        ('LookUp(Local.Agents, name = "CoderAgent", description)', "writes code"),
        (
            'Search(Local.Agents, "CODE", name)',
            [{"name": "CoderAgent", "description": "writes code"}],
        ),
        ('CountRows(Search(Local.Agents, "", name))', 2),
        ("Sort(Local.Agents, name).name", ["CoderAgent", "WebAgent"]),
        ('First(Sort(Local.Agents, name, "Descending")).name', "WebAgent"),
        (
            'Concat(ForAll(Local.Agents, $"- " & name & $": " & description), Value, "\\n")',
            "- WebAgent: searches the web\n- CoderAgent: writes code",
        ),
        ("ForAll(Local.Agents, ThisRecord.name)", ["WebAgent", "CoderAgent"]),
        # messages
        ('UserMessage("hi").Text', "hi"),
        ('UserMessage("hi").Role', "user"),
        ('AgentMessage("yo").Role', "assistant"),
        ("Last(Local.Reply).Text", "CONGRATULATIONS, done"),
        ("MessageText(Local.Reply)", "first\nCONGRATULATIONS, done"),
        ('!IsBlank(Find("CONGRATULATIONS", Upper(MessageText(Local.Reply))))', True),
        ('"x: " & UserMessage("hi")', "x: hi"),
        # scopes in any case
        ("workflow.inputs.age", 41),
        ("Topic.who", "coder"),
        ("local.who", "coder"),
    ],
)
def test_power_fx_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


def test_calls_left_open_at_the_end_are_closed() -> None:
    assert ev('Upper(Concatenate("a", "b"') == "AB"
    with pytest.raises(ExpressionError, match=r"expected '\)'"):
        ev("(1 + 2")  # a bracket, not a call: still an error


def test_env_scope_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAF_TEST_LABEL", "docs")
    assert ev('Env.RAF_TEST_LABEL & "___search"') == "docs___search"
    monkeypatch.delenv("RAF_TEST_LABEL")
    with pytest.raises(UnsetEnvironmentVariable, match="environment variable RAF_TEST_LABEL"):
        ev("Env.RAF_TEST_LABEL")


def test_row_fields_are_not_checked_as_scopes() -> None:
    compiled = Expression.compile("ForAll(Local.Agents, name & Local.who)")
    assert [n for n, _ in compiled.names] == [("Local", "Agents"), ("Local", "who")]


@pytest.mark.parametrize(
    ("source", "offset", "message"),
    [
        ('Upper("a" "b")', 10, "expected ',' or ')'"),
        ("1 +", 3, "a value is missing at the end of the formula"),
        ('$"open {1 + "', 0, "never closed"),
        ('$"lone } brace"', 7, "lone '}'"),
        ("Frobnicate(1)", 0, "unknown function 'Frobnicate'"),
        ("1 # 2", 2, "unexpected character '#'"),
    ],
)
def test_malformed_formulas_are_located(source: str, offset: int, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert message in str(caught.value)
    assert caught.value.offset == offset
    assert f"at character {offset + 1}" in str(caught.value)


def _refused_fast(source: str, message: str) -> ExpressionError:
    started = time.perf_counter()
    with pytest.raises(ExpressionError) as caught:
        ev(source)
    assert message in str(caught.value)
    assert time.perf_counter() - started < 30  # a refusal, not hours of work
    return caught.value


def test_huge_round_digits_cost_nothing() -> None:
    assert ev("Round(1, 1000000000)") == 1
    assert ev("Round(1.5, -1000000000)") == 0
    assert ev("Round(1, 10000000)") == 1


def test_deep_nesting_is_a_located_error_not_a_crash() -> None:
    error = _refused_fast("(" * 5000 + "1" + ")" * 5000, f"deeper than {MAX_DEPTH}")
    assert error.offset is not None and error.offset <= MAX_DEPTH + 1
    _refused_fast("Upper(" * 2000 + '"a"' + ")" * 2000, f"deeper than {MAX_DEPTH}")
    _refused_fast("-" * 5000 + "1", f"deeper than {MAX_DEPTH}")


def test_nested_substitute_cannot_grow_without_bound() -> None:
    inner = 'Concat(Sequence(1000), "xxxxxxxxxx")'
    source = inner
    for _ in range(6):
        source = f'Substitute({source}, "x", "xxxxxxxxxx")'
    _refused_fast(source, "longer than")


def test_substitute_refuses_a_huge_text_before_making_it() -> None:
    """Ten thousand replacements of two thousand characters would be twenty million: the
    size is checked from the counts, so the text is never built."""
    source = (
        'Substitute(Concat(Sequence(1000), "xxxxxxxxxx"), "x", Concat(Sequence(200), "yyyyyyyyyy"))'
    )
    tracemalloc.start()
    try:
        _refused_fast(source, "longer than")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, f"{peak} bytes were allocated for a refused text"


BIG = "a" * 1_000_000
"""A long text a formula reads, as a model's reply or a tool's output can be."""


def ev_big(source: str) -> Any:
    """`source` evaluated where `Local.big` is a text of a million characters."""
    return Expression.compile(source).evaluate(
        lambda path: BIG if str(path[-1]).lower() == "big" else None, FUNCTIONS
    )


@pytest.mark.parametrize(
    "source",
    [
        "CountRows(Filter(Sequence(10000), Local.big in Local.big))",
        'CountRows(ForAll(Sequence(10000), "z" in Local.big))',
        'CountRows(ForAll(Sequence(10000), Split(Local.big, "z")))',
        'CountRows(ForAll(Sequence(10000), StartsWith(Local.big, "z")))',
        'CountRows(ForAll(Sequence(10000), Find("z", Local.big)))',
        'CountRows(ForAll(Sequence(10000), Switch(Local.big, "b", 1, Local.big, 2)))',
        'CountRows(Search(ForAll(Sequence(10000), Local.big), "z", Value))',
        "CountRows(ForAll(Sequence(10000), Sort(Sequence(3), Local.big)))",
        "CountRows(Filter(Sequence(10000), Local.big))",
        "CountRows(ForAll(Sequence(10000), If(Local.big Or false, 1, 0)))",
        "CountRows(ForAll(Sequence(10000), Not(Local.big)))",
    ],
)
def test_reading_a_long_text_over_and_over_is_bounded(source: str) -> None:
    """Each step may read a long text whole without making anything: what a formula run
    reads is counted too, so a long text read on every row is refused, fast."""
    with pytest.raises(ExpressionError, match=f"read more than {MAX_READ} characters"):
        ev_big(source)


def test_a_long_text_read_a_few_times_is_fine() -> None:
    assert ev_big('"z" in Local.big') is False
    assert ev_big('If(StartsWith(Local.big, "a"), Len(Local.big), 0)') == len(BIG)
    assert ev_big('CountRows(Split(Local.big, "z"))') == 1


def test_forall_over_sequence_is_bounded() -> None:
    _refused_fast("ForAll(Sequence(10000), Sequence(10000))", "more than")
    _refused_fast("Sequence(100000000)", "more than 10000 rows")


def test_step_budget_stops_long_formulas() -> None:
    _refused_fast(
        "CountRows(ForAll(Sequence(10000), CountRows(Filter(Sequence(10000), Value > 1))))",
        f"more than {MAX_STEPS} steps",
    )


def test_huge_numbers_are_refused() -> None:
    _refused_fast("Power(10, 400)", "out of range")
    _refused_fast('Value("1e400")', "out of range")
    source = "*".join(["1e200"] * 3)
    _refused_fast(source, "out of range")


def test_long_formula_is_refused() -> None:
    _refused_fast("1+" * 20_000 + "1", "the limit is")


def test_conversation_level_system_values() -> None:
    variables = Variables()
    variables.set_system("ConversationId", "conv_1")
    variables.set_system("LastMessage", {"Text": "hi", "Role": "user"})

    def value(source: str) -> Any:
        return Expression.compile(source).evaluate(variables.get, FUNCTIONS)

    assert value("System.Conversation.Id") == "conv_1"
    assert value("System.ConversationId") == "conv_1"
    assert value("System.LastMessageText") == "hi"
