"""`raf ask`'s terminal output: a notice raf gives while the answer streams (a local
model stopped for repeating itself) starts a line of its own, never glued to the text."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, FinishReason, UpdateKind


class WarnsMidAnswer:
    """Streams an answer and, halfway, warns on raf's logger as the local model does."""

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        raise AssertionError("raf ask streams")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m", text="It was")
        logging.getLogger("raf.clients.local.repeats").warning("stopped: it repeated itself")
        yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m", text=" dark.")
        yield AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=FinishReason.STOP)


def test_a_warning_while_the_answer_streams_gets_a_line_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import raf.cli._agents
    from raf.cli.ask import _ask

    terminal = io.StringIO()  # one screen: stdout and stderr in the order they came
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    client: Any = WarnsMidAnswer()
    monkeypatch.setattr(raf.cli._agents, "resolve_client", lambda spec: client)
    assert asyncio.run(_ask("a story", "stub", 64)) == 0
    assert terminal.getvalue() == "It was\nstopped: it repeated itself\n dark.\n"
