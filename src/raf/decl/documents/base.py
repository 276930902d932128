"""The base of every document model and the constants the document models share."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

SECRET_KEYS = frozenset({"apiKey", "key", "token", "password", "secret", "headers", "env"})
"""Keys whose values are never shown in an error message."""

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

MAX_COUNT = 1_000_000
"""The most rounds, turns, iterations, calls or requests a document may allow: a run
that needs more never ends in practice, and a larger number is a typo."""

MAX_SIZE = 2**31 - 1
"""The largest token, character or result count: what providers' APIs take (32 bits)."""

MAX_INT64 = 2**63 - 1
"""Seeds and usage totals: a signed 64-bit number, the widest providers and stores take."""


class DeclModel(BaseModel):
    """Base of every document model: camelCase keys, unknown keys are errors."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=False,
    )
