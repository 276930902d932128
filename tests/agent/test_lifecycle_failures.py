"""When hooks fail: every provider's on_invoked still runs, and providers that already
ran on_invoking hear about a later provider's failure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from raf import AgentBuilder, AgentResponse, AgentSession, ChatMessage, ContextResult
from raf.core.errors import ProviderError
from raf.testing import ScriptedChatClient
from tests.agent.helpers import RecordingProvider


class FailingInvoked(RecordingProvider):
    """Records like its parent, then raises from on_invoked."""

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        await super().on_invoked(agent, session, request_messages, response, error)
        raise RuntimeError(f"{self.name} cannot store")


class FailingInvoking(RecordingProvider):
    """Records like its parent, then raises from on_invoking."""

    async def on_invoking(self, *args: Any) -> ContextResult:
        await super().on_invoking(*args)
        raise RuntimeError(f"{self.name} is down")


def _agent(*providers: RecordingProvider, replies: int = 1) -> Any:
    builder = AgentBuilder().with_chat_client(ScriptedChatClient(["ok"] * replies))
    for provider in providers:
        builder = builder.with_context_provider(provider)
    return builder.build()


async def test_a_failing_on_invoked_does_not_skip_the_providers_after_it() -> None:
    log: list[str] = []
    first = RecordingProvider("first", ContextResult(), log)
    second = FailingInvoked("second", ContextResult(), log)
    third = FailingInvoked("third", ContextResult(), log)
    agent = _agent(first, second, third)
    with pytest.raises(ProviderError, match="'third' failed: third cannot store"):
        await agent.run("hi")
    assert log[-3:] == ["invoked:third", "invoked:second", "invoked:first"]
    assert len(first.invoked_with) == 1
    response, error = first.invoked_with[0]
    assert response is not None and response.text == "ok" and error is None


async def test_providers_already_run_hear_of_a_later_on_invoking_failure() -> None:
    log: list[str] = []
    first = RecordingProvider("first", ContextResult(), log)
    second = RecordingProvider("second", ContextResult(), log)
    broken = FailingInvoking("broken", ContextResult(), log)
    last = RecordingProvider("last", ContextResult(), log)
    agent = _agent(first, second, broken, last)
    with pytest.raises(RuntimeError, match="broken is down") as caught:
        await agent.run("hi")
    assert log == [
        "invoking:first",
        "invoking:second",
        "invoking:broken",
        "invoked:second",
        "invoked:first",
    ]
    assert first.invoked_with == [(None, caught.value)]
    assert second.invoked_with == [(None, caught.value)]
    assert broken.invoked_with == [] and last.invoked_with == []


async def test_a_failing_on_invoked_after_a_failed_on_invoking_keeps_the_first_error() -> None:
    log: list[str] = []
    first = RecordingProvider("first", ContextResult(), log)
    second = FailingInvoked("second", ContextResult(), log)
    broken = FailingInvoking("broken", ContextResult(), log)
    agent = _agent(first, second, broken)
    with pytest.raises(RuntimeError, match="broken is down"):
        await agent.run("hi")
    assert log[-2:] == ["invoked:second", "invoked:first"]
