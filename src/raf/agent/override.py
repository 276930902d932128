"""Swapping a built agent's model for a while (tests: a document-built agent on a
scripted or test model), the agent's own restored however the block ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from raf.agent.run.client import FunctionInvokingChatClient
from raf.core.chat_client import ChatClient


@contextmanager
def override_model(agent: Any, model: ChatClient | str) -> Iterator[Any]:
    """`agent` (an `Agent`, not imported here: the agent module imports this one) running
    on `model` inside the block (a model string is resolved, unretried)."""
    if isinstance(model, str):
        from raf.clients.models import resolve_model

        model = resolve_model(model, retry=False)
    saved = agent.leaf_client, agent.tool_loop
    agent.leaf_client = model
    agent.tool_loop = FunctionInvokingChatClient(
        model, max_tool_rounds=agent.max_tool_rounds, max_repeated_calls=agent.max_repeated_calls
    )
    try:
        yield agent
    finally:
        agent.leaf_client, agent.tool_loop = saved
