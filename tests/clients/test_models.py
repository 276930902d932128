"""Model strings, RAF_MODEL and model metadata."""

from __future__ import annotations

import pytest

from raf.clients.anthropic.client import AnthropicChatClient
from raf.clients.local.client import LocalChatClient
from raf.clients.models import (
    ModelInfo,
    ModelSpec,
    model_info,
    parse_model_spec,
    register_model_info,
    resolve_model,
)
from raf.clients.openai.client import OpenAIChatClient
from raf.clients.retry import RetryingChatClient
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from tests.clients.conftest import KATAN_MODEL
from tests.clients.faultserver import FaultServer, Reply, completion


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai:gpt-4o-mini", ModelSpec(provider="openai", model="gpt-4o-mini")),
        ("anthropic:claude-sonnet-4-5", ModelSpec(provider="anthropic", model="claude-sonnet-4-5")),
        (
            "ollama:qwen3:8b",
            ModelSpec(provider="ollama", model="qwen3:8b", base_url="http://127.0.0.1:11434/v1"),
        ),
        (
            "openai-compatible:http://127.0.0.1:8000/v1:qwen3:8b",
            ModelSpec(
                provider="openai-compatible", model="qwen3:8b", base_url="http://127.0.0.1:8000/v1"
            ),
        ),
        (
            "openai-compatible:https://api.example.com:my-model",
            ModelSpec(
                provider="openai-compatible", model="my-model", base_url="https://api.example.com"
            ),
        ),
        ("local", ModelSpec(provider="local", model="local")),
        (
            "local:/models/x.gguf",
            ModelSpec(provider="local", model="local", path="/models/x.gguf"),
        ),
    ],
)
def test_parses_model_strings(text: str, expected: ModelSpec) -> None:
    monkey_free = parse_model_spec(text)
    assert monkey_free == expected
    assert parse_model_spec(str(monkey_free)) == expected


def test_raf_model_decides_and_local_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAF_MODEL", raising=False)
    assert parse_model_spec().provider == "local"
    # A key alone does not choose the provider (decision 0306).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000")
    assert parse_model_spec().provider == "local"
    assert isinstance(resolve_model(), LocalChatClient)
    monkeypatch.setenv("RAF_MODEL", "  ")
    assert parse_model_spec().provider == "local"
    monkeypatch.setenv("RAF_MODEL", "ollama:llama3.2")
    assert parse_model_spec() == ModelSpec(
        provider="ollama", model="llama3.2", base_url="http://127.0.0.1:11434/v1"
    )
    assert parse_model_spec("local").provider == "local"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("gpu-box:8080", "http://gpu-box:8080/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:443/v1"),
        ("http://10.0.0.5:11434/", "http://10.0.0.5:11434/v1"),
    ],
)
def test_ollama_follows_ollama_host(monkeypatch: pytest.MonkeyPatch, host: str, url: str) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert parse_model_spec("ollama:qwen3:8b").base_url == url
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://elsewhere:1/v1")
    assert parse_model_spec("ollama:qwen3:8b").base_url == "http://elsewhere:1/v1"


@pytest.mark.parametrize("bad", ["gpt-4o", "openai:", "mistral:x", "openai-compatible:localhost:m"])
def test_bad_model_strings_show_the_forms(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="openai"):
        parse_model_spec(bad)


@pytest.mark.parametrize(
    ("bad", "advice"),
    [
        ("ollama:", "names no model; write ollama:<model>, for example ollama:qwen3:8b"),
        ("opena:gpt-4o", "did you mean openai:gpt-4o?"),
        ("antropic:claude-sonnet-4-5", "did you mean anthropic:claude-sonnet-4-5?"),
        ("gpt-4o", "did you mean openai:gpt-4o?"),
        ("o3-mini", "did you mean openai:o3-mini?"),
        ("claude", "did you mean anthropic:claude-sonnet-4-5? write anthropic:<model>"),
        ("claude-3-5-haiku-latest", "did you mean anthropic:claude-3-5-haiku-latest?"),
        ("gemini-2.5-pro", "did you mean gemini:gemini-2.5-pro?"),
        ("llama3.2", "for example ollama:llama3.2 for a model Ollama serves"),
    ],
)
def test_bad_model_strings_get_pointed_advice(bad: str, advice: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_model_spec(bad)
    assert advice in str(info.value)


def test_a_bad_raf_model_is_named_as_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ("gpt-4o", "openai-compatible:localhost:8000:m", "ollama:"):
        monkeypatch.setenv("RAF_MODEL", bad)
        with pytest.raises(ConfigurationError, match="RAF_MODEL"):
            parse_model_spec()


def test_model_info_table_prefixes_defaults_and_overrides() -> None:
    assert model_info("openai:gpt-4o-mini").context_window == 128_000
    assert model_info("openai:gpt-4o-mini-2024-07-18").max_output_tokens == 16_384
    assert model_info("anthropic:claude-sonnet-4-5").context_window == 200_000
    assert model_info("ollama:qwen3:8b").context_window == 40_960
    assert model_info("anthropic:claude-3-5-sonnet-20241022").context_window == 200_000
    assert model_info("openai:gpt-4-0613").context_window == 8_192
    assert model_info("openai:gpt-4o-2024-08-06").context_window == 128_000  # longest wins
    assert model_info("ollama:llama3.1:8b").context_window == 131_072
    assert model_info("local").context_window == 4096
    assert model_info("local:/models/Qwen3-0.6B-Q4_K_M.gguf").context_window == 40_960
    unknown = model_info("openai-compatible:http://h:1/v1:mystery")
    assert not unknown.known and unknown.context_window == 8192
    assert model_info("openai:gpt-4o", context_window=1000).context_window == 1000
    register_model_info("mystery", ModelInfo(context_window=32_000, max_output_tokens=4000))
    assert model_info("openai-compatible:http://h:1/v1:mystery").context_window == 32_000


def test_resolve_builds_the_right_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000")
    openai = resolve_model("openai:gpt-4o-mini")
    assert isinstance(openai, RetryingChatClient) and isinstance(openai.inner, OpenAIChatClient)
    ollama = resolve_model("ollama:qwen3:8b", retry=False)
    assert isinstance(ollama, OpenAIChatClient) and ollama.model == "qwen3:8b"
    assert ollama.max_tokens_field == "max_tokens"
    assert isinstance(openai.inner, OpenAIChatClient)
    assert openai.inner.max_tokens_field == "max_completion_tokens"
    assert "11434" in str(ollama.base_url) and ollama.provider == "ollama"
    claude = resolve_model("anthropic:claude-sonnet-4-5", retry=False)
    assert isinstance(claude, AnthropicChatClient) and claude.max_tokens == 8192
    local = resolve_model("local:/m/x.gguf")
    assert isinstance(local, LocalChatClient) and local.model == "x"
    monkeypatch.setenv("RAF_MODEL", "local")
    assert isinstance(resolve_model(), LocalChatClient)


def test_settings_a_client_does_not_take_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000")
    with pytest.raises(ConfigurationError, match=r"LocalChatClient takes no setting 'timeout'.*"):
        resolve_model("local", timeout=30)
    with pytest.raises(ConfigurationError, match="takes no setting 'max_token'.*max_tokens"):
        resolve_model("anthropic:claude-sonnet-4-5", api_key="sk-ant-x", max_token=5)
    with pytest.raises(ConfigurationError, match="'provider'"):
        resolve_model("ollama:qwen3:8b", provider="x")
    client = resolve_model("ollama:qwen3:8b", retry=False, timeout=5, headers={"X-A": "b"})
    assert isinstance(client, OpenAIChatClient) and client.timeout == 5


async def test_ollama_is_never_sent_the_openai_key(
    fault: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-PRIVATE-0000000000")
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.setenv("OLLAMA_BASE_URL", f"{fault.url}/v1")
    fault.reply(Reply(json_body=completion("hi")))
    client = resolve_model("ollama:qwen3:8b", retry=False)
    assert (await client.get_response([ChatMessage.user("x")], ChatOptions())).text == "hi"
    assert "PRIVATE" not in str(fault.seen[-1].headers)
    monkeypatch.setenv("OLLAMA_API_KEY", "ollama-cloud-key-123")
    other = resolve_model("ollama:qwen3:8b", retry=False)
    await other.get_response([ChatMessage.user("x")], ChatOptions())
    assert fault.seen[-1].headers["authorization"] == "Bearer ollama-cloud-key-123"
    for each in (client, other):
        await each.aclose()  # type: ignore[attr-defined]


async def test_resolved_compatible_server_answers(
    katan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-katan-0000000000")
    monkeypatch.setenv("RAF_MODEL", f"openai-compatible:{katan}/v1:{KATAN_MODEL}")
    client = resolve_model()
    response = await client.get_response([ChatMessage.user("via RAF_MODEL")], ChatOptions())
    assert "via RAF_MODEL" in response.text
    assert isinstance(client, RetryingChatClient)
    await client.aclose()
