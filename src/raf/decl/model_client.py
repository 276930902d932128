"""Turns a document's `model` block into a chat client (clients are imported lazily)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.core.options import ChatOptions
from raf.decl.schema import ConnectionDecl, MemoryModelDecl, ModelDecl, ModelOptionsDecl

_OPENAI_COMPATIBLE = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY", True),
    "azure": (None, "AZURE_OPENAI_API_KEY", True),
    "ollama": ("http://localhost:11434/v1", "OLLAMA_API_KEY", False),
    "vllm": ("http://localhost:8000/v1", "VLLM_API_KEY", False),
    "llamacpp": ("http://localhost:8080/v1", "LLAMACPP_API_KEY", False),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", True),
}


@dataclass(kw_only=True, slots=True)
class Connection:
    """A connection registered in code with `DeclAgentBuilder.with_connection`."""

    name: str
    client: ChatClient | None = None
    endpoint: str | None = None
    api_key: str | None = field(default=None, repr=False)
    provider: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def chat_options(options: ModelOptionsDecl, model_id: str | None) -> ChatOptions:
    """The default `ChatOptions` a model block describes."""
    return ChatOptions(
        model_id=model_id,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        top_p=options.top_p,
        stop=list(options.stop) if options.stop else None,
        seed=options.seed,
        tool_choice=options.tool_choice,
        response_format=options.response_format,
        additional=dict(options.additional),
    )


def client_for(
    model: ModelDecl | MemoryModelDecl | str | None, connections: Mapping[str, Connection]
) -> ChatClient:
    """The chat client a model declaration names; None means the default model."""
    if model is None or isinstance(model, str):
        from raf.clients.models import resolve_model

        default: ChatClient = resolve_model(model) if model else resolve_model()
        return default
    connection = model.connection or ConnectionDecl()
    provider = (model.provider or "").lower() or None
    if connection.kind == "reference":
        registered = connections.get(connection.name or "")
        if registered is None:
            known = ", ".join(sorted(connections)) or "none"
            raise ConfigurationError(
                f"connection {connection.name!r} is not registered: call "
                f"with_connection({connection.name!r}, ...) (registered: {known})"
            )
        if registered.client is not None:
            return registered.client
        connection = ConnectionDecl(
            kind="key",
            endpoint=registered.endpoint,
            api_key=registered.api_key,  # type: ignore[arg-type]
        )
        provider = provider or registered.provider
    model_id = model.id
    model_path = getattr(model, "model_path", None) or connection.model_path
    if provider == "local" or connection.kind == "local" or model_path:
        from raf.clients.models import resolve_model

        spec = f"local/{model_path or model_id or ''}".rstrip("/")
        local: ChatClient = resolve_model(spec)
        return local
    api_key = connection.api_key.get_secret_value() if connection.api_key else None
    headers = {k: v.get_secret_value() for k, v in connection.headers.items()} or None
    if provider == "anthropic":
        from raf.clients.anthropic_client import AnthropicChatClient

        anthropic: ChatClient = AnthropicChatClient(
            model_id or "claude-sonnet-4-5",
            api_key=api_key,
            base_url=connection.endpoint,
            headers=headers,
        )
        if connection.timeout:
            anthropic.timeout = connection.timeout  # type: ignore[attr-defined]
        return anthropic
    if provider in _OPENAI_COMPATIBLE or (provider is None and connection.endpoint):
        from raf.clients.openai_compat import OpenAIChatClient

        default_url, key_env, require_key = _OPENAI_COMPATIBLE[provider or "openai"]
        openai: ChatClient = OpenAIChatClient(
            model_id or "gpt-4o-mini",
            api_key=api_key,
            base_url=connection.endpoint or default_url,
            headers=headers,
            organization=connection.organization,
            provider=provider or "openai",
            api_key_env=key_env,
            require_key=require_key and connection.kind != "anonymous",
            timeout=connection.timeout or 120.0,
        )
        return openai
    from raf.clients.models import resolve_model

    named = f"{provider}/{model_id}" if provider and model_id else (model_id or provider)
    resolved: ChatClient = resolve_model(named) if named else resolve_model()
    return resolved
