"""A document's model block names the chat client: here, a Gemini model."""

from __future__ import annotations

import pytest

from raf.clients.gemini.client import GeminiChatClient
from raf.clients.retry import RetryingChatClient
from raf.decl.agent.model_client import client_for
from raf.decl.documents.schema import ModelDecl


def test_provider_gemini_with_its_key_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    block = ModelDecl.model_validate(
        {
            "id": "gemini-2.5-flash",
            "provider": "gemini",
            "connection": {
                "kind": "key",
                "endpoint": "http://127.0.0.1:9/v1beta/openai/",
                "apiKey": "AIza-from-yaml-0123456789",
            },
        }
    )
    client = client_for(block, {})
    assert isinstance(client, RetryingChatClient)
    inner = client.inner
    assert isinstance(inner, GeminiChatClient) and inner.model == "gemini-2.5-flash"
    assert inner.base_url == "http://127.0.0.1:9/v1beta/openai/"
    assert "AIza-from-yaml" not in repr(client)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-env-0123456789")
    spelled = client_for(ModelDecl.model_validate({"id": "gemini:gemini-2.0-flash"}), {})
    assert isinstance(spelled, RetryingChatClient)
    assert isinstance(spelled.inner, GeminiChatClient)
    assert spelled.inner.model == "gemini-2.0-flash"
