"""Turns a document's `model` block into a chat client: the connections registered in
code, the default chat options, and the client the planned model string resolves to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.core.options import ChatOptions
from raf.decl.documents.model_plan import plan
from raf.decl.documents.schema import ConnectionDecl, MemoryModelDecl, ModelDecl, ModelOptionsDecl


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
    """The default `ChatOptions` a model block describes; settings `ChatOptions` has no
    field for (penalties, top_k, parallel tool calls) travel in `additional`."""
    additional: dict[str, Any] = {}
    for key, value in (
        ("frequency_penalty", options.frequency_penalty),
        ("presence_penalty", options.presence_penalty),
        ("top_k", options.top_k),
        ("parallel_tool_calls", options.allow_multiple_tool_calls),
    ):
        if value is not None:
            additional[key] = value
    return ChatOptions(
        model_id=model_id,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        top_p=options.top_p,
        stop=list(options.stop) if options.stop else None,
        seed=options.seed,
        tool_choice=options.tool_choice,
        response_format=options.response_format,
        additional={**additional, **options.additional},
    )


def client_for(
    model: ModelDecl | MemoryModelDecl | str | None,
    connections: Mapping[str, Connection],
    base_dir: Path | None = None,
) -> ChatClient:
    """The chat client a model declaration names; None means the default model (a local
    model file is found relative to `base_dir`, the document's folder)."""
    if model is None or isinstance(model, str):
        from raf.clients.models import resolve_model

        default: ChatClient = resolve_model(model) if model else resolve_model()
        return default
    connection = model.connection or ConnectionDecl()
    provider = (model.provider or "").lower() or None
    if connection.kind == "reference":
        registered = registered_connection(connections, connection.name)
        if registered is None:
            known = ", ".join(sorted(connections)) or "none"
            name = connection.name or "default"
            raise ConfigurationError(
                f"connection {name!r} is not registered: call "
                f"with_connection({name!r}, ...) (registered: {known})"
            )
        if registered.client is not None:
            return registered.client
        connection = ConnectionDecl(
            kind="key",
            endpoint=registered.endpoint,
            api_key=registered.api_key,  # type: ignore[arg-type]
        )
        provider = provider or registered.provider
    return resolve(
        model.id,
        provider,
        connection,
        getattr(model, "model_path", None),
        base_dir,
        api_type=getattr(model, "api_type", None),
    )


def resolve(
    model_id: str | None,
    provider: str | None,
    connection: ConnectionDecl,
    model_path: str | None,
    base_dir: Path | None = None,
    *,
    api_type: str | None = None,
) -> ChatClient:
    """A client through `raf.clients.models.resolve_model`, with the connection's
    endpoint, key, headers and timeout as settings."""
    from raf.clients.models import resolve_model

    spec, settings = plan(model_id, provider, connection, model_path, base_dir, api_type=api_type)
    client: ChatClient = resolve_model(spec, **settings)
    return client


def registered_connection(
    connections: Mapping[str, Connection], name: str | None
) -> Connection | None:
    """The connection a `kind: reference` names; without a name, the one registered as
    "default", else the only one registered."""
    if name:
        return connections.get(name)
    if "default" in connections:
        return connections["default"]
    return next(iter(connections.values())) if len(connections) == 1 else None
