"""What the provider clients' tests share: a one-pixel PNG to attach and a weather tool
for the model to call."""

from __future__ import annotations

import base64

from raf.core.function_tool import tool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A valid 1×1 PNG."""


@tool
def get_weather(city: str) -> str:
    """Weather of a city.

    Args:
        city: the city
    """
    return f"sunny in {city}"
