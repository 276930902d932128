"""Agent documents with `template: {format: mustache}`, `inputSchema` and `outputSchema`
in both dialects: rendered, checked and refused where the document says."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.clients.openai.client import OpenAIChatClient
from raf.core.errors import ConfigurationError, OutputValidationError, ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient

ORIGINAL = """\
kind: Prompt
name: support
instructions: |-
  Help {{customer}} in {{language}}.
template:
  format: mustache
  variables:
    language: English
inputSchema:
  properties:
    - name: customer
      kind: string
      required: true
    - name: tier
      kind: integer
outputSchema:
  properties:
    - name: reply
      kind: string
      required: true
"""

JSON_SCHEMA = """\
kind: Prompt
name: support
template:
  format: {kind: Mustache}
  content: "Help {{customer}} (tier {{tier}})."
inputSchema:
  type: object
  properties:
    customer: {type: string}
    tier: {type: integer, default: 1}
  required: [customer]
"""


def build(tmp_path: Path, text: str, client: object) -> object:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    return DeclAgentBuilder().from_file(path).with_chat_client(client).build()  # type: ignore[arg-type]


async def test_original_dialect_template_input_and_output_schemas(tmp_path: Path) -> None:
    client = ScriptedChatClient(['{"reply": "Hello Ada"}'])
    agent = build(tmp_path, ORIGINAL, client)
    response = await agent.run("hi", variables={"customer": "Ada"})  # type: ignore[attr-defined]
    assert client.requests[0].system == "Help Ada in English."
    assert response.value == {"reply": "Hello Ada"}
    schema = client.requests[0].options.output_schema
    assert schema is not None and schema.json_schema["required"] == ["reply"]


async def test_json_schema_inputs_take_their_defaults(tmp_path: Path) -> None:
    client = ScriptedChatClient(["ok"])
    agent = build(tmp_path, JSON_SCHEMA, client)
    await agent.run("hi", variables={"customer": "Bo"})  # type: ignore[attr-defined]
    assert client.requests[0].system == "Help Bo (tier 1)."


async def test_a_missing_variable_names_where_it_is_declared(tmp_path: Path) -> None:
    agent = build(tmp_path, ORIGINAL, ScriptedChatClient([]))
    with pytest.raises(ConfigurationError) as caught:
        await agent.run("hi")  # type: ignore[attr-defined]
    message = str(caught.value)
    assert "{{customer}}" in message
    assert f"declared at {tmp_path / 'agent.yaml'}:11:" in message


async def test_a_variable_of_the_wrong_type_is_located(tmp_path: Path) -> None:
    agent = build(tmp_path, JSON_SCHEMA, ScriptedChatClient([]))
    with pytest.raises(ConfigurationError) as caught:
        await agent.run("hi", variables={"customer": 7})  # type: ignore[attr-defined]
    assert caught.value.key_path == f"{tmp_path / 'agent.yaml'} variables.customer"
    assert "7 is not of type 'string'" in str(caught.value)
    assert "declared at" in str(caught.value) and "agent.yaml:9:" in str(caught.value)


def test_a_default_of_the_wrong_type_is_refused_at_its_line(tmp_path: Path) -> None:
    text = ORIGINAL.replace("    language: English\n", "    language: English\n    tier: high\n")
    with pytest.raises(ValidationProblems) as caught:
        build(tmp_path, text, ScriptedChatClient([]))
    (problem,) = caught.value.problems
    assert problem.key_path == "template.variables.tier" and problem.line == 9
    assert "'high' is not of type 'integer'" in problem.message


def test_a_placeholder_nobody_declares_is_refused(tmp_path: Path) -> None:
    text = ORIGINAL.replace("{{language}}", "{{dialect}}")
    with pytest.raises(ValidationProblems, match="neither template.variables nor inputSchema"):
        build(tmp_path, text, ScriptedChatClient([]))


def test_an_output_schema_openai_cannot_express_is_refused_at_its_line(tmp_path: Path) -> None:
    text = (
        "name: a\noutputSchema:\n  type: object\n  properties:\n"
        "    scores: {type: object, additionalProperties: {type: number}}\n"
    )
    client = OpenAIChatClient("m", base_url="http://127.0.0.1:9/v1", api_key="sk-x-0123456789")
    with pytest.raises(ValidationProblems) as caught:
        build(tmp_path, text, client)
    (problem,) = caught.value.problems
    assert problem.key_path == "outputSchema" and problem.line == 3
    assert "'final_result.scores'" in problem.message and "free keys" in problem.message


async def test_an_answer_outside_the_output_schema_is_an_error(tmp_path: Path) -> None:
    client = ScriptedChatClient(['{"reply": 5}', '{"answer": "x"}'])
    agent = build(tmp_path, ORIGINAL, client)
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("hi", variables={"customer": "Ada"})  # type: ignore[attr-defined]
    assert caught.value.raw_text == '{"answer": "x"}'
    assert "'reply' is a required property" in caught.value.errors
