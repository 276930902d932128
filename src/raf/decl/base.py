"""The base of every document model and the constants the document models share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

SECRET_KEYS = frozenset({"apiKey", "key", "token", "password", "secret", "headers", "env"})
"""Keys whose values are never shown in an error message."""

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class DeclModel(BaseModel):
    """Base of every document model: camelCase keys, unknown keys are errors."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=False,
    )
