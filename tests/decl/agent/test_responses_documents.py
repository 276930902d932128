"""Documents on OpenAI's Responses API: `apiType: Responses` (MAF's spelling, any case,
also among the options) picks the Responses client, MAF's hosted tool kinds and raf's
`kind: hosted` reach the API as its tool objects, and the other new providers plan to
their own clients. Run against the loopback Responses server of tests/clients/
responses_peer.py (written from OpenAI's documentation; no official server runs offline)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from raf.clients.openai.responses import OpenAIResponsesClient
from raf.core.errors import ValidationProblems
from raf.core.responses import UpdateKind
from raf.decl import DeclAgentBuilder
from raf.decl.documents.loader import load
from raf.decl.documents.model_plan import plan
from raf.decl.documents.schema import ConnectionDecl, HostedToolDecl
from tests.clients.responses_peer import ResponsesPeer


@pytest.fixture
def peer() -> Iterator[ResponsesPeer]:
    with ResponsesPeer() as server:
        yield server


MAF_AGENT = """kind: Prompt
name: Researcher
instructions: Look things up before you answer.
model:
  id: gpt-4.1-mini
  provider: OpenAI
  options:
    apiType: {api_type}
  connection:
    kind: key
    endpoint: {url}
    apiKey: {key}
tools:
  - kind: web_search
    name: web_search
    searchContextSize: low
  - kind: file_search
    vectorStoreIds: [vs_notes]
    maximumResultCount: 3
  - kind: code_interpreter
"""


@pytest.mark.parametrize("api_type", ["Responses", "responses", "RESPONSES"])
async def test_maf_document_runs_on_the_responses_api_with_its_hosted_tools(
    peer: ResponsesPeer, api_type: str
) -> None:
    text = MAF_AGENT.format(api_type=api_type, url=peer.url, key=peer.key)
    loaded = load(text, check_extras=False)
    assert not [w for w in loaded.warnings if "apiType" in str(w)]
    agent = DeclAgentBuilder().from_yaml_str(text).build()
    try:
        assert isinstance(getattr(agent.leaf_client, "inner", None), OpenAIResponsesClient)
        updates = [u async for u in agent.run_stream("use web_search and use file_search")]
    finally:
        await agent.aclose()
    called = [u.tool_name for u in updates if u.kind is UpdateKind.TOOL_CALLED]
    assert called == ["web_search", "file_search"]
    (request,) = peer.requests  # raf ran neither tool itself
    assert request["model"] == "gpt-4.1-mini"
    assert request["instructions"] or request["input"][0]["role"] in ("system", "developer")
    assert request["tools"] == [
        {"type": "web_search", "search_context_size": "low"},
        {"type": "file_search", "vector_store_ids": ["vs_notes"], "max_num_results": 3},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ]


async def test_raf_dialect_hosted_tool_beside_a_function_tool(peer: ResponsesPeer) -> None:
    text = f"""name: docs
instructions: Answer from the documentation.
model:
  id: openai-responses:gpt-5
  connection: {{endpoint: {peer.url}, apiKey: {peer.key}}}
tools:
  - kind: hosted
    type: mcp
    config:
      server_label: docs
      server_url: https://mcp.example.com/sse
      require_approval: never
      allowed_tools: [lookup]
"""
    (tool,) = load(text, check_extras=False).decl.tools
    assert isinstance(tool, HostedToolDecl)
    agent = DeclAgentBuilder().from_yaml_str(text).build()
    try:
        answer = await agent.run("use mcp please")
    finally:
        await agent.aclose()
    assert "You said: use mcp please" in answer.text
    assert peer.requests[0]["tools"] == [
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://mcp.example.com/sse",
            "require_approval": "never",
            "allowed_tools": ["lookup"],
        }
    ]


def test_a_hosted_tool_on_a_chat_completions_model_is_a_located_error() -> None:
    text = (
        "name: a\ninstructions: hi\nmodel: {id: gpt-4o, provider: openai}\n"
        "tools:\n  - kind: hosted\n    type: web_search\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        load(text, check_extras=False)
    (problem,) = caught.value.problems
    assert problem.key_path == "tools[0].kind" and problem.line == 5
    assert "Responses API" in problem.message and "apiType: Responses" in problem.message


def test_maf_hosted_kinds_off_the_responses_api_keep_what_they_did() -> None:
    text = (
        "kind: Prompt\nname: a\nmodel: {id: gpt-4o, provider: OpenAI, apiType: Chat}\n"
        "tools:\n  - {kind: code_interpreter}\n  - {kind: file_search, vectorStoreIds: [v]}\n"
    )
    loaded = load(text, check_extras=False)
    assert [t.kind for t in loaded.decl.tools] == ["code"]  # raf's own sandbox
    (warning,) = loaded.warnings
    assert warning.key_path == "tools[1].kind" and "apiType: Responses" in warning.message


def test_a_hosted_tool_missing_what_the_api_needs_is_named_at_its_place() -> None:
    text = (
        "name: a\ninstructions: hi\nmodel: openai-responses:gpt-5\n"
        "tools:\n  - kind: hosted\n    type: file_search\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        load(text, check_extras=False)
    assert "'vector_store_ids'" in str(caught.value)
    assert caught.value.problems[0].key_path.startswith("tools[0]")  # type: ignore[union-attr]


def test_api_type_responses_on_another_provider_is_a_problem() -> None:
    text = (
        "name: a\ninstructions: hi\n"
        "model: {id: claude-x, provider: anthropic, apiType: Responses}\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        load(text, check_extras=False)
    (problem,) = caught.value.problems
    assert problem.key_path == "model" and "'anthropic' does not speak it" in problem.message


def test_assistants_api_type_is_still_dropped_with_a_warning() -> None:
    text = "kind: Prompt\nname: a\nmodel: {id: gpt-4o, apiType: Assistants}\n"
    (warning,) = load(text, check_extras=False).warnings
    assert "'Assistants'" in warning.message and "Responses" in warning.message


@pytest.mark.parametrize(
    ("model_id", "provider", "connection", "api_type", "expected"),
    [
        ("gpt-5", None, {}, "responses", ("openai-responses:gpt-5", {})),
        ("openai:gpt-5", None, {}, "Responses", ("openai-responses:gpt-5", {})),
        ("gpt-5", "openai-responses", {}, None, ("openai-responses:gpt-5", {})),
        (
            "qwen3:8b",
            "ollama-native",
            {"endpoint": "http://127.0.0.1:1"},
            None,
            ("ollama-native:qwen3:8b", {"base_url": "http://127.0.0.1:1"}),
        ),
        ("gemini-2.5-flash", "gemini-native", {}, None, ("gemini-native:gemini-2.5-flash", {})),
        (
            "anthropic.claude-3:0",
            "bedrock",
            {"endpoint": "http://127.0.0.1:2"},
            None,
            ("bedrock:anthropic.claude-3:0", {"endpoint_url": "http://127.0.0.1:2"}),
        ),
        (
            "gpt-4o",
            "azure",
            {"endpoint": "https://r.openai.azure.com", "deployment": "prod", "apiVersion": "v"},
            None,
            ("azure:prod", {"endpoint": "https://r.openai.azure.com", "api_version": "v"}),
        ),
        ("bedrock:amazon.nova-pro-v1:0", None, {}, None, ("bedrock:amazon.nova-pro-v1:0", {})),
    ],
)
def test_new_providers_plan_to_their_own_clients(
    model_id: str,
    provider: str | None,
    connection: dict[str, str],
    api_type: str | None,
    expected: tuple[str, dict[str, str]],
) -> None:
    decl = ConnectionDecl.model_validate(connection)
    assert plan(model_id, provider, decl, None, api_type=api_type) == expected


def test_bedrock_refuses_an_api_key_with_the_reason() -> None:
    text = (
        "name: a\ninstructions: hi\nmodel:\n  id: amazon.nova-pro-v1:0\n  provider: bedrock\n"
        "  connection: {apiKey: k}\n"
    )
    with pytest.raises(ValidationProblems, match="AWS credentials"):
        load(text, check_extras=False)


def test_hosted_tools_convert_to_maf_and_back() -> None:
    from raf.decl.convert import convert

    text = MAF_AGENT.format(api_type="Responses", url="http://127.0.0.1:9/v1", key="k")
    raf = load(text, check_extras=False).doc.data
    maf = convert(raf, "maf")
    assert maf["model"]["apiType"] == "Responses"
    assert maf["tools"] == [
        {"kind": "web_search", "name": "web_search", "searchContextSize": "low"},
        {"kind": "file_search", "vectorStoreIds": ["vs_notes"], "maximumResultCount": 3},
        {"kind": "code_interpreter"},
    ]
    again = load(json.dumps(maf), fmt="json", check_extras=False)
    assert again.decl.tools == load(text, check_extras=False).decl.tools
    # a tool object MAF has no words for stays raf's `kind: hosted`
    mcp = {"kind": "hosted", "type": "mcp", "config": {"server_label": "d", "server_url": "u"}}
    assert convert({"name": "a", "tools": [dict(mcp)]}, "maf")["tools"] == [mcp]


async def test_a_hosted_tool_with_the_client_given_in_code(peer: ResponsesPeer) -> None:
    text = "name: a\ninstructions: hi\ntools:\n  - {kind: hosted, type: web_search}\n"
    client = OpenAIResponsesClient("gpt-5", base_url=peer.url, api_key=peer.key)
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(client).build()
    try:
        await agent.run("use web_search")
    finally:
        await agent.aclose()
    assert peer.requests[0]["tools"] == [{"type": "web_search"}]
