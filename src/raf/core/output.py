"""What a structured answer must look like, as the model clients see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(kw_only=True, slots=True, frozen=True)
class OutputSchema:
    """The JSON Schema the final answer must match; each client asks for it with the
    strongest mechanism its API has (a strict response format, a forced output tool, a
    decoding grammar) and hands the answer back as the JSON text."""

    name: str
    """A short name for the schema (letters, digits, `_` and `-`), as APIs require."""
    json_schema: dict[str, Any] = field(hash=False)
    """Always an object at the root (APIs refuse anything else)."""
    description: str = ""
