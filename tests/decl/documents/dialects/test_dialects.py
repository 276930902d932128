"""Documents in the original framework's and Microsoft Agent Framework's dialects load
unchanged: each is validated, built and run on a scripted model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from raf import FinishReason
from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder, load_file
from raf.decl.documents.context_decls import CompressionDecl
from raf.decl.documents.schema import FILE_TOOLS, McpToolDecl, ModelDecl
from raf.testing import ScriptedChatClient, call, reply

DATA = Path(__file__).parents[3] / "data" / "dialects"
DOCUMENTS = sorted(
    p.relative_to(DATA).as_posix()
    for p in DATA.rglob("*")
    if p.suffix in (".yaml", ".json") and not {"skills", "orchestrations"} & set(p.parts)
)
"""Every agent document here but the orchestrations (each run with its members' own
scripted models in test_original_orchestrations.py)."""
ENV = {"WEATHER_API_KEY": "k-weather", "DOCS_API_KEY": "k-docs", "LEGACY_KEY": "k-legacy"}
CODE_BOUND = ("GetWeather", "lookup", "issues", "docs", "double")
"""Tools bound in code in these tests (MCP servers replaced by a stand-in)."""


def copied(tmp_path: Path, name: str) -> Path:
    """The document's folder copied to tmp_path (memory folders are written beside it)."""
    shutil.copytree(DATA, tmp_path / "data")
    return tmp_path / "data" / name


def builder(path: Path, client: ScriptedChatClient, seen: dict[str, Any]) -> DeclAgentBuilder:
    made = DeclAgentBuilder().with_environment(ENV).from_file(path).with_chat_client(client)

    def factory(context: Any) -> Any:
        seen[context.name] = context

        def tool(city: str = "") -> str:
            return f"{context.name} ran"

        return tool

    for name in CODE_BOUND:
        made.register_factory(name, factory)
    made.with_connection("shared", client=client)
    return made


def test_every_document_is_found():
    assert len(DOCUMENTS) == 10


@pytest.mark.parametrize("name", DOCUMENTS)
async def test_document_validates_builds_and_runs(tmp_path, name):
    path = copied(tmp_path, name)
    loaded = load_file(path, environ=ENV, check_extras=False)
    assert loaded.decl.name
    # a document with an outputSchema gets answers of that shape
    answer = (
        json.dumps(_example(loaded.decl.output_json_schema()))
        if loaded.decl.output_schema
        else "done"
    )
    client = ScriptedChatClient([answer])
    agent = builder(path, client, {}).build()
    response = await agent.run("go")
    assert response.finish_reason is FinishReason.STOP
    assert response.text == answer
    assert client.requests, "the model was called"


async def test_original_prompt_agent_keeps_every_setting(tmp_path):
    path = copied(tmp_path, "original/prompt_agent.yaml")
    client = ScriptedChatClient(['{"city": "Lisbon", "days": 3}'])
    made = builder(path, client, {})
    warnings = [str(w) for w in made.warnings]
    assert any("model.options.kind" in w and "no meaning" in w for w in warnings)
    agent = made.build()
    assert made.declaration.display_name == "Trip Planner"
    options = agent.default_options
    assert options.max_tokens == 800 and options.temperature == 0.3
    assert options.additional == {"frequency_penalty": 0.2, "presence_penalty": 0.1}
    assert agent.output_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "where to go"},
            "days": {"type": "integer", "description": "how long to stay"},
            "advice": {"type": "string", "description": "one sentence"},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    }
    response = await agent.run("plan")
    assert client.requests[0].options.max_tokens == 800
    assert response.value == {"city": "Lisbon", "days": 3}


async def test_original_file_and_shell_give_eleven_workspace_tools(tmp_path):
    from raf.context.workspace import WorkspaceContextProvider

    path = copied(tmp_path, "original/tools_agent.yaml")
    (path.parent / "notes.txt").write_text("hello", encoding="utf-8")
    client = ScriptedChatClient([reply("", call("read_file", path="notes.txt")), "it says hello"])
    agent = builder(path, client, {}).build()
    workspace = next(p for p in agent.context_providers if isinstance(p, WorkspaceContextProvider))
    assert sorted(t.name for t in workspace.tools) == sorted([*FILE_TOOLS, "run_command"])
    response = await agent.run("read notes.txt")
    results = [r for m in response.messages for r in m.function_results]
    assert results[0].error is None and "hello" in str(results[0].result)


def test_original_llama_with_a_gguf_endpoint_is_a_local_model(tmp_path):
    loaded = load_file(copied(tmp_path, "original/local_agent.yaml"), check_extras=False)
    model = loaded.decl.model
    assert isinstance(model, ModelDecl) and model.provider == "local"
    assert model.connection is not None
    assert model.connection.model_path == "models/granite-4.0-h-350m-Q4_K_M.gguf"
    assert model.connection.endpoint is None
    assert model.options.max_tokens == 256


async def test_original_cli_agent_bundle_memory_skills_and_compression(tmp_path):
    path = copied(tmp_path, "original/cli_agent.yaml")
    client = ScriptedChatClient(["ok"])
    made = builder(path, client, {})
    agent = made.build()
    kinds = [p.kind for p in agent.context_providers]
    assert kinds == ["history", "memory", "skills", "compression"]
    assert agent.max_tool_rounds == 4
    warnings = [str(w) for w in made.warnings]
    assert any("'max_tool_rounds' is the snake_case spelling" in w for w in warnings)
    memory = agent.context_providers[1]
    assert Path(memory.directory) == path.parent / "logs" / "super-brain"
    compression = agent.context_providers[3]
    assert compression.budget == 6000
    assert compression.strategy.keep_last == 12
    await agent.run("hi")
    assert "release-notes" in client.requests[0].system


def test_original_mcp_keys_at_the_tool_top_level(tmp_path):
    loaded = load_file(copied(tmp_path, "original/coding_team.yaml"), check_extras=False)
    tool = loaded.decl.tools[0]
    assert isinstance(tool, McpToolDecl)
    assert tool.config.url == "http://127.0.0.1:9/mcp"
    assert tool.config.tools == ["list_issues"]
    assert tool.config.approval_mode == "always"
    assert [s.name for s in loaded.decl.sub_agents] == ["planner", "reviewer"]


async def test_legacy_json_format(tmp_path):
    path = copied(tmp_path, "original/legacy.json")
    made = builder(path, ScriptedChatClient(["ok"]), {})
    decl = made.declaration
    assert decl.name == "legacy-helper"
    assert isinstance(decl.model, ModelDecl) and decl.model.id == "gpt-4o-mini"
    assert decl.model.connection is not None and decl.model.connection.api_key is not None
    assert decl.model.connection.api_key.get_secret_value() == "k-legacy"
    assert [(t.kind, t.name) for t in decl.tools] == [
        ("file", "read_file"),
        ("shell", "run_command"),
        ("function", "double"),
        ("custom", "lookup"),
    ]
    assert any("rhai" in str(w) and "'double'" in str(w) for w in made.warnings)
    agent = made.build()
    assert sorted(t.name for t in agent.tools) == ["double", "lookup", "read_file", "run_command"]


async def test_maf_weather_agent(tmp_path):
    path = copied(tmp_path, "maf/weather.yaml")
    seen: dict[str, Any] = {}
    answer = '{"language": "en", "answer": "Cold."}'
    client = ScriptedChatClient([reply("", call("GetWeather", city="Oslo")), answer])
    made = builder(path, client, seen)
    warned = " ".join(str(w) for w in made.warnings)
    assert "model.publisher" in warned and "model.kind" in warned
    agent = made.build()
    assert made.declaration.kind == "prompt"
    options = agent.default_options
    assert (options.max_tokens, options.top_p, options.tool_choice) == (500, 0.9, "auto")
    assert options.additional == {"parallel_tool_calls": False}
    assert agent.instructions is not None
    assert agent.instructions.endswith("Give temperatures in Celsius.")
    assert agent.output_schema is not None
    assert agent.output_schema["required"] == ["language", "answer"]
    assert seen["GetWeather"].parameters == {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "the city"},
            "unit": {
                "type": "string",
                "description": "celsius or fahrenheit",
                "enum": ["celsius", "fahrenheit"],
            },
        },
        "required": ["location"],
        "additionalProperties": False,
    }
    response = await agent.run("weather in Oslo?")
    assert response.value == {"language": "en", "answer": "Cold."}
    results = [r for m in response.messages for r in m.function_results]
    assert results[0].result == "GetWeather ran"


def test_maf_connection_key_from_the_environment(tmp_path):
    loaded = load_file(copied(tmp_path, "maf/weather.yaml"), environ=ENV, check_extras=False)
    model = loaded.decl.model
    assert isinstance(model, ModelDecl) and model.connection is not None
    assert model.connection.kind == "key" and model.provider == "openai"
    assert model.connection.api_key is not None
    assert model.connection.api_key.get_secret_value() == "k-weather"


def test_maf_mcp_tool_top_level_keys(tmp_path):
    loaded = load_file(copied(tmp_path, "maf/learn_mcp.yaml"), environ=ENV, check_extras=False)
    tool = loaded.decl.tools[0]
    assert isinstance(tool, McpToolDecl)
    assert tool.config.url == "http://127.0.0.1:9/mcp"
    assert tool.config.tools == ["search_docs", "delete_page"]
    # a tool listed in neither list needs approval, as in MAF
    assert tool.config.approval_mode == {
        "*": "always",
        "delete_page": "always",
        "search_docs": "never",
    }
    assert not [w for w in loaded.warnings if "apiType" in str(w)]
    assert isinstance(loaded.decl.model, ModelDecl) and loaded.decl.model.api_type == "responses"


async def test_maf_reference_connection_uses_the_registered_client(tmp_path):
    path = copied(tmp_path, "maf/reference.yaml")
    shared = ScriptedChatClient(["from the shared client"])
    agent = DeclAgentBuilder().from_file(path).with_connection("shared", client=shared).build()
    assert (await agent.run("hi")).text == "from the shared client"


# -- bad input ------------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_two_spellings_of_one_key_say_which_wins(tmp_path):
    path = write(
        tmp_path,
        "name: a\nmodel:\n  id: m\n  options:\n    maxTokens: 5\n    maxOutputTokens: 9\n",
    )
    loaded = load_file(path, check_extras=False)
    assert isinstance(loaded.decl.model, ModelDecl)
    assert loaded.decl.model.options.max_tokens == 5
    (warning,) = loaded.warnings
    assert (warning.line, warning.column) == (6, 5)
    assert "'maxTokens' wins" in warning.message and "'maxOutputTokens'" in warning.message


OPTIONS = "name: a\nmodel:\n  id: m\n  options:\n"


@pytest.mark.parametrize(
    ("text", "where", "hint"),
    [
        ("kind: Prompt\nname: a\ndisplayNme: A\n", (3, 1), "displayName"),
        (
            "name: a\nmodel:\n  id: m\n  options:\n    maxOutputTokns: 3\n",
            (5, 5),
            "maxOutputTokens",
        ),
        (
            "name: a\nmodel:\n  id: m\n  options:\n    max_output_tokns: 3\n",
            (5, 5),
            "max_output_tokens",
        ),
        ("name: a\ncompression:\n  kind: sliding_window\n  windowSiz: 3\n", (4, 3), "windowSize"),
    ],
)
def test_a_typo_in_either_dialect_is_located_with_a_suggestion(tmp_path, text, where, hint):
    with pytest.raises(ValidationProblems) as info:
        load_file(write(tmp_path, text), check_extras=False)
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == where
    assert f"did you mean {hint!r}" in problem.message


def test_strict_turns_warnings_into_errors(tmp_path):
    path = write(tmp_path, "name: a\nmodel:\n  id: m\n  publisher: someone\n")
    assert load_file(path, check_extras=False).warnings
    with pytest.raises(ValidationProblems) as info:
        load_file(path, check_extras=False, strict=True)
    (problem,) = info.value.problems
    assert problem.key_path == "model.publisher" and problem.line == 4


def test_an_ignored_key_is_named_never_silent(tmp_path):
    path = write(tmp_path, "name: a\ninputSchema:\n  properties: {}\ntokenCounter: tiktoken\n")
    messages = [str(w) for w in load_file(path, check_extras=False).warnings]
    assert not any("inputSchema" in m for m in messages)  # read: the template's variables
    assert any("tokenCounter" in m and "no compression" in m for m in messages)


def _example(schema: Any) -> Any:
    """A value of a document's output schema (every property filled)."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _example(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_example(schema.get("items") or {"type": "string"})]
    return {"integer": 1, "number": 1.5, "boolean": True}.get(str(kind), "x")


async def test_original_snake_case_json_reads_every_key_without_warnings(tmp_path):
    from raf.context.compression import CompressionProvider

    path = copied(tmp_path, "original/snake_agent.json")
    loaded = load_file(path, environ=ENV, check_extras=False)
    assert not loaded.warnings  # snake_case is how the original writes JSON
    decl = loaded.decl
    assert (decl.display_name, decl.max_tool_rounds) == ("Snake Agent", 4)
    (compression,) = decl.contexts
    config = compression.config
    assert isinstance(config, CompressionDecl)
    assert config.keep_last == 6 and config.token_counter == "estimate"
    assert [s.name for s in decl.sub_agents] == ["helper"]
    client = ScriptedChatClient(['{"answer": "yes"}'])
    agent = builder(path, client, {}).build()
    assert any(isinstance(p, CompressionProvider) for p in agent.context_providers)
    response = await agent.run("is it snake case?")
    assert response.value == {"answer": "yes"}
    assert client.requests[0].options.max_tokens == 300
    # the same keys in YAML are read too, each with a warning naming it
    yaml_text = "name: snake\ninstructions: Hi.\nmax_tool_rounds: 4\n"
    from raf.decl.documents.loader import load

    (warning,) = load(yaml_text, check_extras=False).warnings
    assert warning.key_path == "max_tool_rounds" and "snake_case" in warning.message
