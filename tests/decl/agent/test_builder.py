"""DeclAgentBuilder's API misused: every mistake is a RafError saying what and where."""

from __future__ import annotations

import pytest

from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient

FUNCTION_DOC = "name: a\ntools:\n  - {kind: function, name: f}\n"


def test_from_dict_refuses_what_is_not_a_mapping():
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_dict([1, 2])  # type: ignore[arg-type]
    assert "an agent document must be a mapping of keys, got list" in str(info.value)


def test_a_raising_factory_is_a_located_problem():
    def factory(context: object) -> object:
        raise ZeroDivisionError("division by zero")

    builder = DeclAgentBuilder().from_yaml_str(FUNCTION_DOC).register_factory("f", factory)
    with pytest.raises(ValidationProblems) as info:
        builder.with_chat_client(ScriptedChatClient([])).build()
    (problem,) = info.value.problems
    assert (problem.line, problem.key_path) == (3, "tools[0].kind")
    assert problem.message == "the factory for 'f' failed: ZeroDivisionError: division by zero"


def test_a_raising_code_tool_factory_is_reported_without_a_document_location():
    def factory(context: object) -> object:
        raise RuntimeError("no database")

    builder = DeclAgentBuilder().from_yaml_str("name: a\n").with_tool("db", factory)
    with pytest.raises(ValidationProblems) as info:
        builder.with_chat_client(ScriptedChatClient([])).build()
    (problem,) = info.value.problems
    assert (
        problem.message == "with_tool('db'): the factory for 'db' failed: RuntimeError: no database"
    )
    assert (problem.file, problem.line) == (None, None)
