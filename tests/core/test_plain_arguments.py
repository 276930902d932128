"""Plainly typed tools skip pydantic, and must not be told apart from those that use it."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from typing import Any, Literal, Optional

import pytest

from raf import ToolContext, tool
from raf.core.function_tool import FunctionTool, strip_titles
from raf.core.plain_arguments import check_plain


def everything(
    a: int,
    b: float,
    c: str,
    d: bool,
    e: int | None = None,
    f: list[str] | None = None,
    g: str = "x",
    h: Optional[float] = 1.5,  # noqa: UP045 - the old spelling must work too
    i: list[float] | None = None,
    j: bool = False,
    k: int | None = 3,
    m: list[int] | None = None,
    n: float | None = None,
) -> str:
    """Take every plain kind of parameter.

    Args:
        a: the first.
        e: an optional one.
        g: with a default.
    """
    return "ok"


def nothing() -> str:
    """Take no parameter."""
    return "ok"


def only_optional(x: str | None) -> str:
    """A required parameter that may be null."""
    return "ok"


def with_context(text: str, context: ToolContext) -> str:
    """Ask for the run context."""
    return text


PLAIN = [everything, nothing, only_optional, with_context]


def pydantic_view(t: FunctionTool) -> dict[str, Any]:
    return strip_titles(t._model().model_json_schema())  # type: ignore[no-any-return]


@pytest.mark.parametrize("fn", PLAIN, ids=lambda f: f.__name__)
def test_the_schema_is_pydantics_to_the_key_order(fn: Any) -> None:
    t = tool(fn)
    assert t._plain is not None, "expected the plain path"
    assert json.dumps(t.parameters) == json.dumps(pydantic_view(t))


def test_other_annotations_use_pydantic() -> None:
    def pick(choice: Literal["a", "b"], items: dict[str, int]) -> str:
        """Pick one."""
        return choice

    def mutable_default(items: list[str] = []) -> str:  # noqa: B006 - the case under test
        """A mutable default."""
        return ""

    for fn in (pick, mutable_default):
        t = tool(fn)
        assert t._plain is None
        assert t.parameters == pydantic_view(t)


ARGUMENTS: list[dict[str, Any]] = [
    {"a": 1, "b": 2.5, "c": "x", "d": True},
    {"a": 1, "b": 2, "c": "x", "d": False},  # an integer for a float
    {"a": 1, "b": 2**60, "c": "x", "d": False},  # too large to be exact: pydantic decides
    {"a": 1, "b": 1.0, "c": "x", "d": True, "e": None, "f": ["p", "q"], "h": None},
    {"a": 1, "b": 1.0, "c": "x", "d": True, "i": [1, 2.5], "m": [1, 2], "n": 3},
    {"a": True, "b": 1.0, "c": "x", "d": True},  # a bool for an int
    {"a": "1", "b": 1.0, "c": "x", "d": True},  # a numeric string
    {"a": 1.0, "b": 1.0, "c": "x", "d": True},  # an integral float for an int
    {"a": 1, "b": 1.0, "c": 5, "d": True},  # a number for a string
    {"a": 1, "b": 1.0, "c": "x", "d": 1},  # an integer for a bool
    {"a": 1, "b": 1.0, "c": "x", "d": "yes"},
    {"a": 1, "b": 1.0, "c": "x"},  # a required key missing
    {"a": 1, "b": 1.0, "c": "x", "d": True, "zz": 1},  # an unknown key
    {"a": 1, "b": 1.0, "c": "x", "d": True, "f": ("p",)},  # a tuple for a list
    {"a": 1, "b": 1.0, "c": "x", "d": True, "f": ["p", 1]},  # a bad item
    {"a": None, "b": 1.0, "c": "x", "d": True},  # null for a required int
]


@functools.wraps(everything)
def _received(**kwargs: Any) -> dict[str, Any]:
    """`everything`'s signature; answers with the keyword arguments it was called with."""
    return kwargs


@pytest.mark.parametrize("arguments", ARGUMENTS)
async def test_arguments_come_out_as_pydantic_gives_them(arguments: dict[str, Any]) -> None:
    t = tool(everything)
    assert t._plain is not None
    model = t._model()
    try:
        validated = model.model_validate(arguments)
    except Exception:
        expected: Any = "error"
    else:
        expected = {name: getattr(validated, name) for name in t._field_names}
    fast = check_plain(t._plain, arguments)
    if fast is not None:  # the fast path may only accept what pydantic accepts, unchanged
        assert fast == expected
        assert [type(v) for v in fast.values()] == [type(v) for v in expected.values()]
    # what the function receives when the tool is invoked (the plain check, else pydantic)
    received = FunctionTool(_received, name="everything", blocking=False)
    assert received._plain is not None
    result = await received.invoke(arguments, ToolContext())
    if expected == "error":
        assert result.error is not None
        assert result.error.startswith("invalid arguments for tool 'everything'")
    else:
        assert result.error is None
        assert result.value == expected
        assert [type(v) for v in result.value.values()] == [type(v) for v in expected.values()]


async def test_a_plain_tool_runs_and_reports_errors_as_before() -> None:
    t = tool(everything)
    ok = await t.invoke({"a": 1, "b": 2, "c": "x", "d": True}, ToolContext())
    assert ok.value == "ok"
    bad = await t.invoke({"a": 1, "b": 2, "c": "x"}, ToolContext())
    assert bad.error == "invalid arguments for tool 'everything': d: Field required"


def test_building_plain_tools_does_not_import_pydantic() -> None:
    code = (
        "import sys\n"
        "from raf import tool\n"
        "def add(a: int, b: int = 2) -> int:\n"
        "    return a + b\n"
        "t = tool(add)\n"
        "assert t.parameters['required'] == ['a']\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
