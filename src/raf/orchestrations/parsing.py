"""Reading a model's structured answer: a JSON object, bare or in a fenced block."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a reply holds (the whole text, a fenced block, or the outermost
    braces), else None."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def answer_of(value: Any) -> Any:
    """A ledger entry's value: `{"answer": x, "reason": …}` or `x` itself."""
    if isinstance(value, dict) and "answer" in value:
        return value["answer"]
    return value


def truthy(value: Any) -> bool:
    """A yes/no field as models write it: true, "true", "yes"."""
    value = answer_of(value)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "y", "1")
    return bool(value)


def name_in(text: str, names: list[str]) -> str | None:
    """The member name a short reply gives: exactly (ignoring case, quotes and a final
    period), else the only name it mentions."""
    cleaned = text.strip().strip("\"'`*.").strip()
    for name in names:
        if cleaned.lower() == name.lower():
            return name
    mentioned = [n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text, re.I)]
    return mentioned[0] if len(mentioned) == 1 else None
