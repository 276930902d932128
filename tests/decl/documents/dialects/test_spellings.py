"""Each other spelling is read with its meaning (one document fragment per spelling), and
`raf schema` lists it beside raf's key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from raf.decl import load_file
from raf.decl.documents.schema import json_schema

SPELLINGS: list[tuple[str, str, Callable[[Any], Any], Any]] = [
    (
        "openapi specUrl and operationId at the tool's top level",
        "tools:\n  - {kind: openapi, name: pets, specUrl: api.yaml, operationId: getPet}\n",
        lambda d: (d.tools[0].config.spec_url, d.tools[0].config.operations),
        ("api.yaml", ["getPet"]),
    ),
    (
        "knowledge source",
        "contexts:\n  - {kind: knowledge, config: {source: docs}}\n",
        lambda d: d.contexts[0].config.sources,
        ["docs"],
    ),
    (
        "wiki source",
        "contexts:\n  - {kind: wiki, config: {source: wiki}}\n",
        lambda d: d.contexts[0].config.directory,
        "wiki",
    ),
    (
        "MCP context serverUrl, and a context without a config block",
        "contexts:\n  - {kind: mcp, name: docs, serverUrl: 'http://127.0.0.1:9/mcp'}\n",
        lambda d: d.contexts[0].config.url,
        "http://127.0.0.1:9/mcp",
    ),
    (
        "memory enabled, directory and curator model beside kind",
        "contexts:\n  - kind: memory\n    enabled: false\n    directory: brain\n"
        "    memoryModel: {provider: llama, modelPath: m.gguf, tokenizerPath: t.json,"
        " useGpu: true}\n",
        lambda d: (
            d.contexts[0].config.enabled,
            d.contexts[0].config.directory,
            d.contexts[0].config.memory_model.provider,
        ),
        (False, "brain", "local"),
    ),
    (
        "connection kind remote",
        "model: {id: m, provider: vllm, connection: {kind: remote, endpoint: 'http://h/v1'}}\n",
        lambda d: (d.model.connection.kind, d.model.connection.endpoint),
        ("key", "http://h/v1"),
    ),
    (
        "template content",
        "template: {format: {kind: Mustache}, content: 'Hi {{who}}', variables: {who: Ada}}\n",
        lambda d: (d.template.format, d.template.content),
        ("mustache", "Hi {{who}}"),
    ),
    (
        "toolResultEvictionThreshold for observation masking",
        "compression: {kind: observationMasking, toolResultEvictionThreshold: 2}\n",
        lambda d: (d.compression.kind, d.compression.keep_last),
        ("observation_masking", 2),
    ),
    (
        "the older format's model block",
        "model: {provider: anthropic, model: claude-x, api_key: k, base_url: 'http://h'}\n",
        lambda d: (
            d.model.id,
            d.model.connection.api_key.get_secret_value(),
            d.model.connection.endpoint,
        ),
        ("claude-x", "k", "http://h"),
    ),
    (
        "MAF hosted code interpreter and web search tools",
        "tools:\n  - {kind: code_interpreter}\n  - {kind: web_search}\n",
        lambda d: [(t.kind, t.name) for t in d.tools],
        [("code", "code_interpreter"), ("web", "web_search")],
    ),
    (
        "MAF approval on a function tool",
        "tools:\n  - {kind: function, name: pay, requireApproval: true}\n",
        lambda d: d.tools[0].approval_required,
        True,
    ),
]


@pytest.mark.parametrize(
    ("text", "read", "expected"), [s[1:] for s in SPELLINGS], ids=[s[0] for s in SPELLINGS]
)
def test_spelling_is_read_with_its_meaning(tmp_path: Path, text: str, read: Any, expected: Any):
    for folder in ("docs", "wiki"):
        (tmp_path / folder).mkdir()
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n"
    )
    path = tmp_path / "agent.yaml"
    path.write_text("name: a\n" + text, encoding="utf-8")
    loaded = load_file(path, check_extras=False)
    assert read(loaded.decl) == expected


def test_hosted_tools_are_left_out_with_a_warning(tmp_path: Path):
    path = tmp_path / "agent.yaml"
    path.write_text(
        "kind: Prompt\nname: a\ntools:\n  - {kind: file_search, vectorStoreIds: [v1]}\n"
        "  - {kind: function, name: f}\n"
    )
    loaded = load_file(path, check_extras=False)
    assert [t.name for t in loaded.decl.tools] == ["f"]
    (warning,) = loaded.warnings
    assert (warning.line, warning.key_path) == (4, "tools[0].kind")
    assert "'file_search'" in warning.message and "knowledge context" in warning.message


def test_ignored_curator_model_keys_are_named(tmp_path: Path):
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\ncontexts:\n  - kind: memory\n    config:\n"
        "      memoryModel: {provider: local, tokenizerPath: t.json, useGpu: true}\n"
    )
    warned = " ".join(w.message for w in load_file(path, check_extras=False).warnings)
    assert "'tokenizerPath'" in warned and "'useGpu'" in warned


def test_raf_schema_lists_both_spellings():
    schema = json_schema()
    options = schema["$defs"]["ModelOptionsDecl"]["properties"]
    assert options["maxOutputTokens"]["description"].endswith("read as 'maxTokens'")
    assert options["maxOutputTokens"]["anyOf"] == options["maxTokens"]["anyOf"]
    assert "requires it" in options["kind"]["description"]
    top = schema["properties"]
    assert "displayName" in top and "outputSchema" in top and "tokenCounter" in top
    assert "config.url" in schema["$defs"]["McpToolDecl"]["properties"]["url"]["description"]


def test_original_compression_type_and_token_counter(tmp_path):
    from raf.decl.documents.loader import load

    loaded = load(
        "name: a\ninstructions: hi\ncompression:\n  type: sliding_window\n"
        "  token_counter: estimate\n  budget: 1000\n"
    )
    assert loaded.decl.compression is not None
    assert loaded.decl.compression.kind == "sliding_window"
    assert loaded.decl.compression.token_counter == "estimate"
    assert not [w for w in loaded.warnings if "compression" in str(w)]


def test_named_provider_takes_its_default_endpoint():
    from raf.decl.documents.model_decls import ConnectionDecl
    from raf.decl.documents.model_plan import plan

    spec, _ = plan("deepseek-chat", "deepseek", ConnectionDecl(), None)
    assert spec == "openai-compatible:https://api.deepseek.com/v1:deepseek-chat"


def test_code_interpreter_default_language():
    from raf.core.errors import ValidationProblems
    from raf.decl.documents.loader import load

    doc = (
        "name: a\ninstructions: hi\ntools:\n  - kind: code_interpreter\n    default_language: {}\n"
    )
    load(doc.format("python"))
    with pytest.raises(ValidationProblems) as caught:
        load(doc.format("javascript"))
    (problem,) = caught.value.problems
    assert problem.line == 5 and "runs Python only" in str(problem)


_TEAM = """name: lead
instructions: lead
metadata:
  orchestration:
{options}
subAgents:
  - name: a
    instructions: a
  - name: b
    instructions: b
"""


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("    mode: groupChat\n    maxIterations: 4", {"mode": "group_chat", "max_rounds": 4}),
        (
            "    mode: roundRobin\n    maxIterations: 2",
            {"mode": "group_chat", "selector": "round_robin", "max_rounds": 2},
        ),
        ("    mode: vote\n    votingRounds: 3", {"mode": "vote", "rounds": 3}),
        ("    mode: vote\n    aggregator: unanimous", {"mode": "vote", "method": "unanimous"}),
        ("    mode: vote\n    aggregator: majority_vote", {"mode": "vote", "method": "majority"}),
        (
            "    mode: pipeline\n    phases:\n      - name: p1\n        agents: [a, b]",
            {"mode": "pipeline"},
        ),
    ],
)
def test_original_orchestration_spellings(options, expected):
    from raf.decl.documents.loader import load

    decl = load(_TEAM.format(options=options)).orchestration
    for key, value in expected.items():
        assert getattr(decl, key) == value
    if decl.mode == "pipeline":
        assert decl.phases[0].members == ["a", "b"]


_PIPELINE_WITH = """name: lead
metadata:
  orchestration:
    mode: pipeline
    phases:
      - name: draft
        agents: [a]
      - name: review
        agents: [b]
        {key}: {value}
subAgents:
  - name: a
    instructions: a
  - name: b
    instructions: b
"""


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("loopFromPhase", "draft", "'loopBack'"),
        ("loop_from_phase", "draft", "'loopBack'"),
    ],
)
def test_original_phase_keys_without_meaning_are_located_warnings(key, value, says):
    from raf.core.errors import ValidationProblems
    from raf.decl.documents.loader import load

    text = _PIPELINE_WITH.format(key=key, value=value)
    loaded = load(text)
    assert [p.name for p in loaded.orchestration.phases] == ["draft", "review"]
    (warning,) = loaded.warnings
    assert (warning.line, warning.key_path) == (10, f"metadata.orchestration.phases[1].{key}")
    assert warning.message.startswith(f"'{key}' is an option of the original framework's")
    assert "raf ignores" in warning.message and says in warning.message
    with pytest.raises(ValidationProblems) as strict:
        load(text, strict=True)
    (problem,) = strict.value.problems
    assert problem.line == 10 and "raf ignores" in problem.message


@pytest.mark.parametrize(
    ("key", "value", "means"), [("passOutput", "false", "task"), ("pass_output", "true", "output")]
)
def test_a_phase_pass_output_is_its_pass_on(key, value, means):
    from raf.decl.documents.loader import load

    loaded = load(_PIPELINE_WITH.format(key=key, value=value))
    assert loaded.orchestration.phases[1].pass_on == means
    assert not loaded.warnings


def test_a_misspelt_phase_key_stays_a_located_error():
    from raf.core.errors import ValidationProblems
    from raf.decl.documents.loader import load

    for key in ("loopFromPhaze", "maxRoundz"):
        with pytest.raises(ValidationProblems) as caught:
            load(_PIPELINE_WITH.format(key=key, value="2"))
        (problem,) = caught.value.problems
        assert (problem.line, problem.key_path) == (10, f"metadata.orchestration.phases[1].{key}")
        assert problem.message.startswith(f"unknown option {key!r}")
