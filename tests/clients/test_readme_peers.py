"""The models guide's examples that need a provider run here against loopback servers
that speak the provider's documented wire format (tests/clients/*_peer.py), with the key
and base URL variables a user would set pointing at them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from azure.core.credentials import AccessToken

from tests.clients.azure_peer import AzurePeer
from tests.clients.bedrock_peer import ACCESS_KEY, SECRET_KEY, BedrockPeer
from tests.clients.gemini_peer import GeminiPeer
from tests.clients.ollama_peer import OllamaPeer
from tests.clients.responses_peer import ResponsesPeer
from tests.test_docs import Block, page_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "models.md"


def _blocks_for(server: str) -> list[Block]:
    found = [
        b
        for b in page_blocks(PAGE)
        if b.lang == "python" and "test_readme_peers.py" in b.mark and server in b.mark
    ]
    assert found, f"docs/guide/models.md has no example marked to run against the {server}"
    return found


def _run(block: Block) -> None:
    namespace: dict[str, object] = {"__name__": "__docs__"}
    exec(compile(block.code, f"docs/guide/models.md:{block.line}", "exec"), namespace)


def _renamed(block: Block, model: str, peer_model: str) -> Block:
    """The block with the model the peer serves in place of the one a user pulls."""
    assert model in block.code
    return replace(block, code=block.code.replace(model, peer_model))


def test_responses_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ResponsesPeer() as peer:
        monkeypatch.setenv("OPENAI_BASE_URL", peer.url)
        monkeypatch.setenv("OPENAI_API_KEY", peer.key)
        for block in _blocks_for("Responses server"):
            _run(block)
        printed = capsys.readouterr().out
        assert "You said: What is the weather in Paris?" in printed
        first, second = peer.requests
        assert {"type": "web_search"} in first["tools"]
        assert first["include"] == ["reasoning.encrypted_content"]
        reasoning = [i for i in second["input"] if i.get("type") == "reasoning"]
        assert reasoning and reasoning[0]["encrypted_content"]
        assert f"I remember my reasoning {reasoning[0]['id']}" in printed


def test_ollama_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with OllamaPeer() as peer:
        monkeypatch.setenv("OLLAMA_HOST", peer.url)
        monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
        for block in _blocks_for("Ollama server"):
            _run(_renamed(block, "qwen3:8b", "qwen-peer"))
        assert "You said: Say hello in French." in capsys.readouterr().out
        sent = peer.requests[0]
        assert sent["keep_alive"] == "30m" and sent["options"]["num_ctx"] == 16_384


def test_azure_example(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """DefaultAzureCredential finds its token in the environment variables a workload
    identity sets; here a client secret would need Entra ID itself, so the credential the
    example makes is replaced by one that hands out a token the peer accepts."""
    import azure.identity.aio

    class LocalCredential:
        async def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
            assert scopes == ("https://cognitiveservices.azure.com/.default",)
            return AccessToken("readme-token", 4_102_444_800)

        async def close(self) -> None:
            return None

        async def __aenter__(self) -> LocalCredential:
            return self

        async def __aexit__(self, *exc: object) -> None:
            return None

    with AzurePeer() as peer:
        peer.tokens.add("readme-token")
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", peer.endpoint)
        monkeypatch.setattr(azure.identity.aio, "DefaultAzureCredential", LocalCredential)
        for block in _blocks_for("Azure OpenAI server"):
            _run(_renamed(block, "my-gpt-4o", AzurePeer.deployments[0]))
        assert "You said: Say hello in Dutch." in capsys.readouterr().out
        assert peer.headers[0]["authorization"] == "Bearer readme-token"


def test_bedrock_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with BedrockPeer() as peer:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", peer.url)
        for block in _blocks_for("Bedrock server"):
            _run(
                _renamed(block, "us.anthropic.claude-sonnet-4-20250514-v1:0", BedrockPeer.models[0])
            )
        assert "You said: Say hello in Norwegian." in capsys.readouterr().out
        assert len(peer.requests) == 1


def test_gemini_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with GeminiPeer() as peer:
        monkeypatch.setenv("GEMINI_API_KEY", peer.key)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", peer.url)
        for block in _blocks_for("Gemini server"):
            _run(_renamed(block, "gemini-2.5-flash", GeminiPeer.models[0]))
        printed = capsys.readouterr().out
        assert "You said: Say hello in Swahili." in printed
        assert "Searched: Who won the 2024 Tour de France?\nsources: example.org\n" in printed
        assert {"googleSearch": {}} in peer.requests[1]["tools"]
        sent = peer.requests[0]
        assert sent["generationConfig"]["thinkingConfig"]["thinking_budget"] == 1024
        assert sent["safetySettings"][0]["threshold"] == "BLOCK_ONLY_HIGH"
