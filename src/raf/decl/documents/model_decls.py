"""The `model` block of a document: which model, how to connect, default options."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from raf.decl.documents.base import MAX_INT64, MAX_SIZE, DeclModel


class ConnectionDecl(DeclModel):
    """How to reach the model: a key, no key, or a connection registered in code."""

    kind: Literal["key", "anonymous", "reference", "local"] = "key"
    endpoint: str | None = None
    api_key: SecretStr | None = None
    name: str | None = Field(
        default=None, description="for kind: reference, the name given to with_connection()"
    )
    api_version: str | None = None
    organization: str | None = None
    deployment: str | None = None
    model_path: str | None = Field(default=None, description="for local models: a GGUF file")
    timeout: float | None = Field(default=None, gt=0)
    headers: dict[str, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _reference_has_name(self) -> ConnectionDecl:
        # a reference without a name is the one connection registered in code (or the
        # one registered as "default")
        if self.kind == "reference" and self.name is not None and not self.name:
            raise ValueError("a connection of kind 'reference' needs a non-empty 'name'")
        return self


class ModelOptionsDecl(DeclModel):
    """Default settings of every model call."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0, le=MAX_SIZE)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(
        default=None, gt=0, le=MAX_SIZE, description="sent as the provider's top_k"
    )
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    stop: list[str] | None = None
    seed: int | None = Field(default=None, ge=-MAX_INT64 - 1, le=MAX_INT64)
    tool_choice: str | None = None
    allow_multiple_tool_calls: bool | None = Field(
        default=None, description="let the model call several tools in one turn"
    )
    response_format: dict[str, Any] | None = None
    additional: dict[str, Any] = Field(default_factory=dict)


class ModelDecl(DeclModel):
    """The model: `id`, `provider`, how to connect, default options."""

    id: str | None = None
    provider: str | None = Field(
        default=None, description="openai | anthropic | azure | ollama | local | ..."
    )
    api_type: Literal["chat", "responses"] | None = Field(
        default=None,
        description="responses: OpenAI's Responses API (hosted tools, reasoning kept across "
        "turns); chat (the default): chat completions",
    )
    connection: ConnectionDecl | None = None
    options: ModelOptionsDecl = Field(default_factory=ModelOptionsDecl)

    @field_validator("api_type", mode="before")
    @classmethod
    def _api_type_in_any_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value
