"""Each hand-made constructor of raf's hot paths makes what its public constructor makes,
field by field (a field added to the class and not set by its builder fails here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from raf.core import builders
from raf.core.contents import FunctionCallContent, FunctionResultContent, TextContent
from raf.core.messages import ChatMessage, Role

CALL = FunctionCallContent(call_id="c1", name="add", arguments={"a": 1})
CASES: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    (
        "message",
        lambda: builders.message(Role.TOOL, [CALL], "m1"),
        lambda: ChatMessage(role=Role.TOOL, contents=[CALL], message_id="m1"),
    ),
    (
        "message without an id",
        lambda: builders.message(Role.ASSISTANT, []),
        lambda: ChatMessage(role=Role.ASSISTANT),
    ),
    (
        "text message",
        lambda: builders.text_message(Role.SYSTEM, "Be brief."),
        lambda: ChatMessage(role=Role.SYSTEM, contents=[TextContent(text="Be brief.")]),
    ),
    (
        "function result",
        lambda: builders.function_result("c1", "add", 3),
        lambda: FunctionResultContent(call_id="c1", name="add", result=3),
    ),
    (
        "function result without a name",
        lambda: builders.function_result("c2", None, {"a": [1]}),
        lambda: FunctionResultContent(call_id="c2", result={"a": [1]}),
    ),
]


@pytest.mark.parametrize(("name", "built", "constructed"), CASES, ids=[c[0] for c in CASES])
def test_a_builder_makes_what_the_public_constructor_makes(
    name: str, built: Callable[[], Any], constructed: Callable[[], Any]
) -> None:
    made, expected = built(), constructed()
    assert type(made) is type(expected)
    for field in dataclasses.fields(expected):
        assert getattr(made, field.name) == getattr(expected, field.name), field.name
    assert made == expected and repr(made) == repr(expected)


def test_a_message_keeps_the_list_it_is_given() -> None:
    contents: list[Any] = [CALL]
    assert builders.message(Role.ASSISTANT, contents).contents is contents
