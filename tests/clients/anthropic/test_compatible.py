"""`anthropic-compatible:<base_url>:<model>`: the Anthropic client at another server."""

from __future__ import annotations

import pytest

from raf.clients.models import parse_model_spec, resolve_model
from raf.core.errors import ConfigurationError


def test_the_string_names_a_base_url_and_a_model():
    spec = parse_model_spec("anthropic-compatible:http://127.0.0.1:8000/v1:claude:x")
    assert (spec.base_url, spec.model) == ("http://127.0.0.1:8000/v1", "claude:x")
    assert str(spec) == "anthropic-compatible:http://127.0.0.1:8000/v1:claude:x"


def test_it_makes_an_anthropic_client_at_that_url(monkeypatch):
    from raf.clients.anthropic.client import AnthropicChatClient

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    client = resolve_model("anthropic-compatible:http://127.0.0.1:8000:my-model", retry=False)
    assert isinstance(client, AnthropicChatClient)
    assert client.base_url == "http://127.0.0.1:8000" and client.model == "my-model"


def test_a_string_without_a_url_says_how_to_write_it():
    with pytest.raises(ConfigurationError, match="anthropic-compatible:<base_url>:<model>"):
        parse_model_spec("anthropic-compatible:my-model")
