"""`ChatOptions.copy` (made once per run) keeps every field."""

from __future__ import annotations

import dataclasses

from raf import ChatOptions
from raf.core.output import OutputSchema


def test_copy_keeps_every_field() -> None:
    values: dict[str, object] = {
        "model_id": "m",
        "temperature": 0.5,
        "max_tokens": 7,
        "top_p": 0.9,
        "stop": ["x"],
        "seed": 3,
        "tool_choice": "auto",
        "response_format": {"type": "json_object"},
        "output_schema": OutputSchema(name="n", json_schema={"type": "object"}),
        "tools": [],
        "additional": {"a": 1},
    }
    # a new field must be added to `copy()` (and here)
    assert {f.name for f in dataclasses.fields(ChatOptions)} == set(values)
    options = ChatOptions(**values)  # type: ignore[arg-type]
    copied = options.copy()
    assert copied == options and copied is not options
    assert type(copied) is ChatOptions
