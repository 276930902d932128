"""Which kind of document a parsed one is: an agent or a workflow (both loaders ask,
so neither needs the other to tell)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_workflow_data(data: Any) -> bool:
    """Whether a parsed document is a workflow document rather than an agent document."""
    if not isinstance(data, Mapping):
        return False
    kind = data.get("kind")
    if isinstance(kind, str) and kind.lower() == "workflow":
        return True
    if "nodes" in data and ("edges" in data or "start_node_id" in data):
        return True
    return "actions" in data and "instructions" not in data and "model" not in data
