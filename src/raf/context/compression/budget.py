"""The input budget of a model: its context window less its maximum output and a margin."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from raf.core.errors import ConfigurationError

log = logging.getLogger("raf.context.compression")

DEFAULT_BUDGET = 24_000
"""Used when neither a budget nor the model's metadata is known."""


class CompressionSettingError(ConfigurationError, ValueError):
    """A compression setting out of range or of the wrong type (a ValueError too, as
    before)."""


def check_count(name: str, value: object, *, minimum: int = 0) -> int:
    """`value` as a whole number of at least `minimum`, else CompressionSettingError."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CompressionSettingError(
            f"{name} must be a whole number of at least {minimum}, not {value!r}"
        )
    return value


def _field(info: Any, *names: str) -> int | None:
    for name in names:
        value = info.get(name) if isinstance(info, Mapping) else getattr(info, name, None)
        if value is not None:
            return int(value)
    return None


def input_budget(
    model_info: Any = None,
    *,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
    margin: int | None = None,
) -> int:
    """Tokens a request may hold: context window − max output − margin.

    `model_info` is any object or mapping with `context_window` and `max_output_tokens`
    (for example what `raf.clients.models.model_info` returns); explicit numbers win.
    The default margin is 5% of the window (at least 512 tokens) for the system prompt,
    tool definitions and the turn in progress.
    """
    window = context_window
    output = max_output_tokens
    if model_info is not None:
        window = window if window is not None else _field(model_info, "context_window")
        output = (
            output if output is not None else _field(model_info, "max_output_tokens", "max_output")
        )
    if window is None or window <= 0:
        raise ConfigurationError("the model's context window is unknown; give a budget")
    margin = margin if margin is not None else max(512, window // 20)
    budget = window - (output or 0) - margin
    if budget <= 0:
        raise ConfigurationError(
            f"no room for input: context window {window} − max output {output or 0} − "
            f"margin {margin} = {budget}"
        )
    return budget


def budget_for_model(model_id: str | None) -> int | None:
    """The input budget of a model named by id (`openai:gpt-4o`, or a bare model name),
    from `raf.clients.models` when present."""
    if not model_id:
        return None
    try:
        module = importlib.import_module("raf.clients.models")
    except ImportError:
        return None
    specs = [model_id] if ":" in model_id else [model_id, f"openai:{model_id}"]
    for spec in specs:
        try:
            return input_budget(module.model_info(spec))
        except Exception as exc:  # unknown spec form or incomplete metadata
            log.debug("no model metadata for %r: %s", spec, exc)
    return None
