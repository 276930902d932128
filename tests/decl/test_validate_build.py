"""What `build()` would refuse, validation reports first (tool config and models included);
what validation accepts, build builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder, load_file
from raf.testing import ScriptedChatClient


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    return path


BAD = [
    ("tools:\n  - kind: file\n    config: {maxReadBytes: -1}\n", (4, 28), "config.maxReadBytes"),
    ("tools:\n  - kind: shell\n    config: {outputCapp: 5}\n", (4, 14), "did you mean 'outputCap'"),
    ("tools:\n  - kind: shell\n    config: {network: maybe}\n", (4, 23), "true or false"),
    (
        "tools:\n  - kind: web\n    name: web_search\n    config: {maxBytes: 10}\n",
        (3, 5),
        "'maxBytes' does not apply to web_search",
    ),
    ("tools:\n  - kind: web\n    config: {backend: searxng}\n", (3, 5), "needs config.url"),
    ("tools:\n  - kind: web\n    config: {backend: bingo}\n", (4, 23), "brave, tavily"),
    ("tools:\n  - kind: code\n    config: {memoryMb: 0}\n", (4, 24), "config.memoryMb"),
    ("model:\n  id: m\n  provider: vllm\n", (3, 3), "needs connection.endpoint"),
    ("model: opneai:gpt-4o\n", (2, 8), "did you mean openai:gpt-4o"),
    (
        "compression:\n  kind: summarization\n  model: {id: m, provider: vllm}\n",
        (4, 10),
        "needs connection.endpoint",
    ),
]


@pytest.mark.parametrize(("body", "where", "says"), BAD)
def test_validation_reports_what_build_would_refuse(tmp_path, body, where, says):
    path = write(tmp_path, "name: a\n" + body)
    with pytest.raises(ValidationProblems) as info:
        load_file(path, check_extras=False)
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == where
    assert says in str(problem)


def test_code_tool_in_the_original_spelling_validates_and_builds(tmp_path):
    path = write(
        tmp_path,
        "name: a\ntools:\n  - kind: code\n    config: {backend: docker, timeout_secs: 5}\n",
    )
    loaded = load_file(path, check_extras=False)
    (warning,) = loaded.warnings
    assert "code backend 'docker'" in warning.message and warning.line == 4
    agent = DeclAgentBuilder().from_loaded(loaded).with_chat_client(ScriptedChatClient([])).build()
    (tool,) = agent.tools
    assert tool.name == "code_interpreter" and tool.timeout_s == 5


def test_file_tool_limits_reach_the_tools(tmp_path):
    path = write(tmp_path, "name: a\ntools:\n  - kind: file\n    config: {maxReadLines: 7}\n")
    agent = DeclAgentBuilder().from_file(path).with_chat_client(ScriptedChatClient([])).build()
    assert len(agent.tools) == 10
    assert {t.limits.max_read_lines for t in agent.tools} == {7}


def test_a_missing_local_model_file_is_a_warning(tmp_path):
    path = write(
        tmp_path, "name: a\nmodel: {provider: local, id: x, connection: {modelPath: m.gguf}}\n"
    )
    (warning,) = load_file(path, check_extras=False).warnings
    assert str(tmp_path / "m.gguf") in warning.message


# -- the model the builder picks ----------------------------------------------------------


def test_raf_model_replaces_the_documents_model(tmp_path):
    path = write(
        tmp_path, "name: a\nmodel: openai:gpt-4o\nsubAgents:\n  - {name: b, model: openai:gpt-4o}\n"
    )
    builder = DeclAgentBuilder().with_environment({"RAF_MODEL": "ollama:qwen3"})
    agent = builder.from_file(path).build()
    assert agent.leaf_client.inner.model == "qwen3"
    (helper,) = agent.tools
    assert helper.agent.leaf_client.inner.model == "qwen3"


def test_embedded_model_gets_what_it_can_use(tmp_path, monkeypatch):
    from raf.context.compression import CompressionProvider

    path = write(
        tmp_path,
        "name: a\nmodel:\n  provider: local\n  options: {maxTokens: 4096}\n"
        "compression: {kind: sliding_window}\n",
    )
    agent = DeclAgentBuilder().with_environment({}).from_file(path).build()
    assert agent.default_options.max_tokens == 1024
    (compression,) = [p for p in agent.context_providers if isinstance(p, CompressionProvider)]
    assert compression.compact_tool is False  # not declared: not offered to a small model
    other = write(tmp_path, "name: a\nmodel: openai:gpt-4o\ncompression: {kind: sliding_window}\n")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    agent = DeclAgentBuilder().with_environment({}).from_file(other).build()
    (compression,) = [p for p in agent.context_providers if isinstance(p, CompressionProvider)]
    assert compression.compact_tool is True


def test_install_hints_fit_how_raf_was_installed(monkeypatch):
    from raf.core import errors

    checkout = Path(errors.__file__).resolve().parents[3]
    assert errors.install_hint("mcp") == f'pip install -e ".[mcp]" (in {checkout})'
    monkeypatch.setattr(errors, "_checkout", lambda: None)  # installed from a wheel
    assert errors.install_hint("mcp") == 'pip install "raf-agents[mcp]"'
    assert 'pip install "raf-agents[web]"' in str(errors.MissingExtraError("web tools", "web"))


@pytest.mark.parametrize(
    ("text", "module", "where"),
    [
        ("instructions: Hi {{who}}.\ntemplate:\n  variables: {who: you}\n", "pystache", "template"),
        (
            "instructions: Hi.\noutputSchema:\n  properties:\n    - {name: a, kind: string}\n",
            "jsonschema",
            "outputSchema",
        ),
    ],
)
def test_validation_names_the_templates_extra_a_document_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, module: str, where: str
) -> None:
    """`raf validate` said "ok" on a document whose template needed a missing extra, and
    the first run then failed; the check now happens where the other extras are checked."""
    from raf.decl.documents import extras

    real = extras.module_available
    monkeypatch.setattr(extras, "module_available", lambda name: name != module and real(name))
    with pytest.raises(ValidationProblems) as info:
        load_file(write(tmp_path, "name: t\n" + text), check_extras=True)
    message = str(info.value)
    assert where in message and "templates" in message and module in message


def test_a_misspelt_provider_is_named_as_unknown_with_a_suggestion(tmp_path: Path) -> None:
    """`provider: opneai` once said it "needs connection.endpoint", which sent the user
    looking for a URL instead of at the typo."""
    text = "name: a\ninstructions: hi\nmodel:\n  provider: opneai\n  id: gpt-4o\n"
    with pytest.raises(ValidationProblems) as info:
        load_file(write(tmp_path, text), check_extras=False)
    assert "unknown model provider 'opneai': did you mean 'openai'?" in str(info.value)
    plain = "name: a\ninstructions: hi\nmodel:\n  provider: vllm\n  id: m\n"
    with pytest.raises(ValidationProblems, match="needs connection.endpoint"):
        load_file(write(tmp_path, plain), check_extras=False)


LOOPING_OUTPUT = """name: a
model: openai:gpt-4o-mini
outputSchema:
  type: object
  $defs:
    a: {$ref: "#/$defs/b"}
    b: {$ref: "#/$defs/a"}
  properties:
    x: {$ref: "#/$defs/a"}
"""


def test_validate_refuses_an_output_schema_whose_refs_loop_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from raf.cli.main import main
    from raf.decl.check_file import check_file

    path = write(tmp_path, LOOPING_OUTPUT)
    for checked in (check_file(path), check_file(path, for_run=True)):
        (problem,) = checked.problems
        assert (problem.line, problem.column) == (4, 3)
        assert "outputSchema" in str(problem)
        assert "#/$defs/a → #/$defs/b → #/$defs/a" in problem.message
    assert main(["validate", "--no-extras", str(path)]) == 1
    assert "refers to itself without reading anything" in capsys.readouterr().err


def test_validate_refuses_an_output_schema_past_the_limits(tmp_path: Path) -> None:
    from raf.decl.check_file import check_file

    pattern = "a{10001}"
    path = write(
        tmp_path,
        "name: a\nmodel: openai:gpt-4o-mini\noutputSchema:\n  type: object\n"
        f"  properties:\n    x: {{type: string, pattern: '{pattern}'}}\n",
    )
    (problem,) = check_file(path).problems
    assert "limit is 10,000" in problem.message and "#/properties/x/pattern" in problem.message
