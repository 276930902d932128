"""Documents in YAML, JSON and TOML; environment references; secrets kept out of sight."""

from __future__ import annotations

import json
import logging

import pytest

from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder, json_schema
from raf.decl.documents.schema import ModelDecl
from raf.testing import ScriptedChatClient
from tests.decl.helpers import PlainTool

SECRET = "sk-test-very-secret-4242"


def test_json_schema_uses_camel_case_and_forbids_unknown_keys():
    schema = json_schema()
    assert schema["title"] == "raf agent document"
    props = schema["properties"]
    assert {"maxToolRounds", "subAgents", "contexts", "tools", "compression", "template"} <= set(
        props
    )
    assert schema["additionalProperties"] is False
    assert json.loads(json.dumps(schema)) == schema


@pytest.mark.parametrize("form", ["$RAF_T_MODEL", "${RAF_T_MODEL}", "=Env.RAF_T_MODEL"])
def test_environment_references_are_read(form, monkeypatch):
    monkeypatch.setenv("RAF_T_MODEL", "gpt-4o-mini")
    builder = DeclAgentBuilder().from_yaml_str(f"name: a\nmodel:\n  id: '{form}'\n")
    model = builder.declaration.model
    assert isinstance(model, ModelDecl) and model.id == "gpt-4o-mini"


def test_an_explicit_environment_can_be_given():
    builder = DeclAgentBuilder().with_environment({"WHO": "team"})
    assert builder.from_yaml_str("name: a\ninstructions: $WHO\n").declaration.instructions == "team"


def test_secrets_never_appear_in_reprs_errors_or_logs(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("RAF_T_KEY", SECRET)
    text = "name: a\nmodel:\n  id: gpt\n  connection:\n    apiKey: $RAF_T_KEY\n"
    builder = DeclAgentBuilder().from_yaml_str(text)
    assert SECRET not in repr(builder.declaration)
    assert SECRET not in builder.declaration.model_dump_json()
    model = builder.declaration.model
    assert isinstance(model, ModelDecl) and model.connection is not None
    assert model.connection.api_key is not None
    assert model.connection.api_key.get_secret_value() == SECRET
    # a secret put where a number belongs is reported without its value
    bad = "name: a\nmodel:\n  connection:\n    apiKey: $RAF_T_KEY\n    timeout: $RAF_T_KEY\n"
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_str(bad)
    assert "model.connection.timeout: expected a number" in str(info.value)
    assert SECRET not in str(info.value)
    assert SECRET not in caplog.text


def test_json_documents_are_located(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text('{\n  "name": "a",\n  "maxToolRound": 2\n}\n', encoding="utf-8")
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_json_file(path)
    (problem,) = info.value.problems
    assert (problem.line, problem.column, problem.key_path) == (3, 3, "maxToolRound")
    assert problem.message == "unknown key 'maxToolRound'; did you mean 'maxToolRounds'?"


def test_json_syntax_error_is_located(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text('{\n  "name": "a",\n}\n', encoding="utf-8")
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_json_file(path)
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (3, 1)
    assert problem.message.startswith("JSON syntax error")


def test_toml_documents_build_and_are_located(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text(
        'name = "a"\nmaxToolRounds = 3\n\n[[tools]]\nkind = "function"\nname = "echo"\n',
        encoding="utf-8",
    )
    agent = (
        DeclAgentBuilder()
        .from_toml_file(path)
        .register_factory("echo", lambda c: PlainTool("echo"))
        .with_chat_client(ScriptedChatClient([]))
        .build()
    )
    assert agent.max_tool_rounds == 3 and [t.name for t in agent.tools] == ["echo"]
    path.write_text('name = "a"\n\n[model.options]\ntemprature = 1\n', encoding="utf-8")
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_toml_file(path)
    (problem,) = info.value.problems
    assert (problem.line, problem.key_path) == (4, "model.options.temprature")
    assert "did you mean 'temperature'?" in problem.message


def test_toml_syntax_error_is_located(tmp_path):
    path = tmp_path / "agent.toml"
    path.write_text('name = "a"\nmaxToolRounds = = 3\n', encoding="utf-8")
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_toml_file(path)
    assert info.value.problems[0].line == 2


def test_from_dict_builds():
    agent = (
        DeclAgentBuilder()
        .from_dict({"name": "d", "instructions": "hi", "maxToolRounds": 4})
        .with_chat_client(ScriptedChatClient([]))
        .build()
    )
    assert (agent.name, agent.instructions, agent.max_tool_rounds) == ("d", "hi", 4)


def test_function_tool_without_a_factory_is_a_located_build_error():
    builder = DeclAgentBuilder().from_yaml_str(
        "name: a\ntools:\n  - kind: function\n    name: lookup_order\n"
    )
    with pytest.raises(ValidationProblems) as info:
        builder.with_chat_client(ScriptedChatClient([])).build()
    (problem,) = info.value.problems
    assert (problem.line, problem.column, problem.key_path) == (3, 11, "tools[0].kind")
    assert ".register_factory('lookup_order', factory)" in problem.message


def test_a_factory_may_return_a_plain_function():
    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return "shipped"

    agent = (
        DeclAgentBuilder()
        .from_yaml_str(
            "name: a\ntools:\n  - {kind: function, name: lookup, description: Find orders}\n"
        )
        .register_factory("lookup", lambda c: lookup_order)
        .with_chat_client(ScriptedChatClient([]))
        .build()
    )
    assert [(t.name, t.description) for t in agent.tools] == [("lookup", "Find orders")]


def test_connections_are_resolved_by_reference():
    client = ScriptedChatClient([])
    text = "name: a\nmodel:\n  connection: {kind: reference, name: prod}\n"
    agent = DeclAgentBuilder().from_yaml_str(text).with_connection("prod", client=client).build()
    assert agent.leaf_client is client
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_str(text).build()
    assert "connection 'prod' is not registered" in str(info.value)


def test_model_options_become_default_chat_options():
    text = "name: a\nmodel:\n  id: m1\n  options: {temperature: 0.2, maxTokens: 99, topP: 0.5}\n"
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(ScriptedChatClient([])).build()
    options = agent.default_options
    # the client given in code replaces the document's model, so its name is not kept
    assert (options.model_id, options.temperature, options.max_tokens, options.top_p) == (
        None,
        0.2,
        99,
        0.5,
    )


async def test_template_variables_fill_the_instructions():
    text = "name: a\ninstructions: Help {{who}}.\ntemplate:\n  variables: {who: customers}\n"
    client = ScriptedChatClient(["ok", "ok"])
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(client).build()
    await agent.run("hi")
    assert client.requests[0].system == "Help customers."
    await agent.run("hi", variables={"who": "suppliers"})
    assert client.requests[1].system == "Help suppliers."


def test_a_model_string_uses_the_model_resolver(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    agent = DeclAgentBuilder().from_yaml_str("name: a\nmodel: openai:gpt-4o-mini\n").build()
    assert "gpt-4o-mini" in repr(agent.leaf_client)


def test_an_unknown_policy_warns_and_fails_closed(caplog, tmp_path):
    from raf.tools.workspace import ScopePolicy

    text = "name: a\ncontexts:\n  - kind: workspace\n    config: {root: ., policy: sometimes}\n"
    builder = DeclAgentBuilder().from_yaml_str(text, base_dir=tmp_path)
    (warning,) = builder.warnings
    assert (warning.line, warning.key_path) == (4, "contexts[0].config.policy")
    assert "failing closed to 'deny'" in warning.message
    assert "unknown workspace policy 'sometimes'" in caplog.text
    agent = builder.with_chat_client(ScriptedChatClient([])).build()
    (workspace,) = [p for p in agent.context_providers if p.kind == "workspace"]
    assert workspace.scope.policy is ScopePolicy.DENY_OUTSIDE


def test_the_json_schema_is_valid_and_accepts_the_examples():
    import jsonschema
    import yaml

    from .test_broken import BROKEN

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    examples = sorted((BROKEN.parents[3] / "examples").glob("*/agent.yaml"))
    assert len(examples) == 3
    for path in examples:
        validator.validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    bad = yaml.safe_load((BROKEN / "08_misspelt_top_key.yaml").read_text(encoding="utf-8"))
    assert not validator.is_valid(bad)


def test_a_secret_in_a_kind_or_name_field_is_not_echoed(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("RAF_T_KEY", SECRET)
    text = (
        "name: a\nmodel:\n  connection: {kind: $RAF_T_KEY}\n"
        "tools:\n  - kind: $RAF_T_KEY\n  - {kind: web, name: $RAF_T_KEY}\n"
        "contexts:\n  - kind: workspace\n    config: {policy: $RAF_T_KEY, root: $RAF_T_KEY}\n"
    )
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_str(text, base_dir=tmp_path)
    problems = info.value.problems
    assert [p.key_path for p in problems] == [
        "model.connection.kind",
        "tools[0].kind",
        "tools[1].name",
        "contexts[0].config.root",
    ]
    assert "expected one of: key, anonymous, reference, local" in problems[0].message
    warnings = getattr(info.value, "warnings", [])
    assert "unknown workspace policy (a value from the environment)" in str(warnings[0])
    everything = str(info.value) + " ".join(str(w) for w in warnings) + caplog.text
    assert SECRET not in everything and SECRET[:10] not in everything
