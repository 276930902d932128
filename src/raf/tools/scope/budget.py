"""What one call of a built-in tool may spend: declared per tool, enforced by the tool."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True, slots=True)
class CallBudget:
    """Wall time, memory and result size one call may use; past it the call answers with
    an error naming the budget instead of running on or growing the process."""

    wall_s: float = 120.0
    """Seconds before the call answers (file tools also stop their own walks earlier)."""
    memory_bytes: int = 1 << 30
    """Memory the call may take: an rlimit for subprocesses, per-file caps in-process."""
    output_bytes: int = 2_000_000
    """Largest result (as JSON) handed back to the model."""


def result_size(value: Any) -> int:
    """The size of a tool result as the model will receive it (JSON, UTF-8)."""
    try:
        return len(json.dumps(value, default=str, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):
        return len(str(value).encode("utf-8", errors="replace"))
