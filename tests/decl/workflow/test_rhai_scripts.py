"""rhai scripts of the original framework: raf cannot run rhai, so a rhai tool is read as
a function tool of its name whose body is bound in Python, and a rhai script node of a
graph workflow is refused with what to write instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raf.core.contents import FunctionResultContent
from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.decl.workflow import DeclWorkflowBuilder
from raf.testing import ScriptedChatClient, call, reply

LEGACY = Path(__file__).resolve().parents[2] / "data" / "dialects" / "original" / "legacy.json"
ENV = {"LEGACY_KEY": "k-legacy"}


def _builder(client: ScriptedChatClient) -> DeclAgentBuilder:
    made = DeclAgentBuilder().with_environment(ENV).from_file(LEGACY).with_chat_client(client)

    def lookup(key: str = "") -> str:
        """Look a key up."""
        return f"found {key}"

    made.register_factory("lookup", lambda context: lookup)
    return made


async def test_a_rhai_tool_runs_the_python_function_bound_to_its_name():
    def double(x: int) -> int:
        """Twice x."""
        return x * 2

    client = ScriptedChatClient([reply("", call("double", x=21)), "it is 42"])
    made = _builder(client)
    (warning,) = [w for w in made.warnings if "rhai" in str(w)]
    assert warning.line == 9 and warning.key_path == "tools[2].kind"
    assert "read as a function tool named 'double'" in warning.message
    agent = made.register_factory("double", lambda context: double).build()
    response = await agent.run("double 21")
    assert response.text == "it is 42"
    (result,) = client.requests[1].messages[-1].contents
    assert isinstance(result, FunctionResultContent) and result.result == 42


def test_an_unbound_rhai_tool_is_named_with_what_to_bind():
    with pytest.raises(ValidationProblems) as caught:
        _builder(ScriptedChatClient([])).build()
    (problem,) = [p for p in caught.value.problems if "'double'" in p.message]
    assert problem.line == 9
    assert "register_factory('double'" in problem.message


def test_a_rhai_script_node_is_refused_with_what_to_write_instead(tmp_path):
    path = tmp_path / "graph.json"
    graph = {
        "start_node_id": "shout",
        "nodes": [{"id": "shout", "type": "script", "language": "rhai", "script": 'msg + "!"'}],
        "edges": [],
    }
    path.write_text(json.dumps(graph, indent=1), encoding="utf-8")
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_file(path)
    (problem,) = caught.value.problems
    assert problem.key_path == "nodes[0].language" and problem.line == 7
    assert "'shout'" in problem.message and "rhai" in problem.message
    assert "function node" in problem.message and "expression" in problem.message
