"""Reading server-sent events from an httpx stream, as a client does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


def events(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """(event name, parsed data) for each event, as they arrive."""
    name = "message"
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if data:
        yield name, json.loads("\n".join(data))
