"""BFCL's AST check of a model's calls against the possible answers, for Python functions.

The rules are BFCL's own (its `ast_checker`, which cannot be imported without the
provider SDKs its package pulls in), written again for the categories raf scores:

- `simple_*`: exactly one call, of the function, every required parameter given, no
  parameter the function or the answer does not know, each value among the accepted
  ones; a parameter the answer lists without "" must be given.
- `multiple`: exactly one call, checked as above against the expected function.
- `irrelevance`: right when the model makes no call at all.

Values compare as BFCL compares them: strings without case, spaces and `,./-_*^`
(and `'` as `"`); an int is accepted for a float; lists element by element in order;
dicts key by key; a value of another type than the parameter's that has the answer's
type counts as a variable and is compared as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from raf.evals.bfcl.data import tool_name

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_NESTED = ("array", "tuple")
_PUNCTUATION = re.compile(r"[ ,./\-_*^]")

Call = Mapping[str, Mapping[str, Any]]
"""A call as BFCL writes it: `{function name: {parameter: value}}`."""


@dataclass(kw_only=True, slots=True, frozen=True)
class Verdict:
    """Whether the calls match, and BFCL's reason when they do not."""

    valid: bool
    error: str = ""
    kind: str = ""
    """BFCL's error type (`simple_function_checker:wrong_func_name`, ...)."""


RIGHT = Verdict(valid=True)


def _wrong(kind: str, error: str) -> Verdict:
    return Verdict(valid=False, error=error, kind=kind)


def check(
    category: str,
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[Call],
    answers: Sequence[Mapping[str, Mapping[str, list[Any]]]],
) -> Verdict:
    """BFCL's verdict on `calls` (names as the model saw them, `.` written `_`)."""
    if "irrelevance" in category:
        if calls:
            return _wrong("irrelevance_error:decoder_success", "a call was made where none fits")
        return RIGHT
    if len(calls) != len(answers) or len(calls) != 1:
        kind = "multiple" if "multiple" in category else "simple"
        return _wrong(f"{kind}_function_checker:wrong_count", "Wrong number of functions.")
    expected = next(iter(answers[0]))
    description = next((f for f in functions if f["name"] == expected), None)
    if description is None:
        return _wrong("checker:unknown_function", f"{expected!r} is not among the functions")
    return simple_check(description, calls[0], answers[0])


def simple_check(
    description: Mapping[str, Any],
    call: Call,
    answer: Mapping[str, Mapping[str, list[Any]]],
) -> Verdict:
    """One call against one function's possible answer."""
    possible = next(iter(answer.values()))
    name = tool_name(str(description["name"]))
    details = description["parameters"]["properties"]
    required = description["parameters"].get("required") or []
    if name not in call:
        return _wrong(
            "simple_function_checker:wrong_func_name",
            f"Function name {name!r} not found in model output.",
        )
    given = call[name]
    for param in required:
        if param not in given:
            return _wrong(
                "simple_function_checker:missing_required",
                f"Missing required parameter: {param!r}.",
            )
    for param, value in given.items():
        if param not in details or param not in possible:
            return _wrong(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        verdict = _check_value(param, value, details[param], possible[param])
        if not verdict.valid:
            return verdict
    for param, accepted in possible.items():
        if param not in given and "" not in accepted:
            return _wrong(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )
    return RIGHT


def _check_value(param: str, value: Any, detail: Mapping[str, Any], accepted: list[Any]) -> Verdict:
    declared = str(detail.get("type"))
    expected = PYTHON_TYPES.get(declared, str)
    nested = None
    if declared in _NESTED:
        nested = PYTHON_TYPES.get(str((detail.get("items") or {}).get("type")), str)
    if declared == "tuple" and type(value) is tuple:
        value = list(value)
    if declared == "float" and type(value) is int:
        value = float(value)
    typed = _type_check(param, value, accepted, declared, expected, nested)
    if not typed.valid:
        return typed
    if not _is_variable(value, accepted, expected):
        if expected is dict:
            return _dict_check(param, value, accepted)
        if expected is list and nested is dict:
            return _list_dict_check(param, value, accepted)
        if expected is str:
            return _string_check(param, value, accepted)
        if expected is list:
            return _list_check(param, value, accepted)
    if value not in accepted:
        return _wrong(
            "value_error:others",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {accepted}.",
        )
    return RIGHT


def _answer_type(accepted: Sequence[Any]) -> type | None:
    return next((type(a) for a in accepted if a != ""), None)


def _is_variable(value: Any, accepted: Sequence[Any], expected: type) -> bool:
    """BFCL's "variable": the answer is of another type than the parameter (a name
    standing for a value), so the value is compared as is."""
    answer_type = _answer_type(accepted)
    if answer_type is None:
        return False
    if type(value) is expected:
        return answer_type is not expected
    return type(value) is answer_type


def _type_check(
    param: str,
    value: Any,
    accepted: Any,
    declared: str,
    expected: type,
    nested: type | None,
) -> Verdict:
    if type(value) is expected:
        if nested is None:
            return RIGHT
        items = cast("list[Any]", value)
        for option in accepted:
            if type(option) is list and all(
                _type_check(param, item, option, nested.__name__, nested, None).valid
                for item in items
            ):
                return RIGHT
            if type(option) is not list:
                return RIGHT  # BFCL: an answer that is not a list checks no item types
        return _wrong(
            "type_error:nested",
            f"Nested type checking failed for parameter {param!r}. Parameter value: {value!r}.",
        )
    answer_type = _answer_type(accepted)
    if answer_type is not None and type(value) is answer_type:
        return RIGHT
    return _wrong(
        "type_error:simple",
        f"Incorrect type for parameter {param!r}. Expected type {declared}, got "
        f"{type(value).__name__}. Parameter value: {value!r}.",
    )


def standardize(text: str) -> str:
    """A string as BFCL compares it: no spaces or `,./-_*^`, lower case, `'` as `"`."""
    return _PUNCTUATION.sub("", text).lower().replace("'", '"')


def _same(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _string_check(param: str, value: str, accepted: Sequence[Any]) -> Verdict:
    if standardize(value) not in [standardize(a) for a in accepted if type(a) is str]:
        return _wrong(
            "value_error:string",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {list(accepted)}.",
        )
    return RIGHT


def _list_check(param: str, value: list[Any], accepted: Sequence[Any]) -> Verdict:
    mine = [_same(v) for v in value]
    options = [[_same(v) for v in option] for option in accepted if isinstance(option, list)]
    if mine not in options:
        return _wrong(
            "value_error:list/tuple",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {list(accepted)}.",
        )
    return RIGHT


def _dict_check(param: str, value: dict[str, Any], accepted: Sequence[Any]) -> Verdict:
    verdict = _wrong("dict_checker:unclear", f"No accepted value of {param!r} matches.")
    for option in accepted:
        if option == "" or not isinstance(option, dict):
            continue
        verdict = RIGHT
        for key, item in value.items():
            if key not in option:
                verdict = _wrong("value_error:dict_key", f"Unexpected dict key parameter: {key!r}.")
                break
            if _same(item) not in [_same(o) for o in option[key]]:
                verdict = _wrong(
                    "value_error:dict_value", f"Invalid value for parameter {key!r}: {item!r}."
                )
                break
        if verdict.valid:
            for key, options in option.items():
                if key not in value and "" not in options:
                    verdict = _wrong(
                        "value_error:dict_key", f"Missing dict key parameter: {key!r}."
                    )
                    break
        if verdict.valid:
            return RIGHT
    return verdict


def _list_dict_check(param: str, value: list[Any], accepted: Sequence[Any]) -> Verdict:
    verdict = _wrong("list_dict_checker:unclear", f"No accepted value of {param!r} matches.")
    for option in accepted:
        if not isinstance(option, list) or len(value) != len(option):
            verdict = _wrong(
                "value_error:list_dict_count", "Wrong number of dictionaries in the list."
            )
            continue
        for item, expected in zip(value, option, strict=True):
            verdict = (
                _dict_check(param, item, [expected])
                if isinstance(item, dict)
                else _wrong("value_error:list_dict", f"{item!r} is not a dict.")
            )
            if not verdict.valid:
                break
        if verdict.valid:
            return RIGHT
    return verdict
