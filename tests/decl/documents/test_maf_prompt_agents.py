"""Prompt agents as Microsoft Agent Framework writes them: reference connections without a
name, list-form function parameters, `apiType` among the options, outputSchema properties
in the mapping form with `type:`, and every approvalMode form."""

from __future__ import annotations

import pytest

from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.decl.documents.loader import load
from raf.decl.documents.output_schema import as_json_schema
from raf.decl.documents.tool_decls import FunctionToolDecl
from raf.testing import ScriptedChatClient


def test_reference_connection_without_a_name_is_the_one_registered() -> None:
    client = ScriptedChatClient([])
    text = "name: a\nmodel:\n  id: gpt-4o\n  connection: {kind: reference}\n"
    agent = DeclAgentBuilder().from_yaml_str(text).with_connection("prod", client=client).build()
    assert agent.leaf_client is client
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_str(text).build()
    assert "connection 'default' is not registered" in str(info.value)


def test_list_form_parameters_become_a_json_schema() -> None:
    text = """
name: a
instructions: hi
tools:
  - kind: function
    name: get_weather
    description: the weather
    parameters:
      - name: location
        kind: string
        required: true
      - name: unit
        kind: string
        enum: [c, f]
"""
    (tool,) = load(text).decl.tools
    assert isinstance(tool, FunctionToolDecl) and tool.parameters is not None
    schema = as_json_schema(tool.parameters)
    assert schema["properties"]["location"] == {"type": "string"}
    assert schema["properties"]["unit"] == {"type": "string", "enum": ["c", "f"]}
    assert schema["required"] == ["location"]


def test_api_type_among_the_options_is_read_as_the_model_s() -> None:
    text = "name: a\nmodel:\n  id: gpt-4o\n  options:\n    apiType: Responses\n    temperature: 1\n"
    loaded = load(text)
    assert not [w for w in loaded.warnings if "apiType" in str(w)]
    assert loaded.decl.model.api_type == "responses"  # type: ignore[union-attr]
    chat = "name: a\nmodel:\n  id: gpt-4o\n  options:\n    apiType: Chat\n"
    assert not [w for w in load(chat).warnings if "apiType" in str(w)]


def test_output_schema_mapping_form_with_type() -> None:
    text = """
name: a
instructions: hi
outputSchema:
  properties:
    language:
      type: string
      required: true
      description: The language.
    count:
      type: integer
      required: false
"""
    schema = load(text).decl.output_json_schema()
    assert schema is not None
    assert schema["properties"]["language"] == {"type": "string", "description": "The language."}
    assert schema["properties"]["count"]["type"] == "integer"
    assert schema["required"] == ["language"]


@pytest.mark.parametrize(
    "mode",
    [
        "always",
        "never",
        "{kind: always}",
        "{kind: never}",
        "{kind: requireSpecific, alwaysRequireApprovalTools: [a], neverRequireApprovalTools: [b]}",
    ],
)
def test_every_approval_mode_form(mode: str) -> None:
    text = (
        "name: a\ninstructions: hi\ntools:\n  - kind: mcp\n    name: docs\n"
        f"    url: https://example.com/mcp\n    approvalMode: {mode}\n"
    )
    load(text)


MANIFEST = """\
name: manifest
description: the manifest's own description
template:
  kind: Prompt
  name: helper
  description: helps
  model:
    id: gpt-4o
  instructions: Greet {{ who }} in {{language}}.
parameters:
  who:
    type: string
    default: the user
  language:
    kind: string
    default: French
resources:
  - kind: model
    id: gpt-4o
    name: chat
"""


def test_template_manifest_is_read_as_its_template_with_parameter_defaults() -> None:
    loaded = load(MANIFEST)
    assert loaded.decl.name == "helper"
    assert loaded.decl.description == "helps"
    assert loaded.decl.instructions == "Greet the user in French."
    assert any("an agent manifest" in str(w) for w in loaded.warnings)


def test_template_manifest_parts_keep_their_lines() -> None:
    broken = MANIFEST.replace(
        "    id: gpt-4o\n  instructions", "    id: gpt-4o\n  bogus: 1\n  instructions"
    )
    with pytest.raises(ValidationProblems) as caught:
        load(broken)
    (problem,) = caught.value.problems
    assert "bogus" in str(problem) and problem.line == 9


def test_template_manifest_resource_without_kind_is_located() -> None:
    broken = MANIFEST.replace("  - kind: model\n", "  - notkind: model\n")
    with pytest.raises(ValidationProblems) as caught:
        load(broken)
    assert "a resource is a mapping with a kind" in str(caught.value)


_INTERNAL = ("function-after", "function-before", "list[", "dict[", "union[", "literal[", "model-")


@pytest.mark.parametrize(
    "body",
    [
        "outputSchema:\n  properties: 3\n",
        "outputSchema:\n  properties:\n    a: [1, 2]\n",
        "outputSchema:\n  properties:\n    - {kind: string}\n",
        "tools:\n  - kind: function\n    name: f\n    parameters: 7\n",
        (
            "tools:\n  - kind: mcp\n    name: m\n    url: https://x.example/mcp\n"
            "    approvalMode: {kind: 5}\n"
        ),
        "model:\n  connection: {kind: reference, name: 4}\n",
        "contexts:\n  - kind: memory\n    config: [1]\n",
    ],
)
def test_no_problem_names_pydantic_internals(body: str) -> None:
    with pytest.raises(ValidationProblems) as caught:
        load("name: a\ninstructions: hi\n" + body)
    for problem in caught.value.problems:
        shown = str(problem).lower()
        assert not any(word in shown for word in _INTERNAL), shown
        assert problem.line is not None


@pytest.mark.parametrize(
    ("kind", "name", "raf_kind", "raf_name"),
    [
        ("web_search", "WebSearch", "web", "web_search"),
        ("web_search", "search", "web", "web_search"),
        ("code_interpreter", "CodeRunner", "code", "code_interpreter"),
    ],
)
def test_a_hosted_tool_s_own_name_is_read_past(
    kind: str, name: str, raf_kind: str, raf_name: str
) -> None:
    """MAF names every tool; a web search or code interpreter is still the one tool."""
    loaded = load(f"name: a\ninstructions: hi\ntools:\n  - kind: {kind}\n    name: {name}\n")
    (tool,) = loaded.decl.tools
    assert (tool.kind, tool.name) == (raf_kind, raf_name)


def test_raf_s_own_web_tool_still_checks_its_name() -> None:
    with pytest.raises(ValidationProblems) as caught:
        load("name: a\ninstructions: hi\ntools:\n  - kind: web\n    name: search\n")
    (problem,) = caught.value.problems
    assert problem.line == 5 and "web_search" in str(problem)
