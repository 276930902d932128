"""Turns a document's `model` block into a chat client (clients are imported lazily)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.core.options import ChatOptions
from raf.decl.schema import ConnectionDecl, MemoryModelDecl, ModelDecl, ModelOptionsDecl

_PROVIDERS = ("openai", "anthropic", "gemini", "ollama", "openai-compatible", "local")


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
    return resolve(model.id, provider, connection, getattr(model, "model_path", None))


def resolve(
    model_id: str | None, provider: str | None, connection: ConnectionDecl, model_path: str | None
) -> ChatClient:
    """A client through `raf.clients.models.resolve_model`, with the connection's
    endpoint, key, headers and timeout as settings."""
    from raf.clients.models import resolve_model

    path = model_path or connection.model_path
    if provider == "local" or connection.kind == "local" or path:
        local: ChatClient = resolve_model(f"local:{path}" if path else "local")
        return local
    settings: dict[str, Any] = {}
    if connection.api_key is not None:
        settings["api_key"] = connection.api_key.get_secret_value()
    if connection.headers:
        settings["headers"] = {k: v.get_secret_value() for k, v in connection.headers.items()}
    if connection.timeout:
        settings["timeout"] = connection.timeout
    if connection.organization and provider in (None, "openai"):
        settings["organization"] = connection.organization
    name = model_id or ""
    if provider is None and ":" in name and name.split(":", 1)[0] in _PROVIDERS:
        spec = name
    elif provider in ("openai", "anthropic", "gemini", "ollama") or (
        provider is None and not connection.endpoint
    ):
        spec = f"{provider or 'openai'}:{name}"
        if connection.endpoint:
            settings["base_url"] = connection.endpoint
    else:  # any other provider (azure, vllm, llamacpp, …) speaks the OpenAI protocol
        if not connection.endpoint:
            raise ConfigurationError(
                f"model provider {provider!r} needs connection.endpoint (its base URL)"
            )
        spec = f"openai-compatible:{connection.endpoint}:{name}"
    client: ChatClient = resolve_model(spec, **settings)
    return client
